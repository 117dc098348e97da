"""Reconciliation runs: the ledger's transfers compared with the processor's own records."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import CheckConstraint, ForeignKey, Index, text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from moneyrail.models.base import Base, TenantOwned


class ReconciliationRun(TenantOwned, Base):
    __tablename__ = "reconciliation_runs"
    __table_args__ = (
        CheckConstraint("status IN ('pending', 'completed', 'failed')", name="status"),
        Index("ix_reconciliation_runs_list", "installation_id", "livemode", "created_at", "id"),
    )

    id: Mapped[str] = mapped_column(primary_key=True)
    status: Mapped[str] = mapped_column(server_default="pending")
    # [{type, transfer, processor_transfer, expected, actual}]
    issues: Mapped[list[dict[str, Any]]] = mapped_column(JSONB, server_default=text("'[]'::jsonb"))
    transfers_checked: Mapped[int] = mapped_column(server_default=text("0"))
    operation_id: Mapped[str | None] = mapped_column(ForeignKey("operations.id"))
    completed_at: Mapped[datetime | None]
    updated_at: Mapped[datetime] = mapped_column(server_default=text("now()"))
