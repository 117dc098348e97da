"""Dispute work on the `money` queue: the withdrawal of a disputed payment's money."""

from __future__ import annotations

import dramatiq
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.disputes import service as disputes
from moneyrail.engine.service import Call, each
from moneyrail.models import Operation
from workers import runtime
from workers.broker import broker


async def _withdraw(session: AsyncSession, operation: Operation) -> Call | None:
    return await disputes.prepare_withdrawal(session, operation, runtime.processor())


@dramatiq.actor(actor_name=disputes.WITHDRAWAL_ACTOR, queue_name="money", broker=broker)
async def withdraw(*operation_ids: str) -> None:
    await runtime.run_phased(operation_ids, each(_withdraw))
