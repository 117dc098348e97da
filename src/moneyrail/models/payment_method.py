"""Saved cards, the setup intents that save them, and short-lived customer sessions.

A card number never reaches these tables: the processor tokenizes it, and moneyrail keeps the token
(never shown to callers), brand, last4, expiry and a fingerprint.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import CheckConstraint, ForeignKey, Index, text
from sqlalchemy.orm import Mapped, mapped_column

from moneyrail.models.base import Base, TenantOwned


class PaymentMethod(TenantOwned, Base):
    __tablename__ = "payment_methods"
    __table_args__ = (
        Index(
            "ix_payment_methods_customer", "installation_id", "livemode", "customer_id", "created_at", "id"
        ),
        # at most one preferred method per customer, among the attached ones
        Index(
            "uq_payment_methods_preferred",
            "customer_id",
            unique=True,
            postgresql_where=text("preferred AND detached_at IS NULL"),
        ),
        CheckConstraint("exp_month BETWEEN 1 AND 12", name="exp_month"),
    )

    id: Mapped[str] = mapped_column(primary_key=True)
    customer_id: Mapped[str | None] = mapped_column(ForeignKey("customers.id"))
    # The payment account the card was saved on (spec 4.N rule 7): null is the installation's own (the
    # platform's) account; a `mer_` id is that merchant's distinct account in the direct model.
    merchant_id: Mapped[str | None] = mapped_column(ForeignKey("merchants.id"))
    processor_token: Mapped[str]
    brand: Mapped[str]
    last4: Mapped[str]
    exp_month: Mapped[int]
    exp_year: Mapped[int]
    fingerprint: Mapped[str]
    preferred: Mapped[bool] = mapped_column(server_default=text("false"))
    detached_at: Mapped[datetime | None]


class SetupIntent(TenantOwned, Base):
    __tablename__ = "setup_intents"
    __table_args__ = (
        CheckConstraint("status IN ('requires_payment_method', 'succeeded', 'canceled')", name="status"),
        CheckConstraint("cancellation_reason IN ('abandoned')", name="cancellation_reason"),
        Index("ix_setup_intents_customer", "installation_id", "livemode", "customer_id", "created_at"),
        # the sweep's search: intents still waiting for a card, by expiry
        Index(
            "ix_setup_intents_due", "expires_at", postgresql_where=text("status = 'requires_payment_method'")
        ),
    )

    id: Mapped[str] = mapped_column(primary_key=True)
    customer_id: Mapped[str] = mapped_column(ForeignKey("customers.id"))
    status: Mapped[str] = mapped_column(server_default="requires_payment_method")
    client_secret_hash: Mapped[str] = mapped_column(unique=True)
    payment_method_id: Mapped[str | None] = mapped_column(ForeignKey("payment_methods.id"))
    usage: Mapped[str] = mapped_column(server_default="off_session")
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", server_default=text("'{}'::jsonb"))
    expires_at: Mapped[datetime]
    cancellation_reason: Mapped[str | None]  # abandoned: not confirmed before expires_at
    updated_at: Mapped[datetime] = mapped_column(server_default=text("now()"))


class CustomerSession(TenantOwned, Base):
    """A short-lived client secret that lets a native sheet read and manage one customer's saved cards."""

    __tablename__ = "customer_sessions"

    id: Mapped[str] = mapped_column(primary_key=True)
    customer_id: Mapped[str] = mapped_column(ForeignKey("customers.id"))
    client_secret_hash: Mapped[str] = mapped_column(unique=True)
    expires_at: Mapped[datetime]
