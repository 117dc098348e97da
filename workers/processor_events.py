"""What a real processor reported by webhook, on the `money` queue: each event applied by its
`processor_sync` operation (disputes opened and closed, payouts paid and failed, fees final)."""

from __future__ import annotations

import dramatiq
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.models import Operation
from moneyrail.processor_events import service as processor_events
from workers import runtime
from workers.broker import broker


async def _apply(session: AsyncSession, operation: Operation) -> None:
    await processor_events.process_event(session, operation, runtime.processor())


@dramatiq.actor(actor_name=processor_events.SYNC_ACTOR, queue_name="money", broker=broker)
async def sync(*operation_ids: str) -> None:
    await runtime.run(operation_ids, _apply)
