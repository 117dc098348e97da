"""Asynchronous operations (CONVENTIONS.md §9) and the history of their attempts.

The operation row is the outbox record and the source of truth for the work's state: the broker
only carries its id. It names the actor and queue that run it, so the relay can publish any type.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import CheckConstraint, ForeignKey, Index, func, text
from sqlalchemy.orm import Mapped, mapped_column

from moneyrail.models.base import Base, TenantOwned

OPERATION_STATUSES = ("pending", "running", "succeeded", "failed", "dead_letter", "canceled")


class Operation(TenantOwned, Base):
    __tablename__ = "operations"
    __table_args__ = (
        CheckConstraint(
            "status IN ('pending', 'running', 'succeeded', 'failed', 'dead_letter', 'canceled')",
            name="status",
        ),
        CheckConstraint("batch_size BETWEEN 1 AND 1000", name="batch_size"),
        # the relay's two questions: what is due and unpublished, whose lease ran out
        Index("ix_operations_due", "next_attempt_at", postgresql_where=text("status = 'pending'")),
        Index("ix_operations_leases", "lease_expires_at", postgresql_where=text("status = 'running'")),
        Index(
            "ix_operations_dead_letters", "dead_lettered_at", postgresql_where=text("status = 'dead_letter'")
        ),
        Index("ix_operations_resource", "installation_id", "livemode", "resource"),
    )

    id: Mapped[str] = mapped_column(primary_key=True)
    type: Mapped[str]
    status: Mapped[str] = mapped_column(server_default="pending")
    resource: Mapped[str | None]
    payload: Mapped[dict[str, Any]] = mapped_column(server_default=text("'{}'::jsonb"))
    actor_name: Mapped[str]
    queue_name: Mapped[str]
    attempts: Mapped[int] = mapped_column(server_default=text("0"))
    max_attempts: Mapped[int]
    # the most operations of this type one message runs together (RetryPolicy.batch_size)
    batch_size: Mapped[int] = mapped_column(server_default=text("1"))
    last_error: Mapped[str | None]
    next_attempt_at: Mapped[datetime] = mapped_column(server_default=func.now())
    published_at: Mapped[datetime | None]
    lease_expires_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    dead_lettered_at: Mapped[datetime | None]
    discarded_at: Mapped[datetime | None]
    discarded_by: Mapped[str | None]
    discard_reason: Mapped[str | None]
    # `created_at` and `updated_at` are what the operation's answer shows: a sandbox row's are on its
    # tenant's clock, stamped by the database (triggers of migrations 0013 and 0035) whatever the
    # statement gave, as its object's `created` is. The engine's own times (next_attempt_at, leases,
    # publishing, finished_at, dead_lettered_at, the attempts) stay on the wall clock, which the relay
    # and the workers run on; `accepted_at` is the wall-clock moment of the creation (NULL for rows
    # written before 0035, whose `created_at` is that moment).
    updated_at: Mapped[datetime] = mapped_column(server_default=func.now())
    accepted_at: Mapped[datetime | None] = mapped_column(server_default=func.now())

    @property
    def accepted_on_wall_clock(self) -> datetime:
        return self.accepted_at or self.created_at


class OperationAttempt(Base):
    """One try of an operation: who ran it, how it ended, and the error if any."""

    __tablename__ = "operation_attempts"
    __table_args__ = (
        Index("ix_operation_attempts_operation", "operation_id", "number"),
        # the console's last hour of attempts: rows are written in time order, so a BRIN index (a few
        # pages, nothing to maintain per insert) finds the recent ones without a scan
        Index("ix_operation_attempts_started", "started_at", postgresql_using="brin"),
    )

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=True)
    operation_id: Mapped[str] = mapped_column(ForeignKey("operations.id"))
    number: Mapped[int]
    worker: Mapped[str]
    started_at: Mapped[datetime] = mapped_column(server_default=func.now())
    finished_at: Mapped[datetime | None]
    outcome: Mapped[str | None]  # succeeded | retry | failed | dead_letter | lease_expired
    error: Mapped[str | None]
