"""Reconciliation runs on the `default` queue: the ledger's transfers against the processor's records."""

from __future__ import annotations

import dramatiq
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.engine.service import Call, each
from moneyrail.models import Operation
from moneyrail.reconciliation import service as reconciliation
from workers import runtime
from workers.broker import broker


async def _run(session: AsyncSession, operation: Operation) -> Call | None:
    return await reconciliation.prepare_reconciliation(session, operation, runtime.processor())


@dramatiq.actor(actor_name=reconciliation.RECONCILIATION_ACTOR, queue_name="default", broker=broker)
async def run(*operation_ids: str) -> None:
    await runtime.run_phased(operation_ids, each(_run))
