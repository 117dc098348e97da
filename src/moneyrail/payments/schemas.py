from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, EmailStr, Field, StringConstraints

from moneyrail.kit import crypto
from moneyrail.kit.clock import to_unix
from moneyrail.kit.schemas import (
    LAST_OPERATION_ERROR,
    Amount,
    Currency,
    Metadata,
    OperationErrorOut,
    ParseableUrl,
    RequestBody,
    ResourceOut,
    operation_error_out,
)
from moneyrail.models import PaymentIntent, Refund
from moneyrail.payment_methods.schemas import (
    CARD_SHAPES,
    PROCESSOR_CARD_HELP,
    TOKEN_EXAMPLE,
    CardIn,
    ProcessorCardToken,
)

Reference = Annotated[str, StringConstraints(min_length=1, max_length=255)]
Description = Annotated[str, StringConstraints(max_length=1000)]
ObjectId = Annotated[str, StringConstraints(min_length=1, max_length=255)]
Phone = Annotated[str, StringConstraints(pattern=r"^\+[1-9][0-9]{6,14}$")]  # E.164
ReturnUrl = Annotated[str, StringConstraints(pattern=r"^https?://", max_length=2048), ParseableUrl]


class AllocationIn(RequestBody):
    recipient: ObjectId = Field(description="Who receives this share: a `mer_` or `acct_` id")
    role: Annotated[str, StringConstraints(min_length=1, max_length=40)] = Field(
        description="The recipient's role, such as `merchant`, `courier` or `developer`"
    )
    amount: int | None = Field(default=None, description="The share in minor units (payments)")
    basis_points: int | None = Field(default=None, description="The share in basis points (subscriptions)")
    metadata: Metadata = Field(default_factory=dict)


class DistributionIn(RequestBody):
    merchant_of_record: ObjectId | None = Field(default=None, description="The `mer_` id selling")
    allocations: list[AllocationIn] = Field(
        min_length=1, max_length=50, description="The shares; amounts sum to the payment's amount"
    )


class PaymentIntentCreate(RequestBody):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"amount": 2500, "currency": "eur", "capture_method": "manual", "metadata": {"order": "42"}}
            ]
        }
    )

    amount: Amount = Field(description="What the payer pays, in minor units")
    currency: Currency
    capture_method: Literal["automatic", "manual"] = Field(
        default="automatic", description="`manual`: authorize now, capture later with /capture"
    )
    customer: ObjectId | None = Field(
        default=None, description="A `cus_` id; without it the payment is anonymous"
    )
    payment_method: ObjectId | None = Field(default=None, description="A saved card of `customer`")
    merchant: ObjectId | None = Field(
        default=None, description="Marketplace payments (platform installations)"
    )
    distribution: DistributionIn | None = Field(
        default=None, description="How a platform's payment is shared out among recipients"
    )
    external_reference: Reference | None = Field(default=None, description="Your own reference")
    description: Description | None = Field(default=None, description="Shown on the receipt")
    metadata: Metadata = Field(default_factory=dict)
    receipt_email: EmailStr | None = Field(default=None, description="Defaults to the customer's e-mail")
    receipt_phone: Phone | None = Field(default=None, description="E.164; an SMS receipt goes there")


class PaymentIntentUpdate(RequestBody):
    model_config = ConfigDict(json_schema_extra={"examples": [{"amount": 3000, "description": "Order 42"}]})

    amount: Amount | None = Field(default=None, description="A new amount, before confirmation")
    payment_method: ObjectId | None = Field(default=None, description="A saved card of the customer")
    description: Description | None = Field(default=None, description="Shown on the receipt")
    metadata: Metadata | None = Field(default=None, description="Merged; an empty value removes a key")
    receipt_email: EmailStr | None = Field(default=None, description="Where the receipt goes")


