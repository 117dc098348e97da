from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field, StringConstraints

from moneyrail.api.pagination import ListEnvelope
from moneyrail.kit.clock import to_unix
from moneyrail.kit.schemas import Metadata, RequestBody, ResourceOut
from moneyrail.models import PaymentMethod
from moneyrail.processor.interface import CardDetails

# Loose on purpose: whether a number is a card at all is the network's answer (402 incorrect_number).
CardNumber = Annotated[str, StringConstraints(min_length=1, max_length=32)]
Cvc = Annotated[str, StringConstraints(pattern=r"^[0-9]{3,4}$")]
ClientSecret = Annotated[str, StringConstraints(min_length=1, max_length=255)]


class CardIn(RequestBody):
    """What a payer typed. It goes to the processor only: never stored, never logged, never echoed."""

    number: CardNumber = Field(repr=False)  # a stray log line must not carry it
    exp_month: Annotated[int, Field(ge=1, le=12)]
    exp_year: Annotated[int, Field(ge=0, le=9999, description="Four digits, or two (26 is 2026)")]
    cvc: Cvc = Field(repr=False)

    def to_details(self) -> CardDetails:
        return CardDetails(number=self.number, exp_month=self.exp_month, exp_year=self.exp_year, cvc=self.cvc)


class NoParameters(RequestBody):
    """A route that takes no parameters still refuses unknown ones (CONVENTIONS.md §3)."""


class CardOut(BaseModel):
    brand: str
    last4: str
    exp_month: int
    exp_year: int
    fingerprint: str = Field(description="The same card number gives the same fingerprint")


class PaymentMethodOut(ResourceOut):
    object: Literal["payment_method"] = "payment_method"
    type: Literal["card"] = "card"
    customer: str | None = Field(description="The customer it is attached to; null once detached")
    card: CardOut
    preferred: bool
    merchant: str | None = Field(
        description="The merchant whose own payment account holds the card (direct model); null: the "
        "installation's account, shared by its merchants in a platform installation"
    )


class PaymentMethodList(ListEnvelope[PaymentMethodOut]):
    preferred_payment_method: str | None = Field(description="The customer's preferred method, if any")


def render_payment_method(method: PaymentMethod) -> PaymentMethodOut:
    attached = method.detached_at is None
    return PaymentMethodOut(
        id=method.id,
        livemode=method.livemode,
        created=to_unix(method.created_at),
        customer=method.customer_id if attached else None,
        merchant=method.merchant_id,
        card=CardOut(
            brand=method.brand,
            last4=method.last4,
            exp_month=method.exp_month,
            exp_year=method.exp_year,
            fingerprint=method.fingerprint,
        ),
        preferred=method.preferred and attached,
    )


class SetupIntentCreate(RequestBody):
    metadata: Metadata = Field(default_factory=dict)


class SetupIntentConfirm(RequestBody):
    client_secret: ClientSecret
    card: CardIn


class SetupIntentOut(ResourceOut):
    object: Literal["setup_intent"] = "setup_intent"
    customer: str
    status: Literal["requires_payment_method", "succeeded", "canceled"]
    usage: Literal["off_session"]
    payment_method: str | None
    client_secret: str | None = Field(description="Shown once, in the answer that creates it; else null")
    expires_at: int
    metadata: dict[str, str]


class CustomerSessionOut(ResourceOut):
    object: Literal["customer_session"] = "customer_session"
    customer: str
    client_secret: str = Field(description="Shown once, in the answer that creates it")
    expires_at: int


class CustomerSessionAccess(RequestBody):
    client_secret: ClientSecret


class CustomerSheetSessionOut(BaseModel):
    """Everything a native customer sheet needs, in one answer; it is not stored as such."""

    object: Literal["customer_sheet_session"] = "customer_sheet_session"
    livemode: bool
    created: int
    customer: str
    customer_session: str
    customer_session_client_secret: str
    setup_intent: str
    setup_intent_client_secret: str
    publishable_key: str
    expires_at: int
