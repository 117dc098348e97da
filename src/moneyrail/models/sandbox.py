"""The sandbox's own state: clocks, injected faults, and the simulated processor's record of calls."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import CheckConstraint, ForeignKey, Index, PrimaryKeyConstraint, func, text
from sqlalchemy.orm import Mapped, mapped_column

from moneyrail.models.base import Base


class SandboxClock(Base):
    """How far an installation's sandbox has been advanced past real time."""

    __tablename__ = "sandbox_clocks"
    __table_args__ = (CheckConstraint("offset_seconds >= 0", name="offset_seconds"),)

    installation_id: Mapped[str] = mapped_column(ForeignKey("installations.id"), primary_key=True)
    offset_seconds: Mapped[int] = mapped_column(server_default=text("0"))
    updated_at: Mapped[datetime] = mapped_column(server_default=func.now())


class SandboxProcessorFault(Base):
    """The next `remaining` processor calls of `operation_type` fail in `mode`."""

    __tablename__ = "sandbox_processor_faults"
    __table_args__ = (
        PrimaryKeyConstraint("installation_id", "livemode", "operation_type"),
        CheckConstraint("mode IN ('transient', 'permanent')", name="mode"),
        CheckConstraint("remaining >= 0", name="remaining"),
    )

    installation_id: Mapped[str] = mapped_column(ForeignKey("installations.id"))
    livemode: Mapped[bool]
    operation_type: Mapped[str]
    mode: Mapped[str]
    remaining: Mapped[int]
    updated_at: Mapped[datetime] = mapped_column(server_default=func.now())


class SandboxProcessorCall(Base):
    """Every call the simulated processor answered, by idempotency key: a repeated key, the same answer."""

    __tablename__ = "sandbox_processor_calls"
    __table_args__ = (PrimaryKeyConstraint("installation_id", "livemode", "idempotency_key"),)

    installation_id: Mapped[str] = mapped_column(ForeignKey("installations.id"))
    livemode: Mapped[bool]
    idempotency_key: Mapped[str]
    operation_type: Mapped[str]
    request: Mapped[dict[str, Any]]
    response: Mapped[dict[str, Any]]
    succeeded: Mapped[bool]
    created_at: Mapped[datetime] = mapped_column(server_default=func.now())


class SandboxCard(Base):
    """A card the simulated network tokenized: its scripted behaviour, never its number."""

    __tablename__ = "sandbox_cards"

    token: Mapped[str] = mapped_column(primary_key=True)
    installation_id: Mapped[str] = mapped_column(ForeignKey("installations.id"))
    livemode: Mapped[bool]
    behaviour: Mapped[str]
    brand: Mapped[str]
    last4: Mapped[str]
    exp_month: Mapped[int]
    exp_year: Mapped[int]
    fingerprint: Mapped[str]
    created_at: Mapped[datetime] = mapped_column(server_default=func.now())


class SandboxAuthorization(Base):
    """The simulated network's side of one payment: authorized, captured, refunded, its real cost."""

    __tablename__ = "sandbox_authorizations"
    __table_args__ = (
        CheckConstraint(
            "status IN ('requires_action', 'authorized', 'declined', 'captured', 'canceled')", name="status"
        ),
        CheckConstraint("amount_captured >= 0 AND amount_refunded <= amount_captured", name="amounts"),
        # the orphan sweep's question (payments/orphans.py): authorizations created after its watermark
        Index("ix_sandbox_authorizations_created", "created_at"),
    )

    id: Mapped[str] = mapped_column(primary_key=True)
    installation_id: Mapped[str] = mapped_column(ForeignKey("installations.id"))
    livemode: Mapped[bool]
    card_token: Mapped[str] = mapped_column(ForeignKey("sandbox_cards.token"))
    amount: Mapped[int]
    currency: Mapped[str]
    status: Mapped[str]
    decline_code: Mapped[str | None]
    amount_captured: Mapped[int] = mapped_column(server_default=text("0"))
    amount_refunded: Mapped[int] = mapped_column(server_default=text("0"))
    captured_at: Mapped[datetime | None]  # on the installation's sandbox clock
    cost_amount: Mapped[int | None]
    reference: Mapped[str | None]  # what the charge was for (a payment's id), as a network's metadata
    created_at: Mapped[datetime] = mapped_column(server_default=func.now())
    updated_at: Mapped[datetime] = mapped_column(server_default=func.now())
