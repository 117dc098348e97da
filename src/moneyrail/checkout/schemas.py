from __future__ import annotations

from typing import Annotated, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from moneyrail.kit.clock import to_unix
from moneyrail.kit.schemas import ParseableUrl, RequestBody, ResourceOut
from moneyrail.models import CheckoutSession

ObjectId = Annotated[str, StringConstraints(min_length=1, max_length=255)]
Title = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
ReturnUrl = Annotated[str, StringConstraints(pattern=r"^https?://", max_length=2048), ParseableUrl]
CheckoutStatus = Literal["open", "complete", "expired"]


class CheckoutSessionCreate(RequestBody):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "payment_intent": "pi_0000000000000000000000000",
                    "title": "Order 42",
                    "success_url": "https://shop.example/checkout/success",
                    "cancel_url": "https://shop.example/checkout/cancel",
                }
            ]
        }
    )

    payment_intent: ObjectId | None = Field(
        default=None, description="A `pi_` id the payer pays; exclusive with `subscription`"
    )
    subscription: ObjectId | None = Field(
        default=None, description="A subscription's first or overdue payment; exclusive with `payment_intent`"
    )
    change: ObjectId | None = Field(default=None, description="A subscription change the payer consents to")
    invoice: ObjectId | None = Field(default=None, description="A failed subscription invoice to recover")
    title: Title = Field(description="Shown on the hosted page")
    success_url: ReturnUrl = Field(description="Where the payer goes once paid; registered exactly")
    cancel_url: ReturnUrl = Field(description="Where the payer goes on cancel; registered exactly")


class CheckoutSessionExpire(RequestBody):
    """The expire operation takes no parameters, and still refuses unknown ones."""

    model_config = ConfigDict(json_schema_extra={"examples": [{}]})


class CheckoutSessionOut(ResourceOut):
    object: Literal["checkout_session"] = "checkout_session"
    payment_intent: str | None = Field(description="The `pi_` id the payer pays")
    subscription: str | None = Field(description="The subscription paid for, if any")
    change: str | None = Field(description="The subscription change consented to, if any")
    invoice: str | None = Field(description="The subscription invoice recovered, if any")
    title: str = Field(description="Shown on the hosted page")
    success_url: str = Field(description="Where the payer goes once paid")
    cancel_url: str = Field(description="Where the payer goes on cancel")
    status: CheckoutStatus = Field(description="`open`, `complete` or `expired`")
    expires_at: int = Field(description="Unix seconds on the environment's clock (the sandbox clock)")
    checkout_url: str | None = Field(
        description="The hosted page, a temporary credential: answered once, at creation; null afterwards"
    )


def render_checkout_session(
    checkout: CheckoutSession, *, checkout_url: str | None = None
) -> CheckoutSessionOut:
    return CheckoutSessionOut(
        id=checkout.id,
        livemode=checkout.livemode,
        created=to_unix(checkout.created_at),
        payment_intent=checkout.payment_intent_id,
        subscription=checkout.subscription_id,
        change=checkout.change_id,
        invoice=checkout.invoice_id,
        title=checkout.title,
        success_url=checkout.success_url,
        cancel_url=checkout.cancel_url,
        status=cast(CheckoutStatus, checkout.status),  # the table's check constraint holds it to three
        expires_at=to_unix(checkout.expires_at),
        checkout_url=checkout_url,
    )


class CheckoutPaymentForm(BaseModel):
    """What the hosted page's form posts. Card fields go to the processor only: never stored or echoed."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True, hide_input_in_errors=True)

    payment_method: str | None = Field(default=None, description="`new`, or a saved `pm_` of the customer")
    card_number: str | None = Field(default=None, repr=False)
    exp_month: str | None = None
    exp_year: str | None = None
    cvc: str | None = Field(default=None, repr=False)
    # what Stripe.js made of the card in the payer's browser: the page on a real processor posts this only
    card_token: str | None = Field(default=None, repr=False)
    save_card: bool = False
    renew_consent: bool = False  # a subscription: consent to save the card and to renewals
