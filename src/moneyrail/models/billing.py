"""The billing catalog (products, immutable prices), subscriptions and their collection records."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import CheckConstraint, ForeignKey, Index, text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from moneyrail.models.base import Base, TenantOwned


class Product(TenantOwned, Base):
    __tablename__ = "products"
    __table_args__ = (Index("ix_products_list", "installation_id", "livemode", "created_at", "id"),)

    id: Mapped[str] = mapped_column(primary_key=True)
    name: Mapped[str]
    description: Mapped[str | None]
    active: Mapped[bool] = mapped_column(server_default=text("true"))
    archived_at: Mapped[datetime | None]
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", server_default=text("'{}'::jsonb"))
    updated_at: Mapped[datetime] = mapped_column(server_default=text("now()"))


class Price(TenantOwned, Base):
    """Immutable terms: only `active` (archive) ever changes."""

    __tablename__ = "prices"
    __table_args__ = (
        CheckConstraint("interval IN ('month', 'year')", name="interval"),
        CheckConstraint("interval_count BETWEEN 1 AND 12", name="interval_count"),
        CheckConstraint("pricing_model IN ('per_unit', 'volume', 'graduated')", name="pricing_model"),
        CheckConstraint(
            "(pricing_model = 'per_unit') = (amount IS NOT NULL AND tiers IS NULL)", name="terms"
        ),
        Index("ix_prices_list", "installation_id", "livemode", "created_at", "id"),
    )

    id: Mapped[str] = mapped_column(primary_key=True)
    product_id: Mapped[str] = mapped_column(ForeignKey("products.id"))
    name: Mapped[str | None]
    currency: Mapped[str]
    interval: Mapped[str]
    interval_count: Mapped[int]
    pricing_model: Mapped[str]
    amount: Mapped[int | None]
    tiers: Mapped[list[dict[str, Any]] | None] = mapped_column(JSONB(none_as_null=True))
    active: Mapped[bool] = mapped_column(server_default=text("true"))
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", server_default=text("'{}'::jsonb"))


SUBSCRIPTION_STATUSES = ("incomplete", "active", "past_due", "canceled", "review_required")


class Subscription(TenantOwned, Base):
    __tablename__ = "subscriptions"
    __table_args__ = (
        CheckConstraint(
            "status IN ('incomplete', 'active', 'past_due', 'canceled', 'review_required')", name="status"
        ),
        CheckConstraint("quantity BETWEEN 1 AND 10000", name="quantity"),
        Index("ix_subscriptions_list", "installation_id", "livemode", "created_at", "id"),
        # the renewal sweep's question: which subscriptions' periods have ended
        Index(
            "ix_subscriptions_due",
            "current_period_end",
            postgresql_where=text("status IN ('active', 'incomplete')"),
        ),
    )

    id: Mapped[str] = mapped_column(primary_key=True)
    customer_id: Mapped[str] = mapped_column(ForeignKey("customers.id"))
    # the connected merchant it sells for: each renewal checks its grant is still active
    merchant_id: Mapped[str | None] = mapped_column(ForeignKey("merchants.id"))
    price_id: Mapped[str] = mapped_column(ForeignKey("prices.id"))
    quantity: Mapped[int]
    currency: Mapped[str]
    status: Mapped[str]
    review_reason: Mapped[str | None]
    # the calendar: cycle n runs from boundary(anchor, n - anchor_cycle) to boundary(anchor,
    # n - anchor_cycle + 1); a monthly/yearly switch moves the anchor to its renewal and counts on
    anchor_at: Mapped[datetime]
    anchor_cycle: Mapped[int] = mapped_column(server_default=text("0"))
    cycle: Mapped[int] = mapped_column(server_default=text("0"))
    current_period_start: Mapped[datetime]
    current_period_end: Mapped[datetime]
    access_until: Mapped[datetime | None]
    cancel_at_period_end: Mapped[bool] = mapped_column(server_default=text("false"))
    canceled_at: Mapped[datetime | None]
    terms_version: Mapped[int] = mapped_column(server_default=text("1"))
    distribution_version: Mapped[int] = mapped_column(server_default=text("1"))
    distribution: Mapped[dict[str, Any] | None] = mapped_column(JSONB(none_as_null=True))
    renewal_consented_at: Mapped[datetime | None]
    latest_invoice_id: Mapped[str | None]
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", server_default=text("'{}'::jsonb"))
    updated_at: Mapped[datetime] = mapped_column(server_default=text("now()"))


class SubscriptionInvoice(TenantOwned, Base):
    """A collection record: one per cycle (the unique index is what makes a second one impossible,
    whatever the scheduler fail-overs), or an upgrade difference."""

    __tablename__ = "subscription_invoices"
    __table_args__ = (
        CheckConstraint("status IN ('open', 'paid', 'failed', 'void')", name="status"),
        CheckConstraint("billing_kind IN ('cycle', 'upgrade')", name="billing_kind"),
        CheckConstraint(
            "settlement_status IN "
            "('not_applicable', 'pending', 'distributing', 'settled', 'failed', 'canceled')",
            name="settlement_status",
        ),
        CheckConstraint("amount > 0", name="amount"),
        Index(
            "uq_subscription_invoices_cycle",
            "subscription_id",
            "cycle",
            unique=True,
            postgresql_where=text("billing_kind = 'cycle'"),
        ),
        Index("ix_subscription_invoices_list", "subscription_id", "created_at", "id"),
        Index("ix_subscription_invoices_payment", "payment_intent_id"),
    )

    id: Mapped[str] = mapped_column(primary_key=True)
    subscription_id: Mapped[str] = mapped_column(ForeignKey("subscriptions.id"))
    billing_kind: Mapped[str]
    cycle: Mapped[int]
    status: Mapped[str]
    amount: Mapped[int]
    currency: Mapped[str]
    period_start: Mapped[datetime]
    period_end: Mapped[datetime]
    payment_intent_id: Mapped[str] = mapped_column(ForeignKey("payment_intents.id"))
    terms_version: Mapped[int]
    distribution_version: Mapped[int | None]
    distribution: Mapped[dict[str, Any] | None] = mapped_column(
        JSONB(none_as_null=True)
    )  # the cycle's snapshot
    settlement_status: Mapped[str] = mapped_column(server_default="not_applicable")
    allocation_group_id: Mapped[str | None] = mapped_column(ForeignKey("allocation_groups.id"))
    operation_id: Mapped[str | None] = mapped_column(ForeignKey("operations.id"))
    failure_code: Mapped[str | None]
    # {code, message, at}: the last error its renewal operation met (engine AttemptError)
    last_operation_error: Mapped[dict[str, Any] | None] = mapped_column(JSONB(none_as_null=True))
    paid_at: Mapped[datetime | None]
    failed_at: Mapped[datetime | None]
    updated_at: Mapped[datetime] = mapped_column(server_default=text("now()"))


CHANGE_STATUSES = ("open", "accepted", "awaiting_payment", "applied", "canceled", "expired")
UNAPPLIED_CHANGE_STATUSES = ("open", "accepted", "awaiting_payment")


class SubscriptionChange(TenantOwned, Base):
    """An immutable proposal of new terms (price, quantity) quoted against one `terms_version`: only its
    status moves. At most one unapplied proposal per subscription (the partial unique index)."""

    __tablename__ = "subscription_changes"
    __table_args__ = (
        CheckConstraint(
            "status IN ('open', 'accepted', 'awaiting_payment', 'applied', 'canceled', 'expired')",
            name="status",
        ),
        CheckConstraint("effective IN ('immediate', 'next_cycle')", name="effective"),
        CheckConstraint("amount_due >= 0", name="amount_due"),
        CheckConstraint("quantity BETWEEN 1 AND 10000", name="quantity"),
        Index("ix_subscription_changes_list", "subscription_id", "created_at", "id"),
        Index(
            "uq_subscription_changes_unapplied",
            "subscription_id",
            unique=True,
            postgresql_where=text("status IN ('open', 'accepted', 'awaiting_payment')"),
        ),
        Index("ix_subscription_changes_expiring", "expires_at", postgresql_where=text("status = 'open'")),
    )

    id: Mapped[str] = mapped_column(primary_key=True)
    subscription_id: Mapped[str] = mapped_column(ForeignKey("subscriptions.id"))
    price_id: Mapped[str] = mapped_column(ForeignKey("prices.id"))
    quantity: Mapped[int]
    currency: Mapped[str]
    effective: Mapped[str]
    status: Mapped[str]
    terms_version: Mapped[int]  # the subscription's terms this proposal was quoted against
    current_amount: Mapped[int]  # the cycle total at those terms
    amount: Mapped[int]  # the new cycle total
    amount_due: Mapped[int]  # payable now (immediate), 0 for next_cycle
    expires_at: Mapped[datetime]
    invoice_id: Mapped[str | None] = mapped_column(ForeignKey("subscription_invoices.id"))
    accepted_at: Mapped[datetime | None]
    applied_at: Mapped[datetime | None]
    canceled_at: Mapped[datetime | None]
    updated_at: Mapped[datetime] = mapped_column(server_default=text("now()"))
