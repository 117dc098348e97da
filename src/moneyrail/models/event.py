"""Events (written in the same transaction as the change they describe) and webhook endpoints."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index
from sqlalchemy.dialects.postgresql import ARRAY, TEXT
from sqlalchemy.orm import Mapped, mapped_column

from moneyrail.models.base import Base, TenantOwned


class Event(TenantOwned, Base):
    __tablename__ = "events"
    __table_args__ = (Index("ix_events_list", "installation_id", "livemode", "created_at", "id"),)

    id: Mapped[str] = mapped_column(primary_key=True)
    # No foreign key (migration 0007): its check locked the installation row for every event written.
    installation_id: Mapped[str] = mapped_column()
    type: Mapped[str]
    api_version: Mapped[str]
    data: Mapped[dict[str, Any]]


class WebhookEndpoint(TenantOwned, Base):
    __tablename__ = "webhook_endpoints"
    __table_args__ = (Index("ix_webhook_endpoints_list", "installation_id", "livemode", "created_at", "id"),)

    id: Mapped[str] = mapped_column(primary_key=True)
    url: Mapped[str]
    description: Mapped[str | None]
    enabled_events: Mapped[list[str]] = mapped_column(ARRAY(TEXT))
    # The signing secret must be readable to sign each delivery (a hash would not do).
    secret: Mapped[str]
    deleted_at: Mapped[datetime | None]
