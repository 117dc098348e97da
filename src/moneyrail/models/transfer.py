"""Distributions declared at payment creation, allocation groups, their allocations, transfers and
transfer reversals (CONVENTIONS.md §13).

A transfer's row carries its status for the API; its money lives in the ledger, where a posted
transfer is never changed: a reversal is a new journal entry.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import CheckConstraint, ForeignKey, Index, UniqueConstraint, text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from moneyrail.models.base import Base, TenantOwned

ALLOCATION_GROUP_STATUSES = ("open", "committing", "committed", "failed", "canceled")
TRANSFER_STATUSES = ("pending", "paid", "failed", "reversed")


class PaymentDistribution(TenantOwned, Base):
    """What a payment intent declared at creation; its allocation group is made at capture."""

    __tablename__ = "payment_distributions"

    payment_intent_id: Mapped[str] = mapped_column(ForeignKey("payment_intents.id"), primary_key=True)
    merchant_of_record: Mapped[str | None]
    # [{recipient, role, amount, commission, metadata}], in the caller's order
    allocations: Mapped[list[dict[str, Any]]] = mapped_column(JSONB, server_default=text("'[]'::jsonb"))
    allocation_group_id: Mapped[str | None]


class AllocationGroup(TenantOwned, Base):
    __tablename__ = "allocation_groups"
    __table_args__ = (
        CheckConstraint("status IN ('open', 'committing', 'committed', 'failed', 'canceled')", name="status"),
        CheckConstraint("source IN ('api', 'distribution', 'transfer')", name="source"),
        CheckConstraint("amount > 0", name="amount"),
        CheckConstraint("amount_allocated >= 0 AND amount_allocated <= amount", name="amount_allocated"),
        Index("ix_allocation_groups_list", "installation_id", "livemode", "created_at", "id"),
        Index("ix_allocation_groups_payment", "payment_intent_id"),
    )

    id: Mapped[str] = mapped_column(primary_key=True)
    payment_intent_id: Mapped[str] = mapped_column(ForeignKey("payment_intents.id"))
    amount: Mapped[int]
    amount_allocated: Mapped[int] = mapped_column(server_default=text("0"))
    currency: Mapped[str]
    status: Mapped[str] = mapped_column(server_default="open")
    source: Mapped[str] = mapped_column(server_default="api")
    operation_id: Mapped[str | None] = mapped_column(ForeignKey("operations.id"))
    failure_reason: Mapped[str | None]
    # {code, message, at}: the last error its commit met (engine AttemptError), while it waits on it
    last_operation_error: Mapped[dict[str, Any] | None] = mapped_column(JSONB(none_as_null=True))
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", server_default=text("'{}'::jsonb"))
    committed_at: Mapped[datetime | None]
    updated_at: Mapped[datetime] = mapped_column(server_default=text("now()"))


class Allocation(TenantOwned, Base):
    __tablename__ = "allocations"
    __table_args__ = (
        CheckConstraint("amount > 0", name="amount"),
        CheckConstraint("commission >= 0 AND commission <= gross_amount", name="commission"),
        UniqueConstraint("allocation_group_id", "position"),
    )

    id: Mapped[str] = mapped_column(primary_key=True)
    allocation_group_id: Mapped[str] = mapped_column(ForeignKey("allocation_groups.id"))
    position: Mapped[int]
    recipient: Mapped[str] = mapped_column(ForeignKey("connected_accounts.id"))
    role: Mapped[str | None]
    gross_amount: Mapped[int]  # as declared; `amount` is what is transferred, net of `commission`
    commission: Mapped[int] = mapped_column(server_default=text("0"))
    amount: Mapped[int]
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", server_default=text("'{}'::jsonb"))


class Transfer(TenantOwned, Base):
    __tablename__ = "transfers"
    __table_args__ = (
        CheckConstraint("status IN ('pending', 'paid', 'failed', 'reversed', 'canceled')", name="status"),
        CheckConstraint("amount > 0", name="amount"),
        CheckConstraint("amount_reversed >= 0 AND amount_reversed <= amount", name="amount_reversed"),
        CheckConstraint(
            "amount_pending_settlement >= 0 AND amount_pending_settlement <= amount - amount_reversed",
            name="amount_pending_settlement",
        ),
        Index("ix_transfers_list", "installation_id", "livemode", "created_at", "id"),
        Index("ix_transfers_group", "allocation_group_id"),
        Index("ix_transfers_source", "source_payment_intent_id"),
    )

    id: Mapped[str] = mapped_column(primary_key=True)
    allocation_group_id: Mapped[str] = mapped_column(ForeignKey("allocation_groups.id"))
    allocation_id: Mapped[str] = mapped_column(ForeignKey("allocations.id"), unique=True)
    source_payment_intent_id: Mapped[str] = mapped_column(ForeignKey("payment_intents.id"))
    destination: Mapped[str] = mapped_column(ForeignKey("connected_accounts.id"))
    amount: Mapped[int]
    currency: Mapped[str]
    status: Mapped[str] = mapped_column(server_default="pending")
    amount_reversed: Mapped[int] = mapped_column(server_default=text("0"))
    # the part still in the destination's pending balance: it settles with the source payment's fees
    amount_pending_settlement: Mapped[int] = mapped_column(server_default=text("0"))
    # a processor refusal ends one generation of keys; an operator's retry asks again under the next
    key_generation: Mapped[int] = mapped_column(server_default=text("0"))
    processor_transfer: Mapped[str | None]
    failure_code: Mapped[str | None]
    failure_message: Mapped[str | None]
    # the commit (or transfer) operation that makes it: its group's
    operation_id: Mapped[str | None] = mapped_column(ForeignKey("operations.id"))
    last_operation_error: Mapped[dict[str, Any] | None] = mapped_column(JSONB(none_as_null=True))
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", server_default=text("'{}'::jsonb"))
    paid_at: Mapped[datetime | None]
    updated_at: Mapped[datetime] = mapped_column(server_default=text("now()"))


class TransferReversal(TenantOwned, Base):
    __tablename__ = "transfer_reversals"
    __table_args__ = (
        CheckConstraint("amount > 0", name="amount"),
        Index("ix_transfer_reversals_transfer", "transfer_id", "created_at"),
        Index("ix_transfer_reversals_refund", "refund_id"),
    )

    id: Mapped[str] = mapped_column(primary_key=True)
    transfer_id: Mapped[str] = mapped_column(ForeignKey("transfers.id"))
    amount: Mapped[int]
    currency: Mapped[str]
    refund_id: Mapped[str | None] = mapped_column(ForeignKey("refunds.id"))
    processor_reversal: Mapped[str]
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", server_default=text("'{}'::jsonb"))
