"""Disputes the card network opened on captured payments, and their evidence files (README "Disputes").

A dispute's money lives in the ledger (withdrawn when it opens, reinstated when won); an evidence file's
bytes live on disk under the files directory, never in a row: the row keeps where and what they are.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import CheckConstraint, ForeignKey, Index, text
from sqlalchemy.orm import Mapped, mapped_column

from moneyrail.models.base import Base, TenantOwned

DISPUTE_STATUSES = ("needs_response", "under_review", "won", "lost")
EVIDENCE_FILE_TYPES = ("pdf", "jpeg", "png")


class Dispute(TenantOwned, Base):
    __tablename__ = "disputes"
    __table_args__ = (
        CheckConstraint("status IN ('needs_response', 'under_review', 'won', 'lost')", name="status"),
        CheckConstraint("amount > 0", name="amount"),
        CheckConstraint("fee_amount >= 0", name="fee_amount"),
        Index("ix_disputes_list", "installation_id", "livemode", "created_at", "id"),
        # at most one dispute per payment, as the network opens them
        Index("uq_disputes_payment", "payment_intent_id", unique=True),
        Index(
            "ix_disputes_undecided",
            "installation_id",
            "livemode",
            postgresql_where=text("status IN ('needs_response', 'under_review')"),
        ),
    )

    id: Mapped[str] = mapped_column(primary_key=True)
    payment_intent_id: Mapped[str] = mapped_column(ForeignKey("payment_intents.id"))
    network_dispute: Mapped[str]  # the network's reference
    amount: Mapped[int]
    currency: Mapped[str]
    fee_amount: Mapped[int]
    reason: Mapped[str]
    status: Mapped[str] = mapped_column(server_default="needs_response")
    evidence: Mapped[dict[str, Any]] = mapped_column(server_default=text("'{}'::jsonb"))
    evidence_due_by: Mapped[datetime]
    submission_count: Mapped[int] = mapped_column(server_default=text("0"))
    submitted_at: Mapped[datetime | None]
    accepted_at: Mapped[datetime | None]  # closed by the merchant: the loss accepted
    decided_at: Mapped[datetime | None]
    withdrawal_operation_id: Mapped[str | None] = mapped_column(ForeignKey("operations.id"))
    amount_withdrawn: Mapped[int] = mapped_column(server_default=text("0"))
    amount_reinstated: Mapped[int] = mapped_column(server_default=text("0"))
    # what the withdrawal took back from the payment's transfers (a platform's recipients)
    amount_reversed: Mapped[int] = mapped_column(server_default=text("0"))
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", server_default=text("'{}'::jsonb"))
    updated_at: Mapped[datetime] = mapped_column(server_default=text("now()"))


class DisputeFile(TenantOwned, Base):
    """An evidence file: its bytes at `storage_key` under the files directory, recognised by content."""

    __tablename__ = "dispute_files"
    __table_args__ = (
        CheckConstraint("type IN ('pdf', 'jpeg', 'png')", name="type"),
        CheckConstraint("size > 0", name="size"),
        Index("ix_dispute_files_dispute", "dispute_id", "created_at"),
    )

    id: Mapped[str] = mapped_column(primary_key=True)
    dispute_id: Mapped[str] = mapped_column(ForeignKey("disputes.id"))
    type: Mapped[str]
    size: Mapped[int]
    sha256: Mapped[str]
    filename: Mapped[str | None]  # as the uploader named it: shown, never trusted
    storage_key: Mapped[str] = mapped_column(unique=True)
