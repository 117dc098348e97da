"""What a processor reported by webhook (Stripe's events): each accepted once, by its event id."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, func
from sqlalchemy.orm import Mapped, mapped_column

from moneyrail.models.base import Base


class ProcessorEvent(Base):
    """One event as the processor sent it, signature verified: its object (the processor's own ids inside:
    never shown), and the `processor_sync` operation that applies it. A replayed event (the same id)
    finds this row and changes nothing."""

    __tablename__ = "processor_events"

    installation_id: Mapped[str] = mapped_column(ForeignKey("installations.id"), primary_key=True)
    livemode: Mapped[bool] = mapped_column(primary_key=True)
    event_id: Mapped[str] = mapped_column(primary_key=True)  # Stripe's `evt_…`
    processor: Mapped[str]
    type: Mapped[str]  # `charge.dispute.created`, `payout.paid`, ...
    account: Mapped[str | None]  # the connected account it happened on (Stripe Connect), if any
    object: Mapped[dict[str, Any]]  # the event's `data.object`
    received_at: Mapped[datetime] = mapped_column(server_default=func.now())
    operation_id: Mapped[str | None] = mapped_column(ForeignKey("operations.id"))
    outcome: Mapped[str | None]  # what applying it did, once its operation ran
