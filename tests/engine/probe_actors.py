"""A probe operation for the engine's tests and benchmark, loaded by real workers through
MONEYRAIL_WORKER_MODULES (the plug-in hook of `moneyrail worker`).

It does what a money operation does: one processor call keyed by the operation, then one balanced
journal transaction, in the actor's unit of work.
"""

from __future__ import annotations

import asyncio

import dramatiq
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.kit.tenant import Tenant
from moneyrail.ledger import service as ledger
from moneyrail.models import Operation
from moneyrail.processor.interface import operation_key
from tests.engine.probe import PROBE_ACTOR
from workers import runtime
from workers.broker import broker  # actors bind to the configured broker, not dramatiq's default


async def execute_probe(session: AsyncSession, operation: Operation) -> None:
    tenant = Tenant(operation.installation_id, operation.livemode)
    payload = operation.payload
    if payload.get("call_processor", True):  # the engine benchmark measures the engine alone
        result = await runtime.processor().create_transfer(
            tenant,
            idempotency_key=operation_key(operation.id, "transfer"),
            amount=payload["amount"],
            currency=payload["currency"],
            destination=payload["destination"],
        )
        operation.payload = {**payload, "processor_transfer": result.processor_id}
    if operation.attempts == 1 and payload.get("pause_after_processor_seconds"):
        # the window in which a test kills the worker: the processor answered, nothing committed yet
        await asyncio.sleep(payload["pause_after_processor_seconds"])
    # the effect, once: a balanced two-leg journal transaction keyed by the operation
    await ledger.post(
        session,
        tenant,
        kind="probe_transfer",
        reference=operation.id,
        idempotency_key=operation_key(operation.id, "ledger"),
        postings=[
            ledger.Posting("platform:balance", -payload["amount"], payload["currency"]),
            ledger.Posting(f"recipient:{payload['destination']}", payload["amount"], payload["currency"]),
        ],
    )


@dramatiq.actor(actor_name=PROBE_ACTOR, queue_name="money", broker=broker)
async def execute(*operation_ids: str) -> None:
    await runtime.run(operation_ids, execute_probe)
