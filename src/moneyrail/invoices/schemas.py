from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from moneyrail.deliveries.recipients import mask
from moneyrail.kit.clock import to_unix
from moneyrail.kit.schemas import Amount, Currency, Metadata, RequestBody, ResourceOut
from moneyrail.models import Invoice, InvoiceDelivery

ObjectId = Annotated[str, StringConstraints(min_length=1, max_length=255)]
LineDescription = Annotated[str, StringConstraints(min_length=1, max_length=500)]
Description = Annotated[str, StringConstraints(max_length=1000)]
ReturnUrl = Annotated[str, StringConstraints(pattern=r"^https?://", max_length=2048)]


class InvoiceLineIn(RequestBody):
    description: LineDescription = Field(description="What the line is")
    quantity: int = Field(description="How many: 1 to 10000", default=1, ge=1, le=10000)
    unit_amount: Amount = Field(description="The price of one, in minor units")


class InvoiceCreate(RequestBody):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "customer": "cus_000000000000000000000000",
                    "currency": "eur",
                    "lines": [{"description": "Consulting, March", "quantity": 3, "unit_amount": 12000}],
                    "description": "March",
                    "success_url": "https://shop.example/checkout/success",
                    "cancel_url": "https://shop.example/checkout/cancel",
                    "metadata": {},
                }
            ]
        }
    )

    customer: ObjectId = Field(description="The `cus_` id billed; the invoice is sent to its e-mail")
    currency: Currency = Field(description="The invoice's currency: a lowercase ISO 4217 code")
    lines: list[InvoiceLineIn] = Field(
        description="The invoice's lines: 1 to 100", min_length=1, max_length=100
    )
    description: Description | None = Field(default=None, description="Shown to the customer on the invoice")
    success_url: ReturnUrl | None = Field(
        default=None, description="Where the hosted payment page returns; registered exactly (needed to send)"
    )
    cancel_url: ReturnUrl | None = Field(default=None, description="Registered exactly (needed to send)")
    metadata: Metadata = Field(default_factory=dict)


class InvoiceUpdate(RequestBody):
    """A draft's terms; a finalized invoice cannot change."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "description": "March, revised",
                    "lines": [{"description": "Consulting, March", "quantity": 4, "unit_amount": 12000}],
                }
            ]
        }
    )

    lines: list[InvoiceLineIn] | None = Field(
        description="New lines replacing the draft's: 1 to 100", default=None, min_length=1, max_length=100
    )
    description: Description | None = Field(default=None, description="Shown to the customer on the invoice")
    success_url: ReturnUrl | None = Field(
        default=None, description="Where the payment page returns after payment; registered exactly"
    )
    cancel_url: ReturnUrl | None = Field(
        default=None, description="Where the payment page returns when abandoned; registered exactly"
    )
    metadata: Metadata | None = Field(default=None, description="Your own key-value pairs, merged")


class InvoiceFinalize(RequestBody):
    """No fields: finalization takes the next number and creates the invoice's payment."""

    model_config = ConfigDict(json_schema_extra={"examples": [{}]})


class InvoiceSend(RequestBody):
    """No fields: the e-mail goes to the customer's address, with a new hosted payment link."""

    model_config = ConfigDict(json_schema_extra={"examples": [{}]})


class InvoiceLineOut(BaseModel):
    description: str = Field(description="What the line is")
    quantity: int = Field(description="How many")
    unit_amount: int = Field(description="The price of one, in minor units")
    amount: int = Field(description="`quantity` times `unit_amount`, in minor units")


class InvoiceDeliveryOut(BaseModel):
    id: str = Field(description="The delivery's id")
    object: Literal["invoice_delivery"] = "invoice_delivery"
    channel: str = Field(description="How it was sent: `email`")
    recipient: str = Field(description="Where it was sent, masked")
    status: str = Field(
        description="`pending` (its operation runs, retries or waits in `dead_letter` for an operator), "
        "`sent`, or `failed` (final: refused, or its operation discarded by an operator)"
    )
    checkout_session: str | None = Field(description="The `cs_` hosted payment session the message links to")
    last_error: str | None = Field(description="Why the last attempt failed; null otherwise")
    operation: str | None = Field(description="The `op_` operation that sends it (GET /v1/operations/{id})")
    sent_at: int | None = Field(description="When it was sent, in Unix seconds; null until sent")
    created: int = Field(description="When the delivery was requested, in Unix seconds")


class InvoiceOut(ResourceOut):
    object: Literal["invoice"] = "invoice"
    status: Literal["draft", "open", "paid"] = Field(
        description="`draft`, `open` (finalized, payable) or `paid`"
    )
    number: str | None = Field(
        description="The environment's gapless number, given at finalization; null on a draft"
    )
    customer: str = Field(description="The `cus_` customer billed")
    currency: str
    lines: list[InvoiceLineOut] = Field(description="The invoice's lines")
    amount_due: int = Field(description="The sum of the lines, in minor units")
    amount_paid: int = Field(description="What was paid, in minor units")
    description: str | None = Field(description="Shown to the customer")
    payment_intent: str | None = Field(
        description="The `pi_` payment created at finalization; null on a draft"
    )
    success_url: str | None = Field(description="Where the payment page returns after payment")
    cancel_url: str | None = Field(description="Where the payment page returns when abandoned")
    finalized_at: int | None = Field(description="When it was finalized, in Unix seconds")
    paid_at: int | None = Field(description="When it was paid, in Unix seconds")
    deliveries: list[InvoiceDeliveryOut] = Field(description="The e-mails sent with it, newest first")
    metadata: dict[str, str]


def render_delivery(delivery: InvoiceDelivery) -> InvoiceDeliveryOut:
    return InvoiceDeliveryOut(
        id=delivery.id,
        channel=delivery.channel,
        recipient=mask(delivery.channel, delivery.recipient),
        status=delivery.status,
        checkout_session=delivery.checkout_session_id,
        last_error=delivery.last_error,
        operation=delivery.operation_id,
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
