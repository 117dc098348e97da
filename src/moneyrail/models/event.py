"""Events (written in the same transaction as the change they describe) and webhook endpoints."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Double, ForeignKey, Index, func
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
    # The signing secret must be readable to sign each delivery (a hash would not do): it is sealed
    # with MONEYRAIL_SECRET_KEYS (kit/crypto.py), never stored readable.
    secret: Mapped[str]
    # After a rotation the previous secret signs beside the new one until it expires (an overlap window).
    previous_secret: Mapped[str | None]
    previous_secret_expires_at: Mapped[datetime | None]
    disabled_at: Mapped[datetime | None]
    deleted_at: Mapped[datetime | None]


class WebhookDelivery(TenantOwned, Base):
    """One event to send to one endpoint: its id is the `webhook_delivery` operation's, which carries
    its status and retries; this row is what lets an integrator list an endpoint's deliveries."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (Index("ix_webhook_deliveries_endpoint", "endpoint_id", "created_at", "id"),)

    id: Mapped[str] = mapped_column(primary_key=True)
    endpoint_id: Mapped[str] = mapped_column(ForeignKey("webhook_endpoints.id"))
    event_id: Mapped[str]
    event_type: Mapped[str]
    resend_of: Mapped[str | None]  # the delivery an integrator asked to send again


class WebhookDeliveryAttempt(Base):
    """One HTTP try of a delivery: written when it happens, whatever becomes of the attempt's
    transaction, so a failing receiver's answers stay visible."""

    __tablename__ = "webhook_delivery_attempts"
    __table_args__ = (Index("ix_webhook_delivery_attempts_delivery", "delivery_id", "number"),)

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=True)
    delivery_id: Mapped[str]
    number: Mapped[int]
    attempted_at: Mapped[datetime] = mapped_column(server_default=func.now())
    outcome: Mapped[str]  # succeeded | failed
    response_status: Mapped[int | None]  # null when no HTTP answer came (refused address, timeout)
    latency_ms: Mapped[float | None] = mapped_column(Double())
    error: Mapped[str | None]
