"""Orders of the commerce API (spec 4.B rule 3, 4.O): lines and a total, a manual-capture payment bound
to them, captured when preparation starts and released when the order is cancelled.

Every change moves `version` on by one; a caller names the version it read (`expected_version`), so two
clerks acting on one order cannot both win.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import CheckConstraint, ForeignKey, Index, text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from moneyrail.models.base import Base, TenantOwned

ORDER_STATUSES = ("pending", "preparing", "canceled")


class Order(TenantOwned, Base):
    __tablename__ = "orders"
    __table_args__ = (
        CheckConstraint("status IN ('pending', 'preparing', 'canceled')", name="status"),
        CheckConstraint("amount_total > 0", name="amount_total"),
        CheckConstraint("version >= 1", name="version"),
        CheckConstraint("status <> 'preparing' OR payment_intent_id IS NOT NULL", name="preparing_paid"),
        Index("ix_orders_list", "installation_id", "livemode", "created_at", "id"),
        # one order per payment
        Index(
            "uq_orders_payment_intent",
            "payment_intent_id",
            unique=True,
            postgresql_where=text("payment_intent_id IS NOT NULL"),
        ),
    )

    id: Mapped[str] = mapped_column(primary_key=True)
    status: Mapped[str] = mapped_column(server_default="pending")
    version: Mapped[int] = mapped_column(server_default=text("1"))
    currency: Mapped[str]
    amount_total: Mapped[int]
    # [{description, quantity, unit_amount, amount}], in the caller's order
    lines: Mapped[list[dict[str, Any]]] = mapped_column(JSONB)
    external_reference: Mapped[str | None]
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", server_default=text("'{}'::jsonb"))
    payment_intent_id: Mapped[str | None] = mapped_column(ForeignKey("payment_intents.id"))
    preparation_started_at: Mapped[datetime | None]
    canceled_at: Mapped[datetime | None]
    updated_at: Mapped[datetime] = mapped_column(server_default=text("now()"))
