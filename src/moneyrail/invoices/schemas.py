from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, StringConstraints

from moneyrail.deliveries.recipients import mask
from moneyrail.kit.clock import to_unix
from moneyrail.kit.schemas import Amount, Currency, Metadata, RequestBody, ResourceOut
from moneyrail.models import Invoice, InvoiceDelivery

ObjectId = Annotated[str, StringConstraints(min_length=1, max_length=255)]
LineDescription = Annotated[str, StringConstraints(min_length=1, max_length=500)]
Description = Annotated[str, StringConstraints(max_length=1000)]
ReturnUrl = Annotated[str, StringConstraints(pattern=r"^https?://", max_length=2048)]


class InvoiceLineIn(RequestBody):
    description: LineDescription
    quantity: int = Field(default=1, ge=1, le=10000)
    unit_amount: Amount


class InvoiceCreate(RequestBody):
    customer: ObjectId = Field(description="The `cus_` id billed; the invoice is sent to its e-mail")
    currency: Currency
    lines: list[InvoiceLineIn] = Field(min_length=1, max_length=100)
    description: Description | None = None
    success_url: ReturnUrl | None = Field(
        default=None, description="Where the hosted payment page returns; registered exactly (needed to send)"
    )
    cancel_url: ReturnUrl | None = Field(default=None, description="Registered exactly (needed to send)")
    metadata: Metadata = Field(default_factory=dict)


class InvoiceUpdate(RequestBody):
    """A draft's terms; a finalized invoice cannot change."""

    lines: list[InvoiceLineIn] | None = Field(default=None, min_length=1, max_length=100)
    description: Description | None = None
    success_url: ReturnUrl | None = None
    cancel_url: ReturnUrl | None = None
    metadata: Metadata | None = None


class InvoiceFinalize(RequestBody):
    """No fields: finalization takes the next number and creates the invoice's payment."""


class InvoiceSend(RequestBody):
    """No fields: the e-mail goes to the customer's address, with a new hosted payment link."""


class InvoiceLineOut(BaseModel):
    description: str
    quantity: int
    unit_amount: int
    amount: int


class InvoiceDeliveryOut(BaseModel):
    id: str
    object: Literal["invoice_delivery"] = "invoice_delivery"
    channel: str
    recipient: str  # masked
    status: str
    checkout_session: str | None
    last_error: str | None
    sent_at: int | None
    created: int


class InvoiceOut(ResourceOut):
    object: Literal["invoice"] = "invoice"
    status: Literal["draft", "open", "paid"]
    number: str | None
    customer: str
    currency: str
    lines: list[InvoiceLineOut]
    amount_due: int
    amount_paid: int
    description: str | None
    payment_intent: str | None
    success_url: str | None
    cancel_url: str | None
    finalized_at: int | None
    paid_at: int | None
    deliveries: list[InvoiceDeliveryOut]
    metadata: dict[str, str]


def render_delivery(delivery: InvoiceDelivery) -> InvoiceDeliveryOut:
    return InvoiceDeliveryOut(
        id=delivery.id,
        channel=delivery.channel,
        recipient=mask(delivery.channel, delivery.recipient),
        status=delivery.status,
        checkout_session=delivery.checkout_session_id,
        last_error=delivery.last_error,
        sent_at=to_unix(delivery.sent_at) if delivery.sent_at else None,
        created=to_unix(delivery.created_at),
    )


def render_invoice(invoice: Invoice, deliveries: list[InvoiceDelivery] | None = None) -> InvoiceOut:
    lines: list[dict[str, Any]] = invoice.lines
    return InvoiceOut(
        id=invoice.id,
        livemode=invoice.livemode,
        created=to_unix(invoice.created_at),
        status=invoice.status,
        number=invoice.number,
        customer=invoice.customer_id,
        currency=invoice.currency,
        lines=[InvoiceLineOut(**line) for line in lines],
        amount_due=invoice.amount_due,
        amount_paid=invoice.amount_due if invoice.status == "paid" else 0,
        description=invoice.description,
        payment_intent=invoice.payment_intent_id,
        success_url=invoice.success_url,
        cancel_url=invoice.cancel_url,
        finalized_at=to_unix(invoice.finalized_at) if invoice.finalized_at else None,
        paid_at=to_unix(invoice.paid_at) if invoice.paid_at else None,
        deliveries=[render_delivery(delivery) for delivery in deliveries or []],
        metadata=invoice.metadata_,
    )