class PaymentIntentConfirm(RequestBody):
    model_config = ConfigDict(
        json_schema_extra={
            "description": "Pays with a saved card of the payment's customer (`payment_method`), or with "
            f"a new card. {CARD_SHAPES}",
            "examples": [
                {  # the sandbox simulator
                    "client_secret": "pi_0000000000000000000000000_secret_abc",
                    "card": {"number": "4242424242424242", "exp_month": 12, "exp_year": 2034, "cvc": "123"},
                },
                {  # Stripe (live, or a sandbox on Stripe's test mode)
                    "client_secret": "pi_0000000000000000000000000_secret_abc",
                    "card_token": TOKEN_EXAMPLE,
                },
            ],
        },
    )

    client_secret: Annotated[str, StringConstraints(min_length=1, max_length=255)] = Field(
        description="The payment's `client_secret`, from its creation answer"
    )
    payment_method: ObjectId | None = Field(
        default=None, description="A saved card of the payment's customer"
    )
    card: CardIn | None = Field(
        default=None,
        description="A new card as typed: the sandbox simulator only (elsewhere `card_token`); exclusive "
        "with `card_token` and `payment_method`",
    )
    card_token: ProcessorCardToken | None = Field(default=None, description=PROCESSOR_CARD_HELP)
    save_payment_method: bool = Field(default=False, description="The customer's consent to keep the card")
    return_url: ReturnUrl | None = Field(default=None, description="Where bank authentication returns to")


class PaymentIntentCapture(RequestBody):
    model_config = ConfigDict(json_schema_extra={"examples": [{"amount_to_capture": 2000}]})

    amount_to_capture: Amount | None = Field(
        default=None, description="At most the authorized amount; defaults to all of it"
    )


class PaymentIntentCancel(RequestBody):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"cancellation_reason": "requested_by_customer"}]}
    )

    cancellation_reason: Literal["duplicate", "fraudulent", "requested_by_customer", "abandoned"] | None = (
        Field(default=None, description="Why the payment is canceled")
    )


class IncrementAuthorization(RequestBody):
    model_config = ConfigDict(json_schema_extra={"examples": [{"amount": 3500}]})

    amount: Amount = Field(description="The new total to hold, above the current amount")


class FeesOut(BaseModel):
    status: Literal["pending", "final"] = Field(
        description="`pending` until the processor reports the payment's real cost, then `final`"
    )
    reserve: int | None = Field(
        description="Withheld at capture under the commission policy; null without one"
    )
    commission: int | None = Field(description="Total final commission; null until the cost is known")
    collected: int | None = Field(description="The commission collected from this payment")
    prior_recovery: int = Field(description="Earlier shortfalls recovered from this payment")
    outstanding: int | None = Field(description="Commission still owed, recovered from later payments")


class PaymentErrorOut(BaseModel):
    type: str = Field(description="The error's family, `card_error` for declines")
    code: str = Field(description="Why the payment failed, such as `card_declined`")
    decline_code: str | None = Field(description="The network's reason, such as `insufficient_funds`")
    message: str = Field(description="A human-readable explanation")
    payment_method: str | None = Field(description="The `pm_` id of the card that failed, if saved")


class PaymentIntentOut(ResourceOut):
    object: Literal["payment_intent"] = "payment_intent"
    amount: int = Field(description="What the payer pays, in minor units")
    amount_capturable: int = Field(description="Authorized and not yet captured")
    amount_received: int = Field(description="Captured so far")
    amount_refunded: int = Field(description="Refunded so far")
    currency: str
    status: str = Field(
        description="`requires_payment_method`, `requires_confirmation`, `requires_action`, `processing`, "
        "`requires_capture`, `succeeded` or `canceled`"
    )
    capture_method: str = Field(description="`automatic` or `manual`")
    client_secret: str | None = Field(description="Only in the creation answer")
    publishable_key: str | None = Field(description="The key a client confirms this payment with")
    customer: str | None = Field(description="The `cus_` id paying, if any")
    payment_method: str | None = Field(description="The `pm_` id of the card used, once known")
    merchant: str | None = Field(description="The `mer_` id selling (marketplace payments)")
    distribution: dict[str, Any] | None = Field(description="How the payment is shared out, if it is")
    external_reference: str | None = Field(description="Your own reference")
    description: str | None = Field(description="Shown on the receipt")
    metadata: dict[str, str]
    receipt_email: str | None = Field(description="Where the receipt goes")
    fees: FeesOut = Field(description="The service's commission on this payment")
    next_action: dict[str, Any] | None = Field(
        description="What the payer must do next (`redirect_to_url` for bank authentication)"
    )
    last_payment_error: PaymentErrorOut | None = Field(description="Why the last attempt failed")
    cancellation_reason: str | None = Field(description="Why the payment was canceled")
    canceled_at: int | None = Field(description="When it was canceled, in Unix seconds")


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
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"payment_intent": "pi_0000000000000000000000000", "amount": 500, "reason": "duplicate"}
            ]
        }
    )

    payment_intent: ObjectId = Field(description="The `pi_` id of a succeeded payment")
    amount: Amount | None = Field(default=None, description="Defaults to everything not yet refunded")
    reason: Literal["duplicate", "fraudulent", "requested_by_customer"] | None = Field(
        default=None, description="Why the money goes back"
    )
    metadata: Metadata = Field(default_factory=dict)


