"""Installations, their per-environment settings, and the keys that authenticate them."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import CheckConstraint, ForeignKey, Index, func, text
from sqlalchemy.dialects.postgresql import ARRAY, TEXT
from sqlalchemy.orm import Mapped, mapped_column

from moneyrail.models.base import Base, TenantOwned

INSTALLATION_KINDS = ("direct", "platform")
PROCESSORS = ("sandbox", "stripe")


class Installation(Base):
    __tablename__ = "installations"
    __table_args__ = (CheckConstraint("kind IN ('direct', 'platform')", name="kind"),)

    id: Mapped[str] = mapped_column(primary_key=True)
    name: Mapped[str]
    kind: Mapped[str]
    created_at: Mapped[datetime] = mapped_column(server_default=func.now())


class EnvironmentSettings(Base):
    """What an installation may do in one environment, set by the operator."""

    __tablename__ = "environment_settings"
    __table_args__ = (
        CheckConstraint("commission_basis_points BETWEEN 0 AND 10000", name="commission_basis_points"),
        CheckConstraint("commission_fixed_amount >= 0", name="commission_fixed_amount"),
        CheckConstraint("rate_limit_per_second >= 0", name="rate_limit_per_second"),
        CheckConstraint("processor IN ('sandbox', 'stripe')", name="processor"),
        CheckConstraint("NOT (livemode AND processor = 'sandbox')", name="processor_never_simulated_live"),
        CheckConstraint("processor <> 'stripe' OR processor_key IS NOT NULL", name="processor_key"),
    )

    installation_id: Mapped[str] = mapped_column(ForeignKey("installations.id"), primary_key=True)
    livemode: Mapped[bool] = mapped_column(primary_key=True)
    checkout_enabled: Mapped[bool] = mapped_column(server_default=text("false"))
    recurring_enabled: Mapped[bool] = mapped_column(server_default=text("false"))
    return_urls: Mapped[list[str]] = mapped_column(ARRAY(TEXT), server_default=text("'{}'"))
    # where the merchant's browser may return from the OAuth consent page, each registered exactly
    oauth_redirect_uris: Mapped[list[str]] = mapped_column(ARRAY(TEXT), server_default=text("'{}'"))
    commission_basis_points: Mapped[int] = mapped_column(server_default=text("0"))
    commission_fixed_amount: Mapped[int] = mapped_column(server_default=text("0"))
    # requests per second per API key; null: the service-wide MONEYRAIL_RATE_LIMIT_PER_SECOND; 0: no limit
    rate_limit_per_second: Mapped[int | None]
    # where the environment's own payouts go; null: none registered (the sandbox then uses its test account)
    payout_bank_account: Mapped[str | None]
    # who moves the money (CONVENTIONS.md §12): `sandbox` (the simulator, never live), `stripe`, or null
    # (a live environment not set yet: every request that needs a processor is refused)
    processor: Mapped[str | None]
    # the Stripe secret or restricted key, sealed (kit/crypto.py), and what may be shown of it
    processor_key: Mapped[str | None]
    processor_key_hint: Mapped[str | None]  # `sk_live_…1234`
    processor_publishable_key: Mapped[str | None]  # `pk_live_…`, for Stripe.js (not secret)
    # the signing secret of the Stripe webhook endpoint that posts to this environment, sealed
    processor_webhook_secret: Mapped[str | None]
    processor_webhook_secret_hint: Mapped[str | None]  # `whsec_…abcd`
    # the signing secret of the environment's Stripe Connect endpoint (events on connected accounts), sealed
    processor_connect_webhook_secret: Mapped[str | None]
    processor_connect_webhook_secret_hint: Mapped[str | None]
    updated_at: Mapped[datetime] = mapped_column(server_default=func.now())


class ApiKey(TenantOwned, Base):
    """A secret key. Only its SHA-256 is stored; the secret is shown once, at creation."""

    __tablename__ = "api_keys"
    __table_args__ = (Index("ix_api_keys_installation", "installation_id", "livemode"),)

    id: Mapped[str] = mapped_column(primary_key=True)
    secret_hash: Mapped[str] = mapped_column(unique=True)
    secret_last4: Mapped[str]
    name: Mapped[str] = mapped_column(server_default="")
    scopes: Mapped[list[str]] = mapped_column(ARRAY(TEXT))
    revoked_at: Mapped[datetime | None]


class PublishableKey(TenantOwned, Base):
    """A client-side key (`pk_test_…`); it is not secret, so it is stored as it is."""

    __tablename__ = "publishable_keys"
    __table_args__ = (Index("ix_publishable_keys_installation", "installation_id", "livemode"),)

    id: Mapped[str] = mapped_column(primary_key=True)
    revoked_at: Mapped[datetime | None]
