"""The audit log: who did what, when, to which operations, and why.

Append-only, as the journal is (migration 0040): PostgreSQL refuses UPDATE, DELETE and TRUNCATE on it,
so an operator's decision, once recorded, stays as it was recorded.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import CheckConstraint, Index, func, text
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, TEXT
from sqlalchemy.orm import Mapped, mapped_column

from moneyrail.models.base import Base

AUDIT_CHANNELS = ("console", "cli")


class AuditEntry(Base):
    __tablename__ = "audit_entries"
    __table_args__ = (
        CheckConstraint("via IN ('console', 'cli')", name="via"),
        Index("ix_audit_entries_occurred", "occurred_at", "id"),
        # "what happened to this operation": every entry that names it
        Index("ix_audit_entries_operations", "operation_ids", postgresql_using="gin"),
    )

    id: Mapped[str] = mapped_column(primary_key=True)
    occurred_at: Mapped[datetime] = mapped_column(server_default=func.now())
    actor: Mapped[str]  # a console operator's e-mail, or the CLI's `--operator`
    via: Mapped[str]  # console | cli
    action: Mapped[str]  # dead_letter.retry, dead_letter.discard, operator.created, ...
    reason: Mapped[str | None]
    operation_ids: Mapped[list[str]] = mapped_column(ARRAY(TEXT), server_default=text("'{}'"))
    subject: Mapped[str | None]  # the operator account an account action concerns
    # how a set of operations was chosen (a bulk action's filter), or other facts of the action
    details: Mapped[dict[str, Any]] = mapped_column(JSONB, server_default=text("'{}'::jsonb"))
