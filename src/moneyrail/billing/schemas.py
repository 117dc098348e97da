from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from moneyrail.kit.schemas import Currency, Metadata, RequestBody, ResourceOut
from moneyrail.payments.schemas import DistributionIn

ObjectId = Annotated[str, StringConstraints(min_length=1, max_length=255)]
Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=250)]
Description = Annotated[str, StringConstraints(max_length=1000)]
PricingModelName = Literal["per_unit", "volume", "graduated"]
IntervalName = Literal["month", "year"]
SubscriptionStatus = Literal["incomplete", "active", "past_due", "canceled", "review_required"]
InvoiceStatus = Literal["open", "paid", "failed", "void"]


# --- products ---------------------------------------------------------------------------------
class ProductCreate(RequestBody):
    name: Name
    description: Description | None = None
    metadata: Metadata = Field(default_factory=dict)


class ProductUpdate(RequestBody):
    """Presentation and availability only: a product carries no financial terms."""

    name: Name | None = None
    description: Description | None = None
    active: bool | None = None
    metadata: Metadata | None = None


class EmptyBody(RequestBody):
    """This operation takes no parameters, and still refuses unknown ones."""


class ProductOut(ResourceOut):
    object: Literal["product"] = "product"
    name: str
    description: str | None
    active: bool
    archived: bool
    metadata: dict[str, str]


# --- prices -----------------------------------------------------------------------------------
class TierIn(RequestBody):
    up_to: int | None = Field(description="Upper bound of the tier (inclusive); null for the last")
    unit_amount: int = Field(description="Minor units per unit in this tier")
    flat_amount: int = 0


class PriceTerms(RequestBody):
    """A price's terms: the body of POST /v1/prices and a subscription's `price_data`."""

    currency: Currency
    interval: IntervalName
    interval_count: int = Field(default=1, ge=1, le=12)
    pricing_model: PricingModelName = "per_unit"
    amount: int | None = Field(default=None, description="per_unit only")
    tiers: list[TierIn] | None = Field(default=None, max_length=51, description="volume and graduated only")
    name: Name | None = None
    metadata: Metadata = Field(default_factory=dict)


class PriceCreate(PriceTerms):
    product: ObjectId


class PriceData(PriceTerms):
    product: ObjectId


class TierOut(BaseModel):
    up_to: int | None
    unit_amount: int
    flat_amount: int


class PriceOut(ResourceOut):
    object: Literal["price"] = "price"
    product: str
    name: str | None
    currency: str
    interval: IntervalName
    interval_count: int
    pricing_model: PricingModelName
    amount: int | None
    tiers: list[TierOut] | None
    active: bool
    metadata: dict[str, str]


class QuoteRequest(RequestBody):
    quantity: int = Field(ge=1, le=10000)


class QuoteOut(BaseModel):
    object: Literal["price_quote"] = "price_quote"
    price: str
    quantity: int
    amount: int
    currency: str


# --- subscriptions ----------------------------------------------------------------------------
class SubscriptionCreate(RequestBody):
    price: ObjectId | None = None
    price_data: PriceData | None = None
    customer: ObjectId
    quantity: int = 1
    distribution: DistributionIn | None = None
    metadata: Metadata = Field(default_factory=dict)


class SubscriptionCancel(RequestBody):
    at_period_end: bool = False


class SubscriptionOut(ResourceOut):
    object: Literal["subscription"] = "subscription"
    customer: str
    price: str
    quantity: int
    currency: str
    amount: int = Field(description="What one cycle costs at the current terms")
    interval: IntervalName
    interval_count: int
    status: SubscriptionStatus
    review_reason: str | None
    entitled: bool = Field(description="now < access_until, whatever the status")
    access_until: int | None
    current_period_start: int
    current_period_end: int
    cancel_at_period_end: bool
    canceled_at: int | None
    terms_version: int
    distribution_version: int
    distribution: dict[str, Any] | None
    latest_invoice: str | None
    metadata: dict[str, str]


