from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, EmailStr, Field, StringConstraints

from moneyrail.kit import crypto
from moneyrail.kit.clock import to_unix
from moneyrail.kit.schemas import Amount, Currency, Metadata, RequestBody, ResourceOut
from moneyrail.models import PaymentIntent, Refund
from moneyrail.payment_methods.schemas import CardIn

Reference = Annotated[str, StringConstraints(min_length=1, max_length=255)]
Description = Annotated[str, StringConstraints(max_length=1000)]
ObjectId = Annotated[str, StringConstraints(min_length=1, max_length=255)]
Phone = Annotated[str, StringConstraints(pattern=r"^\+[1-9][0-9]{6,14}$")]  # E.164
ReturnUrl = Annotated[str, StringConstraints(pattern=r"^https?://", max_length=2048)]


class AllocationIn(RequestBody):
    recipient: ObjectId
    role: Annotated[str, StringConstraints(min_length=1, max_length=40)]
    amount: int | None = None
    basis_points: int | None = None
    metadata: Metadata = Field(default_factory=dict)


class DistributionIn(RequestBody):
    merchant_of_record: ObjectId | None = None
    allocations: list[AllocationIn] = Field(min_length=1, max_length=50)


class PaymentIntentCreate(RequestBody):
    amount: Amount
    currency: Currency
    capture_method: Literal["automatic", "manual"] = "automatic"
    customer: ObjectId | None = Field(
        default=None, description="A `cus_` id; without it the payment is anonymous"
    )
    payment_method: ObjectId | None = Field(default=None, description="A saved card of `customer`")
    merchant: ObjectId | None = Field(
        default=None, description="Marketplace payments (platform installations)"
    )
    distribution: DistributionIn | None = None
    external_reference: Reference | None = None
    description: Description | None = None
    metadata: Metadata = Field(default_factory=dict)
    receipt_email: EmailStr | None = Field(default=None, description="Defaults to the customer's e-mail")
    receipt_phone: Phone | None = Field(default=None, description="E.164; an SMS receipt goes there")


class PaymentIntentUpdate(RequestBody):
    amount: Amount | None = None
    payment_method: ObjectId | None = None
    description: Description | None = None
    metadata: Metadata | None = Field(default=None, description="Merged; an empty value removes a key")
    receipt_email: EmailStr | None = None


class PaymentIntentConfirm(RequestBody):
    client_secret: Annotated[str, StringConstraints(min_length=1, max_length=255)]
    payment_method: ObjectId | None = Field(
        default=None, description="A saved card of the payment's customer"
    )
    card: CardIn | None = Field(default=None, description="A new card; exclusive with payment_method")
    save_payment_method: bool = Field(default=False, description="The customer's consent to keep the card")
    return_url: ReturnUrl | None = Field(default=None, description="Where bank authentication returns to")


class PaymentIntentCapture(RequestBody):
    amount_to_capture: Amount | None = None


class PaymentIntentCancel(RequestBody):
    cancellation_reason: Literal["duplicate", "fraudulent", "requested_by_customer", "abandoned"] | None = (
        None
    )


class IncrementAuthorization(RequestBody):
    amount: Amount = Field(description="The new total to hold, above the current amount")


class FeesOut(BaseModel):
    status: Literal["pending", "final"]
    reserve: int | None = Field(
        description="Withheld at capture under the commission policy; null without one"
    )
    commission: int | None = Field(description="Total final commission; null until the cost is known")
    collected: int | None
    prior_recovery: int
    outstanding: int | None


class PaymentErrorOut(BaseModel):
    type: str
    code: str
    decline_code: str | None
    message: str
    payment_method: str | None


class PaymentIntentOut(ResourceOut):
    object: Literal["payment_intent"] = "payment_intent"
    amount: int
    amount_capturable: int
    amount_received: int
    amount_refunded: int
    currency: str
    status: str
    capture_method: str
    client_secret: str | None = Field(description="Only in the creation answer")
    publishable_key: str | None
    customer: str | None
    payment_method: str | None
    merchant: str | None
    distribution: dict[str, Any] | None
    external_reference: str | None
    description: str | None
    metadata: dict[str, str]
    receipt_email: str | None
    fees: FeesOut
    next_action: dict[str, Any] | None
    last_payment_error: PaymentErrorOut | None
    cancellation_reason: str | None
    canceled_at: int | None


def authentication_url(payment: PaymentIntent) -> str | None:
    """The bank-authentication link of a payment that requires action. It is a credential (it decides the
    payment), so the row keeps it sealed (kit/crypto.py) and this opens it."""
    redirect = (payment.next_action or {}).get("redirect_to_url") or {}
    url = redirect.get("url")
    return crypto.open_text(url) if isinstance(url, str) else None


