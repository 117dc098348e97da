"""Connected-account work on the `money` queue: making an account at the processor (Stripe), and telling
it what moneyrail learnt of the account later."""

from __future__ import annotations

import dramatiq
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.connect import at_processor
from moneyrail.engine.service import Call, each
from moneyrail.models import Operation
from workers import runtime
from workers.broker import broker


async def _link(session: AsyncSession, operation: Operation) -> Call | None:
    return await at_processor.prepare_link(session, operation, runtime.processor())


@dramatiq.actor(actor_name=at_processor.LINK_ACTOR, queue_name="money", broker=broker)
async def link(*operation_ids: str) -> None:
    await runtime.run_phased(operation_ids, each(_link))


async def _details(session: AsyncSession, operation: Operation) -> Call | None:
    return await at_processor.prepare_details(session, operation, runtime.processor())


@dramatiq.actor(actor_name=at_processor.DETAILS_ACTOR, queue_name="money", broker=broker)
async def details(*operation_ids: str) -> None:
    await runtime.run_phased(operation_ids, each(_details))
