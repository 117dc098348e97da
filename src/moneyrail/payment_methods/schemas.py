from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from moneyrail.api.pagination import ListEnvelope
from moneyrail.errors import ParametersExclusive
from moneyrail.kit.clock import to_unix
from moneyrail.kit.schemas import Metadata, RequestBody, ResourceOut
from moneyrail.models import PaymentMethod
from moneyrail.processor.interface import CardDetails, CardInput, CardToken

# Loose on purpose: whether a number is a card at all is the network's answer (402 incorrect_number).
CardNumber = Annotated[str, StringConstraints(min_length=1, max_length=32)]
Cvc = Annotated[str, StringConstraints(pattern=r"^[0-9]{3,4}$")]
ClientSecret = Annotated[str, StringConstraints(min_length=1, max_length=255)]
# What Stripe.js made of the card in the payer's browser: a token (`createToken`) or a payment method
PROCESSOR_CARD_TOKEN_PATTERN = r"^(tok|pm)_[A-Za-z0-9_]{1,250}$"  # noqa: S105 - a shape, not a secret
ProcessorCardToken = Annotated[str, StringConstraints(pattern=PROCESSOR_CARD_TOKEN_PATTERN)]
# What a client-side confirmation's body says about its two shapes of card (/openapi.json)
CARD_SHAPES = (
    "The card comes in one of two shapes, by the environment's processor (CONVENTIONS.md §6): `card`, "
    "the digits as typed, on the sandbox simulator only; or `card_token`, the token Stripe.js made in "
    "the payer's browser (`stripe.createToken(cardElement)`), on every live environment and on a sandbox "
    "set to Stripe's test mode, where a typed `card` is refused (400 `parameter_invalid`, "
    "`card_token_required`) and nothing is recorded. The two are exclusive (400 `parameters_exclusive`)."
)
TOKEN_EXAMPLE = "tok_1PgXjr2eZvKYlo2CqH3ZbD1Q"  # noqa: S105 - an example, not a secret
PROCESSOR_CARD_HELP = (
    "The card as the processor's own fields collected it in the payer's browser: the `tok_…` token "
    "Stripe.js `createToken` made (or a `pm_…` payment method), so that the number never reaches "
    "moneyrail. Environments on a real processor (every live one, and a sandbox set to Stripe's test "
    "mode) take only this; the sandbox simulator takes `card` instead. Exclusive with `card`."
)


class CardIn(RequestBody):
    """What a payer typed. It goes to the processor only: never stored, never logged, never echoed."""

    number: CardNumber = Field(repr=False, description="The card number")  # never in a log line
    exp_month: Annotated[int, Field(ge=1, le=12, description="Expiry month, 1 to 12")]
    exp_year: Annotated[int, Field(ge=0, le=9999, description="Four digits, or two (26 is 2026)")]
    cvc: Cvc = Field(repr=False, description="The 3 or 4 digits on the card")

    def to_details(self) -> CardDetails:
        return CardDetails(number=self.number, exp_month=self.exp_month, exp_year=self.exp_year, cvc=self.cvc)


def card_input(card: CardIn | None, card_token: str | None) -> CardInput | None:
    """The card a body gives: typed digits (`card`, the simulator's) or the processor's token."""
    if card is not None and card_token is not None:
        raise ParametersExclusive("Send either card or card_token, not both.", param="card_token")
    if card_token is not None:
        return CardToken(card_token)
    return card.to_details() if card is not None else None


class NoParameters(RequestBody):
    """A route that takes no parameters still refuses unknown ones (CONVENTIONS.md §3)."""

    model_config = ConfigDict(json_schema_extra={"examples": [{}]})


class CardOut(BaseModel):
    brand: str = Field(description="The card network, such as `visa`")
    last4: str = Field(description="The number's last four digits")
    exp_month: int = Field(description="Expiry month")
    exp_year: int = Field(description="Expiry year, four digits")
    fingerprint: str = Field(description="The same card number gives the same fingerprint")


class PaymentMethodOut(ResourceOut):
    object: Literal["payment_method"] = "payment_method"
    type: Literal["card"] = Field(default="card", description="The kind of method; cards only")
    customer: str | None = Field(description="The customer it is attached to; null once detached")
    card: CardOut = Field(description="What can be shown of the card; never its number")
    preferred: bool = Field(description="The customer's preferred method for payments")
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
    model_config = ConfigDict(json_schema_extra={"examples": [{"metadata": {"source": "settings_page"}}]})

    metadata: Metadata = Field(default_factory=dict)


class SetupIntentConfirm(RequestBody):
    model_config = ConfigDict(
        json_schema_extra={
            "description": f"Saves the card for the setup intent's customer. {CARD_SHAPES}",
            "examples": [
                {  # the sandbox simulator
                    "client_secret": "seti_0000000000000000000000000_secret_abc",
                    "card": {"number": "4242424242424242", "exp_month": 12, "exp_year": 2034, "cvc": "123"},
                },
                {  # Stripe (live, or a sandbox on Stripe's test mode)
                    "client_secret": "seti_0000000000000000000000000_secret_abc",
                    "card_token": TOKEN_EXAMPLE,
                },
            ],
        },
    )

    client_secret: ClientSecret = Field(description="The setup intent's `client_secret`")
    card: CardIn | None = Field(
        default=None,
        description="The card to save, as typed: the sandbox simulator only (elsewhere `card_token`); "
        "exclusive with `card_token`",
    )
    card_token: ProcessorCardToken | None = Field(default=None, description=PROCESSOR_CARD_HELP)


class SetupIntentOut(ResourceOut):
    object: Literal["setup_intent"] = "setup_intent"
    customer: str = Field(description="The `cus_` id the card is saved for")
    status: Literal["requires_payment_method", "succeeded", "canceled"] = Field(
        description="`succeeded` once a card is saved; `canceled` when none was by `expires_at`"
    )
    cancellation_reason: Literal["abandoned"] | None = Field(
        description="Why it was canceled: `abandoned`, not confirmed before `expires_at`; else null"
    )
    usage: Literal["off_session"] = Field(description="The saved card may be charged without the customer")
    payment_method: str | None = Field(description="The `pm_` id saved, once `succeeded`")
    client_secret: str | None = Field(description="Shown once, in the answer that creates it; else null")
    expires_at: int = Field(
        description="When it can no longer be confirmed, in Unix seconds (the sandbox clock in the sandbox)"
    )
    metadata: dict[str, str]


class CustomerSessionOut(ResourceOut):
    object: Literal["customer_session"] = "customer_session"
    customer: str = Field(description="The `cus_` id whose saved cards the session shows")
    client_secret: str = Field(description="Shown once, in the answer that creates it")
    expires_at: int = Field(description="When the session ends, in Unix seconds")


class CustomerSessionAccess(RequestBody):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"client_secret": "cuss_0000000000000000000000000_secret_abc"}]}
    )

    client_secret: ClientSecret = Field(description="The customer session's `client_secret`")


class CustomerSheetSessionOut(BaseModel):
    """Everything a native customer sheet needs, in one answer; it is not stored as such."""

    object: Literal["customer_sheet_session"] = "customer_sheet_session"
    livemode: bool
    created: int
    customer: str = Field(description="The `cus_` id")
    customer_session: str = Field(description="The customer session listing the saved cards")
    customer_session_client_secret: str = Field(description="Its client secret, shown once")
    setup_intent: str = Field(description="The setup intent that saves a new card")
    setup_intent_client_secret: str = Field(description="Its client secret, shown once")
    publishable_key: str = Field(description="The key the app calls the client-side routes with")
    expires_at: int = Field(description="When the sheet's session ends, in Unix seconds")
