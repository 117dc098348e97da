"""Payout work on the `money` queue: handing a connected account's payout to the processor."""

from __future__ import annotations

import dramatiq
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.engine.service import Call, each
from moneyrail.models import Operation
from moneyrail.payouts import service as payouts
from workers import runtime
from workers.broker import broker


async def _send(session: AsyncSession, operation: Operation) -> Call | None:
    return await payouts.prepare_payout(session, operation, runtime.processor())


@dramatiq.actor(actor_name=payouts.PAYOUT_ACTOR, queue_name="money", broker=broker)
async def send(*operation_ids: str) -> None:
    await runtime.run_phased(operation_ids, each(_send))