def shown_next_action(payment: PaymentIntent, *, with_link: bool) -> dict[str, Any] | None:
    """next_action as callers see it: the link opened, or left out (null) where the copy is stored in the
    clear and sent on (an event)."""
    if payment.next_action is None:
        return None
    redirect = payment.next_action.get("redirect_to_url")
    if not isinstance(redirect, dict):
        return payment.next_action
    link = authentication_url(payment) if with_link else None
    return {**payment.next_action, "redirect_to_url": {**redirect, "url": link}}


def render_payment_intent(
    payment: PaymentIntent,
    *,
    publishable_key: str | None,
    client_secret: str | None = None,
    with_authentication_link: bool = True,
    distribution: dict[str, Any] | None = None,
) -> PaymentIntentOut:
    return PaymentIntentOut(
        id=payment.id,
        livemode=payment.livemode,
        created=to_unix(payment.created_at),
        amount=payment.amount,
        amount_capturable=payment.amount_capturable,
        amount_received=payment.amount_received,
        amount_refunded=payment.amount_refunded,
        currency=payment.currency,
        status=payment.status,
        capture_method=payment.capture_method,
        client_secret=client_secret,
        publishable_key=publishable_key,
        customer=payment.customer_id,
        payment_method=payment.payment_method_id,
        merchant=payment.merchant_id,
        distribution=distribution,
        external_reference=payment.external_reference,
        description=payment.description,
        metadata=payment.metadata_,
        receipt_email=payment.receipt_email,
        fees=FeesOut(
            status="final" if payment.fee_status == "final" else "pending",
            reserve=payment.fee_reserve,
            commission=payment.fee_commission,
            collected=payment.fee_collected,
            prior_recovery=payment.fee_prior_recovery,
            outstanding=payment.fee_outstanding,
        ),
        next_action=shown_next_action(payment, with_link=with_authentication_link),
        last_payment_error=(
            PaymentErrorOut.model_validate(payment.last_payment_error) if payment.last_payment_error else None
        ),
        cancellation_reason=payment.cancellation_reason,
        canceled_at=to_unix(payment.canceled_at) if payment.canceled_at else None,
    )


class RefundCreate(RequestBody):
    payment_intent: ObjectId
    amount: Amount | None = Field(default=None, description="Defaults to everything not yet refunded")
    reason: Literal["duplicate", "fraudulent", "requested_by_customer"] | None = None
    metadata: Metadata = Field(default_factory=dict)


class RefundOut(ResourceOut):
    object: Literal["refund"] = "refund"
    payment_intent: str
    amount: int
    currency: str
    status: str
    reason: str | None
    failure_reason: str | None
    operation: str | None
    metadata: dict[str, str]


def render_refund(refund: Refund) -> RefundOut:
    return RefundOut(
        id=refund.id,
        livemode=refund.livemode,
        created=to_unix(refund.created_at),
        payment_intent=refund.payment_intent_id,
        amount=refund.amount,
        currency=refund.currency,
        status=refund.status,
        reason=refund.reason,
        failure_reason=refund.failure_reason,
        operation=refund.operation_id,
        metadata=refund.metadata_,
    )


class BalanceAmount(BaseModel):
    amount: int
    currency: str


class BalanceOut(BaseModel):
    object: Literal["balance"] = "balance"
    livemode: bool
    available: list[BalanceAmount]
    pending: list[BalanceAmount]
    fees_outstanding: list[BalanceAmount] = Field(
        description="Processing costs still to be recovered from the next payments"
    )


class PaymentQuoteCreate(RequestBody):
    amount: Amount
    currency: Currency
    merchant: ObjectId | None = None
    distribution: DistributionIn | None = None


class FundsFlowItem(BaseModel):
    party: Literal["installation", "service"]
    role: Literal["proceeds", "commission_reserve", "prior_recovery"]
    amount: int


class QuoteFeesOut(BaseModel):
    commission_basis_points: int
    commission_fixed_amount: int
    commission_reserve: int = Field(description="Withheld at capture; 0 without a commission policy")
    prior_recovery: int = Field(description="Earlier costs this payment would recover, at today's balance")
    amount_fixed: bool = Field(description="True when the reserve fixes the payment's amount (rule 1 of 4.B)")
    processing_cost: Literal["reported_after_capture"] = "reported_after_capture"


class PaymentQuoteOut(BaseModel):
    object: Literal["payment_quote"] = "payment_quote"
    livemode: bool
    amount: int
    currency: str
    funds_flow: list[FundsFlowItem]
    fees: QuoteFeesOut
