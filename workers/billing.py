"""Billing work on the `money` queue: renewals (one off-session charge per cycle) and syncs."""

from __future__ import annotations

from collections.abc import Sequence

import dramatiq
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.billing import service as billing
from moneyrail.engine.service import Call
from moneyrail.models import Operation
from workers import runtime
from workers.broker import broker


async def _renew(session: AsyncSession, operations: Sequence[Operation]) -> Call | None:
    return await billing.prepare_renewals(session, operations, runtime.processor())


async def _sync(session: AsyncSession, operation: Operation) -> None:
    await billing.process_sync(session, operation, runtime.processor())


@dramatiq.actor(actor_name=billing.RENEWAL_ACTOR, queue_name="money", broker=broker)
async def renewal(*operation_ids: str) -> None:
    await runtime.run_phased(operation_ids, _renew)


@dramatiq.actor(actor_name=billing.SYNC_ACTOR, queue_name="money", broker=broker)
async def sync(*operation_ids: str) -> None:
    await runtime.run(operation_ids, _sync)
