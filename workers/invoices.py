"""Payment invoices by e-mail, on the default queue beside receipts."""

from __future__ import annotations

import dramatiq

from moneyrail.invoices import service
from workers import runtime
from workers.broker import broker  # actors bind to the configured broker, not dramatiq's default


@dramatiq.actor(actor_name=service.DELIVERY_ACTOR, queue_name=service.DELIVERY_QUEUE, broker=broker)
async def send_invoice(*operation_ids: str) -> None:
    await runtime.run(operation_ids, service.deliver_invoice)
