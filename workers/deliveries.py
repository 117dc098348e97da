"""Receipts by e-mail and SMS, on the default queue: a slow mail server never holds up money."""

from __future__ import annotations

import dramatiq

from moneyrail.deliveries import service
from workers import runtime
from workers.broker import broker  # actors bind to the configured broker, not dramatiq's default


@dramatiq.actor(actor_name=service.RECEIPT_ACTOR, queue_name=service.RECEIPT_QUEUE, broker=broker)
async def send_receipt(*operation_ids: str) -> None:
    await runtime.run(operation_ids, service.send_receipt)