class RefundOut(ResourceOut):
    object: Literal["refund"] = "refund"
    payment_intent: str = Field(description="The `pi_` id refunded")
    amount: int = Field(description="Refunded, in minor units")
    currency: str
    status: str = Field(
        description="`pending` (its operation runs, retries or waits in `dead_letter` for an operator; "
        "the amount is held), `succeeded` or `failed` (final: refused for good, or its operation "
        "discarded by an operator; the amount is free to refund again)"
    )
    reason: str | None = Field(description="Why the money goes back")
    failure_reason: str | None = Field(
        description="Why it failed, when `failed`: `<code>: <message>` (`operation_discarded` for a discard)"
    )
    operation: str | None = Field(description="The `op_` id carrying the refund out")
    last_operation_error: OperationErrorOut | None = Field(description=LAST_OPERATION_ERROR)
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
        last_operation_error=(
            operation_error_out(refund.last_operation_error)
            if refund.status in ("pending", "failed")
            else None
        ),
        metadata=refund.metadata_,
    )


class BalanceAmount(BaseModel):
    amount: int = Field(description="In minor units")
    currency: str


class BalanceOut(BaseModel):
    object: Literal["balance"] = "balance"
    livemode: bool
    available: list[BalanceAmount] = Field(description="Funds that can be paid out, per currency")
    pending: list[BalanceAmount] = Field(description="Funds not yet available, per currency")
    fees_outstanding: list[BalanceAmount] = Field(
        description="Processing costs still to be recovered from the next payments"
    )


class PaymentQuoteCreate(RequestBody):
    model_config = ConfigDict(json_schema_extra={"examples": [{"amount": 10000, "currency": "eur"}]})

    amount: Amount = Field(description="The payment's amount, in minor units")
    currency: Currency
    merchant: ObjectId | None = Field(default=None, description="The `mer_` id selling (platforms)")
    distribution: DistributionIn | None = Field(default=None, description="The shares, as on a payment")


class FundsFlowItem(BaseModel):
    party: Literal["installation", "service"] = Field(description="Who gets this part")
    role: Literal["proceeds", "commission_reserve", "prior_recovery"] = Field(description="What it is for")
    amount: int = Field(description="In minor units")


class QuoteFeesOut(BaseModel):
    commission_basis_points: int = Field(description="The commission policy's rate, in basis points")
    commission_fixed_amount: int = Field(description="The commission policy's fixed part, in minor units")
    commission_reserve: int = Field(description="Withheld at capture; 0 without a commission policy")
    prior_recovery: int = Field(description="Earlier costs this payment would recover, at today's balance")
    amount_fixed: bool = Field(description="True when the reserve fixes the payment's amount (rule 1 of 4.B)")
    processing_cost: Literal["reported_after_capture"] = Field(
        default="reported_after_capture", description="The real cost is known only after capture"
    )


class PaymentQuoteOut(BaseModel):
    object: Literal["payment_quote"] = "payment_quote"
    livemode: bool
    amount: int = Field(description="The payment's amount, in minor units")
    currency: str
    funds_flow: list[FundsFlowItem] = Field(description="Where each minor unit would go")
    fees: QuoteFeesOut = Field(description="The commission the payment would carry")
