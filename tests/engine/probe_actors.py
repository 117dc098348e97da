"""A probe operation for the engine's tests and benchmark, loaded by real workers through
MONEYRAIL_WORKER_MODULES (the plug-in hook of `moneyrail worker`).

It does what a money operation does, in the engine's phases: one processor call keyed by the operation,
made with no transaction open, then one balanced journal transaction recorded with its success. Without
a processor call (`call_processor: false`, the engine benchmark) it is all one phase, in one unit of work.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import dramatiq
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.engine.service import Call, Recording, each
from moneyrail.kit.tenant import Tenant
from moneyrail.ledger import service as ledger
from moneyrail.models import Operation
from moneyrail.processor.interface import operation_key
from tests.engine.probe import PROBE_ACTOR
from workers import runtime
from workers.broker import broker  # actors bind to the configured broker, not dramatiq's default


async def prepare_probe(session: AsyncSession, operation: Operation) -> Call | None:
    payload = operation.payload
    if not payload.get("call_processor", True):  # the engine benchmark measures the engine alone
        await _pause(operation)
        await _post(session, operation)
        return None
    tenant = Tenant(operation.installation_id, operation.livemode)

    async def call() -> Recording:
        result = await runtime.processor().create_transfer(
            tenant,
            idempotency_key=operation_key(operation.id, "transfer"),
            amount=payload["amount"],
            currency=payload["currency"],
            destination=payload["destination"],
        )
        await _pause(operation)

        async def record(session: AsyncSession) -> None:
            operation.payload = {**payload, "processor_transfer": result.processor_id}
            await _post(session, operation)

        return record

    return call


async def _pause(operation: Operation) -> None:
    if operation.attempts == 1 and operation.payload.get("pause_after_processor_seconds"):
        # the window in which a test kills the worker: the processor answered, nothing recorded yet
        await asyncio.sleep(operation.payload["pause_after_processor_seconds"])


async def _post(session: AsyncSession, operation: Operation) -> None:
    """The effect, once: a balanced two-leg journal transaction keyed by the operation."""
    payload: dict[str, Any] = operation.payload
    await ledger.post(
        session,
        Tenant(operation.installation_id, operation.livemode),
        kind="probe_transfer",
        reference=operation.id,
        idempotency_key=operation_key(operation.id, "ledger"),
        postings=[
            ledger.Posting("platform:balance", -payload["amount"], payload["currency"]),
            ledger.Posting(f"recipient:{payload['destination']}", payload["amount"], payload["currency"]),
        ],
    )


async def _prepare_probes(session: AsyncSession, operations: Sequence[Operation]) -> Call | None:
    return await each(prepare_probe)(session, operations)


@dramatiq.actor(actor_name=PROBE_ACTOR, queue_name="money", broker=broker)
async def execute(*operation_ids: str) -> None:
    await runtime.run_phased(operation_ids, _prepare_probes)
