"""Webhook deliveries: their own queue, so money never waits behind a slow receiver."""

from __future__ import annotations

import dramatiq
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.config import get_settings
from moneyrail.engine.service import Call, each
from moneyrail.events import service
from moneyrail.kit import crypto
from moneyrail.models import Operation
from workers import runtime
from workers.broker import broker  # actors bind to the configured broker, not dramatiq's default

crypto.require_secret_keys(get_settings().secret_keys)  # deliveries open sealed signing secrets


async def _prepare(session: AsyncSession, operation: Operation) -> Call:
    return await service.prepare_delivery(session, operation)


@dramatiq.actor(actor_name=service.DELIVERY_ACTOR, queue_name="webhooks", broker=broker)
async def deliver(*operation_ids: str) -> None:
    await runtime.run_phased(operation_ids, each(_prepare))
