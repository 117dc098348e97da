"""Webhook deliveries: their own queue, so money never waits behind a slow receiver."""

from __future__ import annotations

import dramatiq

from moneyrail.events import service
from workers import runtime
from workers.broker import broker  # actors bind to the configured broker, not dramatiq's default


@dramatiq.actor(actor_name=service.DELIVERY_ACTOR, queue_name="webhooks", broker=broker)
async def deliver(*operation_ids: str) -> None:
    await runtime.run(operation_ids, service.deliver)
