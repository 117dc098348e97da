"""Payment invoices (spec 4.K): a draft with lines for a customer, finalized into a numbered, immutable
invoice with the payment that pays it, and sent by e-mail with a hosted payment link.

Numbers run per installation and environment without gaps: `invoice_number_counters` holds the last
number given, and finalization takes the next one in its own transaction (a rolled-back finalization
gives its number back). A finalized invoice's terms cannot change: the database refuses it (migration
0017's trigger), not only the service.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import CheckConstraint, ForeignKey, Index, text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from moneyrail.models.base import Base, TenantOwned

INVOICE_STATUSES = ("draft", "open", "paid")
INVOICE_DELIVERY_STATUSES = ("pending", "sent", "failed")


class Invoice(TenantOwned, Base):
    __tablename__ = "invoices"
    __table_args__ = (
        CheckConstraint("status IN ('draft', 'open', 'paid')", name="status"),
        CheckConstraint("amount_due > 0", name="amount_due"),
        # a finalized invoice always has its number and its payment
        CheckConstraint(
            "status = 'draft' OR (number IS NOT NULL AND payment_intent_id IS NOT NULL)", name="finalized"
        ),
        Index("ix_invoices_list", "installation_id", "livemode", "created_at", "id"),
        Index(
            "uq_invoices_number",
            "installation_id",
            "livemode",
            "number_sequence",
            unique=True,
            postgresql_where=text("number_sequence IS NOT NULL"),
        ),
        Index(
            "uq_invoices_payment_intent",
            "payment_intent_id",
            unique=True,
            postgresql_where=text("payment_intent_id IS NOT NULL"),
        ),
    )

    id: Mapped[str] = mapped_column(primary_key=True)
    status: Mapped[str] = mapped_column(server_default="draft")
    customer_id: Mapped[str] = mapped_column(ForeignKey("customers.id"))
    currency: Mapped[str]
    # [{description, quantity, unit_amount, amount}], in the caller's order
    lines: Mapped[list[dict[str, Any]]] = mapped_column(JSONB)
    amount_due: Mapped[int]
    description: Mapped[str | None]
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", server_default=text("'{}'::jsonb"))
    success_url: Mapped[str | None]
    cancel_url: Mapped[str | None]
    number_sequence: Mapped[int | None]
    number: Mapped[str | None]
    payment_intent_id: Mapped[str | None] = mapped_column(ForeignKey("payment_intents.id"))
    finalized_at: Mapped[datetime | None]
    paid_at: Mapped[datetime | None]
    updated_at: Mapped[datetime] = mapped_column(server_default=text("now()"))


class InvoiceNumberCounter(Base):
    """The last invoice number given in one installation's environment."""

    __tablename__ = "invoice_number_counters"

    installation_id: Mapped[str] = mapped_column(ForeignKey("installations.id"), primary_key=True)
    livemode: Mapped[bool] = mapped_column(primary_key=True)
    last_number: Mapped[int]


class InvoiceDelivery(TenantOwned, Base):
    """One sending of an invoice by e-mail, with a fresh hosted payment link (a checkout session)."""

    __tablename__ = "invoice_deliveries"
    __table_args__ = (
        CheckConstraint("channel IN ('email')", name="channel"),
        CheckConstraint("status IN ('pending', 'sent', 'failed')", name="status"),
        Index("ix_invoice_deliveries_invoice", "invoice_id", "created_at"),
    )

    id: Mapped[str] = mapped_column(primary_key=True)
    invoice_id: Mapped[str] = mapped_column(ForeignKey("invoices.id"))
    channel: Mapped[str]
    recipient: Mapped[str]
    status: Mapped[str] = mapped_column(server_default="pending")
    operation_id: Mapped[str | None] = mapped_column(ForeignKey("operations.id"))
    checkout_session_id: Mapped[str | None]  # the link the e-mail carried (created when it was sent)
    last_error: Mapped[str | None]
    sent_at: Mapped[datetime | None]
    updated_at: Mapped[datetime] = mapped_column(server_default=text("now()"))
