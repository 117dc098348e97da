"""Stored responses of idempotent requests (CONVENTIONS.md §4)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, LargeBinary, PrimaryKeyConstraint, func
from sqlalchemy.orm import Mapped, mapped_column

from moneyrail.models.base import Base


class IdempotencyRecord(Base):
    __tablename__ = "idempotency_records"
    __table_args__ = (
        PrimaryKeyConstraint("installation_id", "livemode", "key"),
        Index("ix_idempotency_records_created_at", "created_at"),
    )

    installation_id: Mapped[str] = mapped_column(ForeignKey("installations.id"))
    livemode: Mapped[bool]
    key: Mapped[str]
    fingerprint: Mapped[str]
    status_code: Mapped[int]
    # the exact bytes sent, so a replay is byte-for-byte the original answer
    response_body: Mapped[bytes] = mapped_column(LargeBinary)
    # an answer sealed before the database stamped its object's `created` (api/idempotency.py,
    # `CREATED_MARK`): that moment, filled in at replay; None when the answer was sealed whole
    answer_created_at: Mapped[datetime | None]
    created_at: Mapped[datetime] = mapped_column(server_default=func.now())
