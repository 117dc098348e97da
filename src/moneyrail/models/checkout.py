"""Checkout sessions: a hosted page that takes one payment (or, later, a subscription's) from a payer.

The checkout URL is a credential: only its SHA-256 is kept (`token_hash`), never the token itself.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import CheckConstraint, ForeignKey, Index, text
from sqlalchemy.orm import Mapped, mapped_column

from moneyrail.models.base import Base, TenantOwned

CHECKOUT_SESSION_STATUSES = ("open", "complete", "expired")


class CheckoutSession(TenantOwned, Base):
    __tablename__ = "checkout_sessions"
    __table_args__ = (
        CheckConstraint("status IN ('open', 'complete', 'expired')", name="status"),
        # a session takes one payment: a one-off payment, or a subscription invoice's payment (a
        # subscription session names the subscription and invoice beside it); only a next_cycle change's
        # session takes none (the page confirms the change)
        CheckConstraint("payment_intent_id IS NOT NULL OR change_id IS NOT NULL", name="subject"),
        Index("ix_checkout_sessions_list", "installation_id", "livemode", "created_at", "id"),
        # the expiry sweep's question: open sessions, soonest expiry first
        Index("ix_checkout_sessions_open", "expires_at", postgresql_where=text("status = 'open'")),
        Index("ix_checkout_sessions_payment_intent", "payment_intent_id"),
    )

    id: Mapped[str] = mapped_column(primary_key=True)
    payment_intent_id: Mapped[str | None] = mapped_column(ForeignKey("payment_intents.id"))
    # a subscription checkout: the subscription, the change consented to, and the invoice
    subscription_id: Mapped[str | None]
    change_id: Mapped[str | None]
    invoice_id: Mapped[str | None]
    title: Mapped[str]
    success_url: Mapped[str]
    cancel_url: Mapped[str]
    token_hash: Mapped[str] = mapped_column(unique=True)
    status: Mapped[str] = mapped_column(server_default="open")
    expires_at: Mapped[datetime]  # on the tenant's clock (the sandbox clock in the sandbox)
    completed_at: Mapped[datetime | None]
    expired_at: Mapped[datetime | None]
    updated_at: Mapped[datetime] = mapped_column(server_default=text("now()"))
