"""Payment work on the `money` queue: refunds through the processor."""

from __future__ import annotations

import dramatiq
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.engine.service import Call, each
from moneyrail.models import Operation
from moneyrail.payments import refunds
from workers import runtime
from workers.broker import broker


async def _refund(session: AsyncSession, operation: Operation) -> Call | None:
    return await refunds.prepare_refund(session, operation, runtime.processor())


@dramatiq.actor(actor_name=refunds.REFUND_ACTOR, queue_name="money", broker=broker)
async def refund(*operation_ids: str) -> None:
    await runtime.run_phased(operation_ids, each(_refund))
