"""Charges the processor made that no payment recorded (payments/orphans.py): each one found and
released, and how far the sweep that looks for them has come."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import CheckConstraint, ForeignKey, func
from sqlalchemy.orm import Mapped, mapped_column

from moneyrail.models.base import Base


class ProcessorOrphan(Base):
    """An authorization (or capture) at the processor that no payment owns, voided or refunded there."""

    __tablename__ = "processor_orphans"
    __table_args__ = (CheckConstraint("action IN ('void', 'refund')", name="action"),)

    authorization_id: Mapped[str] = mapped_column(primary_key=True)
    installation_id: Mapped[str] = mapped_column(ForeignKey("installations.id"))
    livemode: Mapped[bool]
    payment_intent_id: Mapped[str | None]  # the payment the charge was made for, which never recorded it
    amount: Mapped[int]  # what was held (void) or given back (refund)
    currency: Mapped[str]
    action: Mapped[str]
    found_at: Mapped[datetime] = mapped_column(server_default=func.now())


class ProcessorOrphanSweep(Base):
    """The sweep's watermark: processor authorizations created up to `checked_through` were looked at."""

    __tablename__ = "processor_orphan_sweeps"

    name: Mapped[str] = mapped_column(primary_key=True)
    checked_through: Mapped[datetime]
