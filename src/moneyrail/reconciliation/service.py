"""Reconciliation runs: the ledger's transfers against the processor's own records (spec 4.J).

A run is a `reconciliation` operation. It reads every transfer the ledger paid (with its reversals) and
every transfer the processor reports for the environment, matched by the processor's id, and records
each disagreement as an issue:

    missing_at_processor   the ledger paid a transfer the processor has no record of
    missing_in_ledger      the processor made a transfer the ledger does not have (a worker that died
                           between the processor's answer and its commit leaves one until its retry)
    amount_mismatch        both have it, with different amounts (expected: the ledger's)
    status_mismatch        both have it, one paid and the other reversed or failed

It reports and never repairs: an operator decides.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.engine.clock import tenant_now
from moneyrail.engine.policy import RetryPolicy, register_policy
from moneyrail.engine.service import Call, Recording, create_operation, get_operation
from moneyrail.errors import ResourceMissing
from moneyrail.kit.clock import utcnow
from moneyrail.kit.ids import new_id
from moneyrail.kit.pagination import Position
from moneyrail.kit.tenant import Tenant
from moneyrail.models import Operation, ReconciliationRun
from moneyrail.processor import provider
from moneyrail.processor.interface import Processor, ProcessorTransferRecord
from moneyrail.sandbox.service import require_sandbox
from moneyrail.transfers import service as transfers

from . import repository

logger = structlog.get_logger("moneyrail.reconciliation")

RECONCILIATION_TYPE = "reconciliation"
RECONCILIATION_ACTOR = "reconciliation.run"
register_policy(RECONCILIATION_TYPE, RetryPolicy(max_attempts=5, queue_name="default"))


async def create_run(session: AsyncSession, tenant: Tenant) -> tuple[ReconciliationRun, Operation]:
    await provider.require_processor(session, tenant)
    run = ReconciliationRun(
        id=new_id("recon"),
        installation_id=tenant.installation_id,
        livemode=tenant.livemode,
        status="pending",
        issues=[],
        updated_at=utcnow(),
    )
    await repository.add(session, run)
    operation = await create_operation(
        session,
        tenant,
        operation_type=RECONCILIATION_TYPE,
        actor_name=RECONCILIATION_ACTOR,
        resource=run.id,
        payload={"reconciliation_run": run.id},
    )
    run.operation_id = operation.id
    await session.flush()
    return run, operation


async def get_run(session: AsyncSession, tenant: Tenant, run_id: str) -> ReconciliationRun:
    run = await repository.get(session, tenant, run_id)
    if run is None:
        raise ResourceMissing(f"No such reconciliation_run: {run_id!r}", param="run")
    return run


async def list_runs(
    session: AsyncSession, tenant: Tenant, *, limit: int, after: Position | None
) -> Sequence[ReconciliationRun]:
    return await repository.list_runs(session, tenant, limit=limit, after=after)


async def operation_of(session: AsyncSession, tenant: Tenant, run: ReconciliationRun) -> Operation | None:
    return await get_operation(session, tenant, run.operation_id) if run.operation_id else None


def _issue(
    kind: str, transfer: str | None, processor_id: str, expected: Any, actual: Any, *, shown: bool
) -> dict[str, Any]:
    """An issue as the run keeps it. The processor's id of the transfer is shown (`processor_transfer`)
    only where it is the simulator's own; a real processor's (Stripe's `tr_…`) never reaches an answer:
    it is kept on the run for the operator (`at_processor`), and logged."""
    if not shown:
        logger.warning("reconciliation_issue", type=kind, transfer=transfer, processor_transfer=processor_id)
    return {
        "type": kind,
        "transfer": transfer,
        "processor_transfer": processor_id if shown else None,
        "at_processor": processor_id,
        "expected": expected,
        "actual": actual,
    }


async def prepare_reconciliation(
    session: AsyncSession, operation: Operation, processor: Processor
) -> Call | None:
    """The `reconciliation` operation's handler in phases (engine `PhasedHandler`): the ledger's transfers
    read first, then the processor's listing (a read, but a network call: with no transaction open), then
    the comparison written on the run with the success."""
    tenant = Tenant(operation.installation_id, operation.livemode)
    run = await repository.get(session, tenant, operation.payload["reconciliation_run"])
    if run is None or run.status != "pending":
        return None
    booked = {
        transfer.processor_id: transfer for transfer in await transfers.booked_transfers(session, tenant)
    }
    shown = await provider.uses_simulator(session, tenant)

    async def call() -> Recording:
        listed = await processor.list_transfers(tenant)

        async def record(session: AsyncSession) -> None:
            reported = {record.processor_id: record for record in listed}
            await _record_run(session, operation, booked, reported, shown=shown)

        return record

    return call


async def _record_run(
    session: AsyncSession,
    operation: Operation,
    booked: dict[str, transfers.BookedTransfer],
    reported: dict[str, ProcessorTransferRecord],
    *,
    shown: bool,
) -> None:
    tenant = Tenant(operation.installation_id, operation.livemode)
    run = await repository.get(session, tenant, operation.payload["reconciliation_run"], for_update=True)
    if run is None or run.status != "pending":
        return  # only its own operation completes a run: another attempt did (its lease ran out)
    issues: list[dict[str, Any]] = []
    for processor_id, mine in booked.items():
        theirs = reported.get(processor_id)
        if theirs is None:
            issues.append(
                _issue("missing_at_processor", mine.transfer_id, processor_id, mine.amount, None, shown=shown)
            )
            continue
        if theirs.amount != mine.amount:
            issues.append(
                _issue(
                    "amount_mismatch", mine.transfer_id, processor_id, mine.amount, theirs.amount, shown=shown
                )
            )
        if theirs.status != mine.status:
            issues.append(
                _issue(
                    "status_mismatch", mine.transfer_id, processor_id, mine.status, theirs.status, shown=shown
                )
            )
    for processor_id, theirs in reported.items():
        if processor_id not in booked:
            issues.append(_issue("missing_in_ledger", None, processor_id, None, theirs.amount, shown=shown))
    run.issues = issues
    run.transfers_checked = len(booked.keys() | reported.keys())
    run.status = "completed"
    run.completed_at = await tenant_now(session, tenant)
    run.updated_at = utcnow()
    await session.flush()
    logger.info("reconciliation_completed", reconciliation_run=run.id, issues=len(issues))


# --- sandbox helpers ------------------------------------------------------------------------------
async def processor_id_of(session: AsyncSession, tenant: Tenant, transfer_id: str) -> str:
    require_sandbox(tenant)
    transfer = await transfers.get_transfer(session, tenant, transfer_id)
    if transfer.processor_transfer is None:
        raise ResourceMissing(f"Transfer {transfer_id!r} has not reached the processor.", param="transfer")
    return transfer.processor_transfer
