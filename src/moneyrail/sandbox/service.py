"""The sandbox clock and fault injection. Sandbox keys only: to a live key these do not exist."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.db.uow import UnitOfWork
from moneyrail.engine.clock import stored_clock_offset
from moneyrail.engine.schedule import CommitChunk, commit_at_the_end
from moneyrail.errors import ParameterInvalid, ResourceMissing
from moneyrail.kit.clock import utcnow
from moneyrail.kit.tenant import Tenant
from moneyrail.processor.interface import PROCESSOR_OPERATION_TYPES

from . import repository

logger = structlog.get_logger("moneyrail.sandbox")

# Work that falls due with time (renewals, expiries, fee reports, payout arrival) registers here, so that
# advancing a sandbox clock runs it at once: fn(session, tenant, now) -> how many things it did.
DueWork = Callable[[AsyncSession, Tenant, datetime], Awaitable[int]]
_due_work: dict[str, DueWork] = {}

# Due work large enough to be done in chunks (renewals: 100,000 subscriptions due at one instant) gets
# the caller's commit. A chunk must be whole on its own: each commit leaves every item either done once
# or still due, to be found again by the next advance or by the scheduler's sweep on the same clock.
ChunkedDueWork = Callable[[AsyncSession, Tenant, datetime, CommitChunk], Awaitable[int]]
_chunked_due_work: dict[str, ChunkedDueWork] = {}


def register_due_work(name: str, work: DueWork) -> None:
    _due_work[name] = work


def register_due_work_in_chunks(name: str, work: ChunkedDueWork) -> None:
    """Due work that calls `commit_chunk` after each whole chunk (see `advance_clock`)."""
    _chunked_due_work[name] = work


def require_sandbox(tenant: Tenant) -> None:
    if tenant.livemode:
        raise ResourceMissing("Unrecognized request URL: test helpers exist only in the sandbox.")


@dataclass(frozen=True)
class ClockView:
    now: datetime
    offset_seconds: int
    work_done: dict[str, int]


async def read_clock(session: AsyncSession, tenant: Tenant) -> ClockView:
    require_sandbox(tenant)
    offset = await stored_clock_offset(session, tenant.installation_id)
    return ClockView(now=utcnow() + timedelta(seconds=offset), offset_seconds=offset, work_done={})


MAX_ADVANCE_SECONDS = 5 * 366 * 24 * 3600


async def advance_clock(
    uow: UnitOfWork, tenant: Tenant, seconds: int, *, idempotency_key_claimed: bool
) -> ClockView:
    """Move the clock and run the work that fell due, in the caller's unit of work.

    Without an Idempotency-Key, the clock, every plain due work and the first chunk of the chunked
    work commit first, then each further chunk on its own: workers start on the first chunk's
    renewals seconds after the advance instead of after the whole opening. Under a claimed key,
    everything is one transaction that the caller commits: the stored answer must commit with the
    whole effect, and a commit would release the key's claim. A crash between two commits leaves the
    clock moved, the plain due work done, and each chunked item opened once or still due: the next
    advance or the scheduler's sweep (on the same clock) finds the rest, never an item twice. The
    answer's `work_done` counts every chunk; an error in a later chunk answers the error with the
    earlier chunks kept, as a sweep's would be."""
    require_sandbox(tenant)
    if not 1 <= seconds <= MAX_ADVANCE_SECONDS:
        raise ParameterInvalid(f"seconds must be 1 to {MAX_ADVANCE_SECONDS} (five years).", param="seconds")
    commit_chunk: CommitChunk = commit_at_the_end if idempotency_key_claimed else uow.commit
    session = uow.session
    offset = await repository.advance_clock(session, tenant.installation_id, seconds)
    now = utcnow() + timedelta(seconds=offset)
    work_done = {name: await work(session, tenant, now) for name, work in sorted(_due_work.items())}
    for name, chunked in sorted(_chunked_due_work.items()):
        work_done[name] = await chunked(session, tenant, now, commit_chunk)
    work_done = dict(sorted(work_done.items()))
    logger.info(
        "sandbox_clock_advanced", installation=tenant.installation_id, seconds=seconds, work_done=work_done
    )
    return ClockView(now=now, offset_seconds=offset, work_done=work_done)


@dataclass(frozen=True)
class FaultView:
    operation_type: str
    mode: str
    count: int


async def inject_processor_faults(
    session: AsyncSession, tenant: Tenant, *, operation_type: str, mode: str, count: int
) -> FaultView:
    require_sandbox(tenant)
    _check_operation_type(operation_type)
    await repository.set_fault(session, tenant, operation_type, mode, count)
    return FaultView(operation_type=operation_type, mode=mode, count=count)


def _check_operation_type(operation_type: str | None) -> None:
    if operation_type is not None and operation_type not in PROCESSOR_OPERATION_TYPES:
        raise ParameterInvalid(
            f"operation_type must be one of {', '.join(PROCESSOR_OPERATION_TYPES)}.", param="operation_type"
        )


async def list_processor_faults(session: AsyncSession, tenant: Tenant) -> list[FaultView]:
    """The faults still armed, with the calls each has left to fail."""
    require_sandbox(tenant)
    return [
        FaultView(operation_type=fault.operation_type, mode=fault.mode, count=fault.remaining)
        for fault in await repository.list_faults(session, tenant)
    ]


async def clear_processor_faults(
    session: AsyncSession, tenant: Tenant, *, operation_type: str | None
) -> list[FaultView]:
    """Disarm every fault (or one type's); answers what was still armed."""
    require_sandbox(tenant)
    _check_operation_type(operation_type)
    cleared = await repository.clear_faults(session, tenant, operation_type)
    logger.info("sandbox_faults_cleared", installation=tenant.installation_id, cleared=len(cleared))
    return sorted(
        (FaultView(operation_type=f.operation_type, mode=f.mode, count=f.remaining) for f in cleared),
        key=lambda view: view.operation_type,
    )
