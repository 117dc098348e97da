"""Payouts: money leaving an available balance (a connected account's, or the installation's own) for a
bank account, and the reversals that bring a paid one back."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import CheckConstraint, ForeignKey, Index, text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from moneyrail.models.base import Base, TenantOwned

PAYOUT_STATUSES = ("pending", "in_transit", "paid", "failed", "canceled")


class Payout(TenantOwned, Base):
    __tablename__ = "payouts"
    __table_args__ = (
        CheckConstraint("status IN ('pending', 'in_transit', 'paid', 'failed', 'canceled')", name="status"),
        CheckConstraint("method IN ('standard', 'instant')", name="method"),
        CheckConstraint("amount > 0", name="amount"),
        CheckConstraint("fee_amount >= 0", name="fee_amount"),
        Index("ix_payouts_list", "installation_id", "livemode", "created_at", "id"),
        Index("ix_payouts_account", "connected_account_id", "created_at"),
        # the arrival sweep's question: payouts on their way, soonest arrival first
        Index("ix_payouts_in_transit", "arrival_date", postgresql_where=text("status = 'in_transit'")),
        # a payout is reversed once: one reversal that has not failed or been canceled
        Index(
            "ix_payouts_one_reversal",
            "original_payout_id",
            unique=True,
            postgresql_where=text("status NOT IN ('failed', 'canceled')"),
        ),
    )

    id: Mapped[str] = mapped_column(primary_key=True)
    # null: a payout of the installation's own balance
    connected_account_id: Mapped[str | None] = mapped_column(ForeignKey("connected_accounts.id"))
    amount: Mapped[int]
    fee_amount: Mapped[int] = mapped_column(server_default=text("0"))
    currency: Mapped[str]
    method: Mapped[str]
    status: Mapped[str] = mapped_column(server_default="pending")
    arrival_date: Mapped[datetime | None]  # on the tenant's clock, once the bank has it
    failure_code: Mapped[str | None]
    failure_message: Mapped[str | None]
    last_operation_error: Mapped[dict[str, Any] | None] = mapped_column(JSONB(none_as_null=True))
    operation_id: Mapped[str | None] = mapped_column(ForeignKey("operations.id"))
    processor_payout: Mapped[str | None]
    # a processor refusal ends one generation of keys; an operator's retry asks again under the next
    key_generation: Mapped[int] = mapped_column(server_default=text("0"))
    # a reversal names the paid payout whose money it brings back, and that payout names it back
    original_payout_id: Mapped[str | None] = mapped_column(ForeignKey("payouts.id"))
    reversed_by_id: Mapped[str | None]
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", server_default=text("'{}'::jsonb"))
    updated_at: Mapped[datetime] = mapped_column(server_default=text("now()"))