class SubscriptionInvoiceOut(ResourceOut):
    object: Literal["subscription_invoice"] = "subscription_invoice"
    subscription: str
    billing_kind: Literal["cycle", "upgrade"]
    status: InvoiceStatus
    amount: int
    currency: str
    period_start: int
    period_end: int
    payment_intent: str
    terms_version: int
    distribution_version: int | None
    allocation_group: str | None
    settlement_status: str
    failure_code: str | None
    paid_at: int | None


# --- changes --------------------------------------------------------------------------------------
ChangeEffective = Literal["immediate", "next_cycle"]
ChangeStatus = Literal["open", "accepted", "awaiting_payment", "applied", "canceled", "expired"]


class ChangeCreate(RequestBody):
    """A change of price and/or quantity, quoted against the subscription's current terms."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "price": "price_0000000000000000000000000",
                    "quantity": 2,
                    "expected_version": 1,
                    "effective": "immediate",
                }
            ]
        }
    )

    price: ObjectId | None = Field(
        default=None,
        description="The desired `price_` id (same currency and frequency); omitted: the current one",
    )
    quantity: int | None = Field(
        default=None, description="The desired quantity, 1 to 10000; omitted: the current one"
    )
    expected_version: int = Field(description="Must equal the subscription's `terms_version`")
    effective: ChangeEffective = Field(
        description="`immediate` (the prorated difference is charged now) or `next_cycle` (at renewal)"
    )


class ChangeCancel(RequestBody):
    """Withdrawing a change takes no parameters, and still refuses unknown ones."""

    model_config = ConfigDict(json_schema_extra={"examples": [{}]})


class SubscriptionChangeOut(ResourceOut):
    object: Literal["subscription_change"] = "subscription_change"
    subscription: str = Field(description="The `sub_` id changed")
    price: str = Field(description="The proposed `price_` id")
    quantity: int = Field(description="The proposed quantity")
    currency: str = Field(description="The subscription's currency (a change never alters it)")
    effective: ChangeEffective = Field(description="`immediate` or `next_cycle`")
    status: ChangeStatus = Field(
        description="`open`, `accepted`, `awaiting_payment`, `applied`, `canceled` or `expired`"
    )
    expected_version: int = Field(description="The `terms_version` this proposal was quoted against")
    current_amount: int = Field(description="One cycle's total at the current terms, in minor units")
    amount: int = Field(description="One cycle's total at the proposed terms, in minor units")
    amount_due: int = Field(
        description="Payable now: ceil((amount - current_amount) x remaining / period) for `immediate`, 0 "
        "for `next_cycle`"
    )
    expires_at: int = Field(
        description="When an unaccepted proposal expires (15 minutes after it was quoted)"
    )
    subscription_invoice: str | None = Field(
        description="The `upgrade` collection record of an immediate change's difference, once opened"
    )
    accepted_at: int | None = Field(description="When the payer confirmed a next_cycle change")
    applied_at: int | None = Field(description="When the new terms came into force")
    canceled_at: int | None = Field(description="When the change was withdrawn")


# --- distribution versions ------------------------------------------------------------------------
class DistributionUpdate(RequestBody):
    """A new version of a platform subscription's shares, for invoices opened from now on."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "distribution": {
                        "merchant_of_record": "acct_0000000000000000000000000",
                        "allocations": [
                            {
                                "recipient": "acct_0000000000000000000000000",
                                "role": "merchant",
                                "basis_points": 7000,
                            },
                            {
                                "recipient": "acct_1111111111111111111111111",
                                "role": "courier",
                                "basis_points": 3000,
                            },
                        ],
                    },
                    "expected_version": 1,
                }
            ]
        }
    )

    distribution: DistributionIn = Field(
        description="The shares in basis_points summing to 10000, with the same merchant_of_record"
    )
    expected_version: int = Field(description="Must equal the subscription's `distribution_version`")
