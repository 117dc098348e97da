from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from moneyrail.kit.schemas import (
    LAST_OPERATION_ERROR,
    Currency,
    Metadata,
    OperationErrorOut,
    RequestBody,
    ResourceOut,
)
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
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"name": "Pro plan", "description": "Everything, for teams"}]}
    )

    name: Name = Field(description="Shown to payers, on the hosted checkout page: 1 to 250 characters")
    description: Description | None = Field(default=None, description="Up to 1000 characters")
    metadata: Metadata = Field(default_factory=dict)


class ProductUpdate(RequestBody):
    """Presentation and availability only: a product carries no financial terms."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"name": "Pro plan (2027)", "active": False}]})

    name: Name | None = Field(default=None, description="A new name: 1 to 250 characters")
    description: Description | None = Field(default=None, description="A new description")
    active: bool | None = Field(
        default=None,
        description="`false` closes the product to new prices and subscriptions until set back to `true`; "
        "an archived product cannot be reactivated",
    )
    metadata: Metadata | None = Field(
        default=None, description="Merged into the product's metadata; an empty value removes a key"
    )


class EmptyBody(RequestBody):
    """This operation takes no parameters, and still refuses unknown ones."""

    model_config = ConfigDict(json_schema_extra={"examples": [{}]})


class ProductOut(ResourceOut):
    object: Literal["product"] = Field(default="product", description="Always `product`")
    name: str = Field(description="Shown to payers")
    description: str | None = Field(description="The product's description; null when none was set")
    active: bool = Field(description="Whether the product takes new prices and subscriptions")
    archived: bool = Field(
        description="Archived for good: closed to new subscriptions; existing ones renew until cancelled"
    )
    metadata: dict[str, str] = Field(description="Your own key-value pairs, as you set them")


# --- prices -----------------------------------------------------------------------------------
class TierIn(RequestBody):
    up_to: int | None = Field(
        description="Upper bound of the tier (inclusive), ascending across tiers; null for the last"
    )
    unit_amount: int = Field(description="Minor units per unit in this tier; not negative")
    flat_amount: int = Field(
        default=0, description="Minor units added once when the tier is used; not negative"
    )


class PriceTerms(RequestBody):
    """A price's terms: the body of POST /v1/prices and a subscription's `price_data`."""

    currency: Currency
    interval: IntervalName = Field(description="The billing period's unit: `month` or `year`")
    interval_count: int = Field(
        default=1, ge=1, le=12, description="Periods of `interval` per cycle: 1 to 12"
    )
    pricing_model: PricingModelName = Field(
        default="per_unit",
        description="`per_unit` (quantity x `amount`), `volume` (the whole quantity at the tier it falls in) "
        "or `graduated` (each tier's segment at its own rate)",
    )
    amount: int | None = Field(
        default=None, description="Minor units per unit; `per_unit` only, where it is required"
    )
    tiers: list[TierIn] | None = Field(
        default=None, max_length=51, description="`volume` and `graduated` only: up to 50 tiers"
    )
    name: Name | None = Field(default=None, description="An internal name for the price")
    metadata: Metadata = Field(default_factory=dict)


PRICE_EXAMPLE: dict[str, Any] = {
    "product": "prod_000000000000000000000000",
    "currency": "eur",
    "interval": "month",
    "amount": 1500,
}


class PriceCreate(PriceTerms):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                PRICE_EXAMPLE,
                {
                    "product": "prod_000000000000000000000000",
                    "currency": "eur",
                    "interval": "year",
                    "pricing_model": "graduated",
                    "tiers": [
                        {"up_to": 10, "unit_amount": 1000, "flat_amount": 500},
                        {"up_to": None, "unit_amount": 800},
                    ],
                },
            ]
        }
    )

    product: ObjectId = Field(description="The `prod_` id the price belongs to; an active product")


class PriceData(PriceTerms):
    """A new price created with the subscription: the body of POST /v1/prices."""

    model_config = ConfigDict(json_schema_extra={"examples": [PRICE_EXAMPLE]})

    product: ObjectId = Field(description="The `prod_` id the price belongs to; an active product")


class TierOut(BaseModel):
    up_to: int | None = Field(description="Upper bound of the tier (inclusive); null for the last")
    unit_amount: int = Field(description="Minor units per unit in this tier")
    flat_amount: int = Field(description="Minor units added once when the tier is used")


class PriceOut(ResourceOut):
    object: Literal["price"] = Field(default="price", description="Always `price`")
    product: str = Field(description="The `prod_` id the price belongs to")
    name: str | None = Field(description="The price's internal name; null when none was set")
    currency: str = Field(description="A lowercase ISO 4217 currency code, such as `eur`")
    interval: IntervalName = Field(description="The billing period's unit: `month` or `year`")
    interval_count: int = Field(description="Periods of `interval` per cycle: 1 to 12")
    pricing_model: PricingModelName = Field(description="`per_unit`, `volume` or `graduated`")
    amount: int | None = Field(description="Minor units per unit (`per_unit`); null with tiers")
    tiers: list[TierOut] | None = Field(description="The tiers (`volume`, `graduated`); null for `per_unit`")
    active: bool = Field(description="`false` once archived: no new subscriptions, existing ones unchanged")
    metadata: dict[str, str] = Field(description="Your own key-value pairs, as you set them")


class QuoteRequest(RequestBody):
    model_config = ConfigDict(json_schema_extra={"examples": [{"quantity": 12}]})

    quantity: int = Field(ge=1, le=10000, description="The quantity to price: 1 to 10000")


class QuoteOut(BaseModel):
    object: Literal["price_quote"] = Field(default="price_quote", description="Always `price_quote`")
    price: str = Field(description="The `price_` id quoted")
    quantity: int = Field(description="The quantity quoted")
    amount: int = Field(description="The exact total for `quantity`, in minor units; nothing is charged")
    currency: str = Field(description="The price's currency")


# --- subscriptions ----------------------------------------------------------------------------
class SubscriptionCreate(RequestBody):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "price": "price_000000000000000000000000",
                    "customer": "cus_000000000000000000000000",
                    "quantity": 2,
                }
            ]
        }
    )

    price: ObjectId | None = Field(
        default=None, description="An active `price_` id; exclusive with `price_data`"
    )
    price_data: PriceData | None = Field(
        default=None, description="A new price created for this subscription; exclusive with `price`"
    )
    customer: ObjectId = Field(description="The `cus_` id who pays")
    merchant: ObjectId | None = Field(
        default=None,
        description="The connected merchant (`mer_`) this subscription sells for: active and able to take "
        "payments; a renewal after its grant was revoked stops for review (`merchant_grant_revoked`)",
    )
    quantity: int = Field(default=1, description="1 to 10000")
    distribution: DistributionIn | None = Field(
        default=None,
        description="Required on a platform installation: who receives each cycle, in `basis_points` "
        "summing to 10000, with the `merchant_of_record`; needs payments:write and transfers:write",
    )
    metadata: Metadata = Field(default_factory=dict)


class SubscriptionCancel(RequestBody):
    model_config = ConfigDict(json_schema_extra={"examples": [{"at_period_end": True}]})

    at_period_end: bool = Field(
        default=False,
        description="`true`: renewals stop and access lasts to the end of the paid period; `false`: "
        "canceled now. No refund either way",
    )


class SubscriptionOut(ResourceOut):
    object: Literal["subscription"] = Field(default="subscription", description="Always `subscription`")
    customer: str = Field(description="The `cus_` id who pays")
    merchant: str | None = Field(
        default=None, description="The connected merchant (`mer_`) it sells for, if one was named"
    )
    price: str = Field(description="The `price_` id of the current terms")
    quantity: int = Field(description="The quantity of the current terms: 1 to 10000")
    currency: str = Field(description="The subscription's one currency")
    amount: int = Field(description="What one cycle costs at the current terms")
    interval: IntervalName = Field(description="The billing period's unit: `month` or `year`")
    interval_count: int = Field(description="Periods of `interval` per cycle")
    status: SubscriptionStatus = Field(
        description="`incomplete` (first payment not made), `active`, `past_due` (a renewal declined), "
        "`canceled` or `review_required` (a safety check stopped automation)"
    )
    review_reason: str | None = Field(description="Why automation stopped (`review_required`); else null")
    entitled: bool = Field(description="now < access_until, whatever the status")
    access_until: int | None = Field(
        description="End of the paid access, Unix seconds; the source for access decisions; null until "
        "the first payment"
    )
    current_period_start: int = Field(description="Start of the current period, Unix seconds (UTC)")
    current_period_end: int = Field(description="End of the current period, Unix seconds (UTC)")
    cancel_at_period_end: bool = Field(
        description="A scheduled cancellation: renewals stop; the status stays `active` to the period end"
    )
    canceled_at: int | None = Field(description="When the subscription was canceled, Unix seconds; else null")
    terms_version: int = Field(description="Version of the price and quantity terms")
    distribution_version: int = Field(description="Version of the distribution rules")
    distribution: dict[str, Any] | None = Field(
        description="Who receives each cycle, in basis points (platform installations); else null"
    )
    latest_invoice: str | None = Field(description="The `subinv_` id of the latest collection record")
    metadata: dict[str, str] = Field(description="Your own key-value pairs, as you set them")


class SubscriptionInvoiceOut(ResourceOut):
    object: Literal["subscription_invoice"] = Field(
        default="subscription_invoice", description="Always `subscription_invoice`: a collection record"
    )
    subscription: str = Field(description="The `sub_` id collected for")
    billing_kind: Literal["cycle", "upgrade"] = Field(
        description="`cycle` for a cycle's collection, `upgrade` for a plan change's difference"
    )
    status: InvoiceStatus = Field(
        description="`open` (its renewal charges it, retries, or waits in `dead_letter` for an operator), "
        "`paid`, `failed` (declined, or its renewal discarded by an operator) or `void`"
    )
    amount: int = Field(description="The amount collected, in minor units")
    currency: str = Field(description="A lowercase ISO 4217 currency code")
    period_start: int = Field(description="Start of the period paid for, Unix seconds (UTC)")
    period_end: int = Field(description="End of the period paid for, Unix seconds (UTC)")
    payment_intent: str = Field(description="The `pi_` id of the payment collecting it")
    terms_version: int = Field(description="The subscription's terms_version it was opened under")
    distribution_version: int | None = Field(
        description="The distribution_version snapshot it distributes; null without a distribution"
    )
    allocation_group: str | None = Field(description="The allocation group distributing it, once committed")
    settlement_status: str = Field(
        description="`not_applicable`, `pending`, `distributing`, `settled` or `failed`: a collected "
        "payment is not a finished distribution"
    )
    failure_code: str | None = Field(
        description="The decline code of a failed collection (`operation_discarded` when an operator "
        "discarded its renewal); else null"
    )
    operation: str | None = Field(
        description="The `op_` renewal operation that charges it (GET /v1/operations/{id}); null for a "
        "collection the payer pays at a checkout"
    )
    last_operation_error: OperationErrorOut | None = Field(description=LAST_OPERATION_ERROR)
    paid_at: int | None = Field(description="When it was paid, Unix seconds; else null")


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
