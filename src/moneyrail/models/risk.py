"""Risk value lists, their items, and reviews of payments held by the risk rules (README "Risk")."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import CheckConstraint, ForeignKey, Index, UniqueConstraint, text
from sqlalchemy.orm import Mapped, mapped_column

from moneyrail.models.base import Base, TenantOwned

VALUE_LIST_ITEM_TYPES = ("card_fingerprint", "email", "ip_address", "customer_id", "card_country")
VALUE_LIST_ACTIONS = ("block", "review")
REVIEW_STATUSES = ("open", "approved")


class ValueList(TenantOwned, Base):
    __tablename__ = "risk_value_lists"
    __table_args__ = (
        CheckConstraint(
            "item_type IN ('card_fingerprint', 'email', 'ip_address', 'customer_id', 'card_country')",
            name="item_type",
        ),
        CheckConstraint("action IN ('block', 'review')", name="action"),
        UniqueConstraint("installation_id", "livemode", "alias"),
        Index("ix_risk_value_lists_list", "installation_id", "livemode", "created_at", "id"),
    )

    id: Mapped[str] = mapped_column(primary_key=True)
    alias: Mapped[str]
    name: Mapped[str]
    item_type: Mapped[str]
    action: Mapped[str]  # what a payment matching an item gets: a decline, or a review
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", server_default=text("'{}'::jsonb"))


class ValueListItem(TenantOwned, Base):
    __tablename__ = "risk_value_list_items"
    __table_args__ = (
        UniqueConstraint("value_list_id", "value"),
        Index("ix_risk_value_list_items_list", "value_list_id", "created_at", "id"),
        Index("ix_risk_value_list_items_match", "installation_id", "livemode", "value"),
    )

    id: Mapped[str] = mapped_column(primary_key=True)
    value_list_id: Mapped[str] = mapped_column(ForeignKey("risk_value_lists.id"))
    value: Mapped[str]  # normalized: e-mail lowercased, country uppercased


class Review(TenantOwned, Base):
    __tablename__ = "risk_reviews"
    __table_args__ = (
        CheckConstraint("status IN ('open', 'approved')", name="status"),
        Index("ix_risk_reviews_list", "installation_id", "livemode", "created_at", "id"),
        # one review per payment: a second confirmation of a held payment finds the first
        Index("uq_risk_reviews_open_payment", "payment_intent_id", unique=True),
    )

    id: Mapped[str] = mapped_column(primary_key=True)
    payment_intent_id: Mapped[str] = mapped_column(ForeignKey("payment_intents.id"))
    reason: Mapped[str]  # `rule` (the network's elevated risk) or `value_list`
    matched: Mapped[dict[str, Any]] = mapped_column(server_default=text("'{}'::jsonb"))
    status: Mapped[str] = mapped_column(server_default="open")
    approved_at: Mapped[datetime | None]
    updated_at: Mapped[datetime] = mapped_column(server_default=text("now()"))
