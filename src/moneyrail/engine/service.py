"""Operations: created with the request's effect, run once by a worker, retried or dead-lettered.

The lifecycle (STYLE.md habit 7: state machines are data):
    pending -> running                   a worker claims it (lease)
    running -> succeeded | failed        the handler finished, or refused for a business reason
    running -> pending                   a transient failure with attempts left, or an expired lease
    running -> dead_letter               attempts exhausted
    dead_letter -> pending               an operator retries with a fresh attempt budget
    dead_letter -> canceled              an operator discards it, with a reason

Final means final (CONVENTIONS.md §9): `succeeded`, `failed` and `canceled` end the operation for good,
and only these reach the outcome listeners, where the domains settle the objects the operation moves
(`failed` objects and their `*.failed` events). A retry or a dead letter is not an end: the objects stay
pending, and the attempt-failure listeners show them the error (`last_operation_error`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import orjson
import structlog
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from moneyrail.audit import service as audit
from moneyrail.db.raw import autocommit_connection
from moneyrail.db.uow import UnitOfWork
from moneyrail.engine import repository
from moneyrail.engine.metrics import record_attempt
from moneyrail.engine.outcomes import (
    LEASE_EXPIRED_CODE,
    LEASE_EXPIRED_MESSAGE,
    AttemptError,
    PermanentFailure,
)
from moneyrail.engine.policy import policy_for
from moneyrail.errors import Conflict, ResourceMissing
from moneyrail.kit.clock import utcnow
from moneyrail.kit.ids import new_id
from moneyrail.kit.tenant import Tenant
from moneyrail.models import Operation, OperationAttempt

logger = structlog.get_logger("moneyrail.engine")

TRANSITIONS: dict[str, frozenset[str]] = {
    "pending": frozenset({"running", "canceled"}),
    "running": frozenset({"succeeded", "failed", "pending", "dead_letter"}),
    "dead_letter": frozenset({"pending", "canceled"}),
    "succeeded": frozenset(),
    "failed": frozenset(),
    "canceled": frozenset(),
}

Handler = Callable[[AsyncSession, Operation], Awaitable[None]]
# A type whose work is set-based (one statement for a whole batch) gives the engine a batch handler too:
# a batch runs it once instead of the handler once per operation. Same contract as a handler for each
# operation it is given; an operation that must run alone (after a batch split) meets the plain handler.
BatchHandler = Callable[[AsyncSession, Sequence[Operation]], Awaitable[None]]

# A handler that calls the processor runs in three phases (ARCHITECTURE.md, "The processor is an outside
# system"), so that no transaction, row lock or pool connection is held while a call is on the network:
#   1. `PhasedHandler`, in a short unit of work: read (and lock, briefly) what the operations act on and
#      decide what to ask. It returns the call, or None when nothing is to be asked (done already, or a
#      decision made locally, written in this unit of work, which then records the success as a
#      one-phase handler's does). With a call, this unit of work commits and closes first.
#   2. `Call`: the processor call, each under the operation's keys, outside any unit of work. It raises
#      as a handler does (TransientFailure: a retry under the same keys; PermanentFailure: failed).
#   3. `Recording`: what the processor answered, written in a new unit of work with the success, the
#      outcome listeners and the events. It reads again, under lock, what it changes: whatever changed
#      meanwhile, the processor's answer is a fact to book once (a retried call under the same key
#      answers the same; a superseded attempt rolls back, as a one-phase handler's does).
# A crash between 2 and 3 leaves the operation `running` until its lease runs out; the relay re-drives
# it and the next attempt asks again under the same keys, which replays the answer, recorded once.
# Several operations of a batch are prepared, called (one call, or concurrent calls) and recorded together;
# any failure splits the batch, and each runs alone, as a one-phase batch does.
Recording = Callable[[AsyncSession], Awaitable[None]]
Call = Callable[[], Awaitable[Recording]]
PhasedHandler = Callable[[AsyncSession, Sequence[Operation]], Awaitable[Call | None]]
# The phase 1 of one operation, for `each`.
PhasedStep = Callable[[AsyncSession, Operation], Awaitable[Call | None]]


def in_one_phase(handler: Handler, batch_handler: BatchHandler | None = None) -> PhasedHandler:
    """A handler that never calls out (or a batch handler for a set-based batch) as a `PhasedHandler`
    whose work is all in its first unit of work: it commits with the success, as it always did."""

    async def prepare(session: AsyncSession, operations: Sequence[Operation]) -> Call | None:
        if len(operations) > 1 and batch_handler is not None:
            await batch_handler(session, operations)
        else:
            for operation in operations:
                await handler(session, operation)
        return None

    return prepare


def each(step: PhasedStep) -> PhasedHandler:
    """A `PhasedHandler` from the phases of one operation: a batch prepares its operations in turn in
    one unit of work, makes their calls concurrently (each under its own keys), and records their
    answers in turn in one unit of work. For a processor without a batch call."""

    async def prepare(session: AsyncSession, operations: Sequence[Operation]) -> Call | None:
        calls = [call for operation in operations if (call := await step(session, operation)) is not None]
        return None if not calls else together(calls)

    return prepare


def together(calls: Sequence[Call]) -> Call:
    """Several calls made concurrently as one; their recordings run in the calls' order. A failure of any
    is raised once every call has ended, so no call is still on the network when a batch splits and its
    operations ask again alone."""
    if len(calls) == 1:
        return calls[0]

    async def call() -> Recording:
        answers = await asyncio.gather(*(one() for one in calls), return_exceptions=True)
        for answer in answers:
            if isinstance(answer, BaseException):
                raise answer
        recordings = [answer for answer in answers if not isinstance(answer, BaseException)]

        async def record(session: AsyncSession) -> None:
            for recording in recordings:
                await recording(session)

        return record

    return call


# Called in the same transaction as an operation's end for good: succeeded, failed (a permanent
# refusal) or canceled (an operator discarded its dead letter). The events domain writes the matching
# event, and the domain that owns the work settles its own record (a refund, a transfer, a receipt).
OutcomeListener = Callable[[AsyncSession, Operation], Awaitable[None]]
# The same for the operations of a batch that succeeded together (its statements written once).
BatchOutcomeListener = Callable[[AsyncSession, Sequence[Operation]], Awaitable[None]]
_outcome_listeners: dict[OutcomeListener, BatchOutcomeListener | None] = {}
# Called in the same transaction as every failed attempt, before any outcome: the operation is `pending`
# again (a retry is due), `dead_letter` (an operator decides) or `failed` (a permanent refusal, whose
# outcome follows). The domain shows the error on the objects that wait on the operation, which stay in
# their pending state; the events domain writes `operation.dead_lettered`.
AttemptFailureListener = Callable[[AsyncSession, Operation, AttemptError], Awaitable[None]]
_attempt_failure_listeners: list[AttemptFailureListener] = []


def register_outcome_listener(
    listener: OutcomeListener, *, together: BatchOutcomeListener | None = None
) -> None:
    """`together`, when given, replaces `listener` for a batch that succeeded together."""
    _outcome_listeners[listener] = together


def register_attempt_failure_listener(listener: AttemptFailureListener) -> None:
    if listener not in _attempt_failure_listeners:
        _attempt_failure_listeners.append(listener)


async def _announce(session: AsyncSession, operation: Operation) -> None:
    for listener in _outcome_listeners:
        await listener(session, operation)


async def _announce_failed_attempt(session: AsyncSession, operation: Operation, error: AttemptError) -> None:
    for listener in _attempt_failure_listeners:
        await listener(session, operation, error)


async def _announce_together(session: AsyncSession, operations: Sequence[Operation]) -> None:
    for listener, together in _outcome_listeners.items():
        if together is not None:
            await together(session, operations)
        else:
            for operation in operations:
                await listener(session, operation)


DISCARDED_CODE = "operation_discarded"


@dataclass(frozen=True)
class FinalFailure:
    code: str
    message: str


def final_failure(operation: Operation, last_error: dict[str, Any] | None) -> FinalFailure:
    """Why an object failed whose operation ended `failed` or `canceled`: the refusal it showed last
    (`last_error`, the object's stored AttemptError), or the operator's discard and its reason."""
    if operation.status == "canceled":
        return FinalFailure(DISCARDED_CODE, f"Discarded by an operator: {operation.discard_reason}")
    last = AttemptError.from_json(last_error)
    if last is None:
        return FinalFailure("processing_error", (operation.last_error or "The operation failed.")[:500])
    return FinalFailure(last.code, last.message)


def _move(operation: Operation, status: str) -> None:
    if status not in TRANSITIONS[operation.status]:
        raise Conflict(f"An operation cannot go from {operation.status} to {status}.", param="operation")
    operation.status = status


async def create_operation(
    session: AsyncSession,
    tenant: Tenant,
    *,
    operation_type: str,
    actor_name: str,
    resource: str | None = None,
    payload: dict[str, Any] | None = None,
    batch_size: int | None = None,
) -> Operation:
    """Write the operation beside the request's effect; the relay publishes it after commit.
    `batch_size` overrides the type's policy for this operation: a type whose work is local to the
    database only for some tenants (the sandbox processor) batches only theirs."""
    policy = policy_for(operation_type)
    operation = Operation(
        id=new_id("op"),
        installation_id=tenant.installation_id,
        livemode=tenant.livemode,
        type=operation_type,
        resource=resource,
        payload=payload or {},
        actor_name=actor_name,
        queue_name=policy.queue_name,
        max_attempts=policy.max_attempts,
        batch_size=policy.batch_size if batch_size is None else batch_size,
    )
    session.add(operation)
    await session.flush()
    await repository.notify_relay(session, operation.id)
    return operation


async def create_operations(
    session: AsyncSession,
    tenant: Tenant,
    *,
    operation_type: str,
    actor_name: str,
    work: Sequence[tuple[str, dict[str, Any]]],
    batch_size: int | None = None,
) -> list[str]:
    """`create_operation` for many operations of one type and tenant, `(resource, payload)` each: one
    INSERT and one wake-up of the relay (it reads what is due, not the notification's id). Returns
    their ids, in order; the rows are not loaded into the session."""
    if not work:
        return []
    policy = policy_for(operation_type)
    ids = [new_id("op") for _ in work]
    shared = repository.NewOperations(
        operation_type=operation_type,
        actor_name=actor_name,
        queue_name=policy.queue_name,
        max_attempts=policy.max_attempts,
        batch_size=policy.batch_size if batch_size is None else batch_size,
    )
    await repository.insert_operations(
        session,
        tenant,
        shared,
        [
            (operation_id, resource, orjson.dumps(payload).decode())
            for operation_id, (resource, payload) in zip(ids, work, strict=True)
        ],
    )
    await repository.notify_relay(session, ids[0])
    return ids


async def get_operation(session: AsyncSession, tenant: Tenant, operation_id: str) -> Operation:
    operation = await repository.get_for_tenant(session, tenant, operation_id)
    if operation is None:
        raise ResourceMissing(f"No such operation: {operation_id!r}", param="operation")
    return operation


async def statuses_of(session: AsyncSession, operation_ids: Sequence[str]) -> dict[str, str]:
    """The status of each of these operations, by id (a domain asks whether its work waits on an
    operator: `dead_letter`)."""
    if not operation_ids:
        return {}
    return await repository.statuses_of(session, operation_ids)


@dataclass(frozen=True)
class RunResult:
    outcome: str  # skipped | superseded | succeeded | retry | failed | dead_letter
    attempt: int | None = None


async def run_operation(
    sessionmaker: async_sessionmaker[AsyncSession],
    operation_id: str,
    handler: Handler,
    *,
    worker: str,
    lease: timedelta,
) -> RunResult:
    """`run_operations` for one operation."""
    (result,) = await run_operations(sessionmaker, [operation_id], handler, worker=worker, lease=lease)
    return result


async def run_operations(
    sessionmaker: async_sessionmaker[AsyncSession],
    operation_ids: Sequence[str],
    handler: Handler,
    *,
    worker: str,
    lease: timedelta,
    batch_handler: BatchHandler | None = None,
) -> list[RunResult]:
    """`run_phased_operations` for a handler that makes no call outside the database: its effect
    commits with its outcome, in one unit of work."""
    return await run_phased_operations(
        sessionmaker, operation_ids, in_one_phase(handler, batch_handler), worker=worker, lease=lease
    )


async def run_phased_operations(
    sessionmaker: async_sessionmaker[AsyncSession],
    operation_ids: Sequence[str],
    handler: PhasedHandler,
    *,
    worker: str,
    lease: timedelta,
) -> list[RunResult]:
    """Claim, act, record, for the operations one message carries (one, or a batch of one type).
    Safe to call for any delivery of any message, any number of times; a result per id, in order.

    The claim commits on its own first (it is the lease that lets the relay re-drive an attempt whose
    worker died) and returns the rows. Then the handler's phases run (`PhasedHandler`): the effect
    commits with its outcome, in one unit of work, only if the attempt still holds the operation when it
    records success (the statement that checks takes the row's lock until commit). An attempt that
    outlived its lease is rolled back whole, so a re-driven operation has one effect; calls to the
    outside world are keyed by the operation, so the two attempts' calls are one.

    A batch first runs together: its phases once for all, then every outcome and event, in one unit of
    work and one commit. If any of them fails or was superseded, nothing of its recording commits and
    each runs again on its own, so one operation's failure never decides another's outcome (a repeated
    call is harmless for the same reason a re-driven attempt is).
    """
    async with autocommit_connection(sessionmaker) as connection:
        claimed = await repository.claim(connection, operation_ids, lease, worker)
    # the others: a duplicate message, or already done, or not due yet
    results = {operation_id: RunResult("skipped") for operation_id in operation_ids}
    if len(claimed) > 1 and await _act_together(sessionmaker, claimed, handler):
        for operation in claimed:
            results[operation.id] = _succeeded(operation)
    else:
        for operation in claimed:
            results[operation.id] = await _act(sessionmaker, operation, handler)
    return [results[operation_id] for operation_id in operation_ids]


async def _phases(
    sessionmaker: async_sessionmaker[AsyncSession], operations: Sequence[Operation], handler: PhasedHandler
) -> bool:
    """Run the handler's phases for the operations and record their success with what they wrote;
    False (nothing of the recording committed) when an attempt no longer holds its operation."""
    payloads = [orjson.dumps(operation.payload) for operation in operations]
    async with UnitOfWork(sessionmaker) as uow:
        call = await handler(uow.session, operations)
        if call is None:
            return await _record_success(uow, operations, payloads)
        await uow.commit()  # what the first phase wrote; its locks end here, before the call
    recording = await call()  # no unit of work, no session, no pooled connection
    async with UnitOfWork(sessionmaker) as uow:
        await recording(uow.session)
        return await _record_success(uow, operations, payloads)


async def _record_success(
    uow: UnitOfWork, operations: Sequence[Operation], payloads: Sequence[bytes]
) -> bool:
    finished = [
        (operation, _changed(operation, payload))
        for operation, payload in zip(operations, payloads, strict=True)
    ]
    if not await repository.record_successes(uow.session, finished):
        await uow.rollback()
        return False
    if len(operations) == 1:
        await _announce(uow.session, operations[0])
    else:
        await _announce_together(uow.session, operations)
    await uow.commit()
    return True


async def _act(
    sessionmaker: async_sessionmaker[AsyncSession], operation: Operation, handler: PhasedHandler
) -> RunResult:
    failure: BaseException
    try:
        if not await _phases(sessionmaker, [operation], handler):
            logger.info("operation_superseded", operation_id=operation.id, attempt=operation.attempts)
            return RunResult("superseded", operation.attempts)
    except Exception as error:  # any failure is recorded; the worker itself must not die of it
        failure = error
    else:
        return _succeeded(operation)
    log = logger.bind(operation_id=operation.id, attempt=operation.attempts)
    return await _record_failure(sessionmaker, operation.id, operation.attempts, failure, log)


async def _act_together(
    sessionmaker: async_sessionmaker[AsyncSession], operations: Sequence[Operation], handler: PhasedHandler
) -> bool:
    """True once every operation's effect and success committed together; False, nothing of the
    recording committed and every payload as it was, when one of them failed or was superseded. (A
    commit that fails with its outcome unknown is found out alone: an operation it did finish is no
    longer running, so its second run rolls back as superseded.)"""
    payloads = [orjson.dumps(operation.payload) for operation in operations]
    try:
        if await _phases(sessionmaker, operations, handler):
            return True
        error = "superseded: a lease ran out"
    except Exception as failure:  # each runs alone now and meets its own failure there
        error = _describe(failure)
    for operation, payload in zip(operations, payloads, strict=True):
        operation.payload = orjson.loads(payload)  # what a handler noted is noted again, alone
    logger.info("operation_batch_split", operations=len(operations), error=error)
    return False


def _changed(operation: Operation, payload_before: bytes) -> str | None:
    """The payload as JSON when the handler noted something in it (an id it learnt), else None."""
    changed = orjson.dumps(operation.payload)
    return changed.decode() if changed != payload_before else None


def _succeeded(operation: Operation) -> RunResult:
    logger.info(
        "operation_succeeded",
        operation_id=operation.id,
        attempt=operation.attempts,
        type=operation.type,
        resource=operation.resource,
    )
    record_attempt(operation.type, "succeeded", _age(operation))
    return RunResult("succeeded", operation.attempts)


async def _still_ours(session: AsyncSession, operation_id: str, attempt: int) -> Operation | None:
    """Lock the row; None if the lease ran out and the relay handed the work to another attempt."""
    operation = await repository.get(session, operation_id, for_update=True)
    if operation is None or operation.status != "running" or operation.attempts != attempt:
        return None
    return operation


def _age(operation: Operation) -> float:
    """From acceptance to now on the wall clock (a sandbox's `created_at` is on its own clock)."""
    return (utcnow() - operation.accepted_on_wall_clock).total_seconds()


def _describe(error: BaseException) -> str:
    if isinstance(error, PermanentFailure):
        return str(error)
    return f"{type(error).__name__}: {error}"[:2000]


async def _record_failure(
    sessionmaker: async_sessionmaker[AsyncSession],
    operation_id: str,
    attempt: int,
    error: BaseException,
    log: Any,
) -> RunResult:
    async with UnitOfWork(sessionmaker) as uow:
        operation = await _still_ours(uow.session, operation_id, attempt)
        if operation is None:
            return RunResult("superseded", attempt)
        description = _describe(error)
        operation.last_error = description
        operation.lease_expires_at = None
        operation.updated_at = utcnow()
        if isinstance(error, PermanentFailure):
            outcome = "failed"
            _move(operation, "failed")
            operation.finished_at = utcnow()
            log.info("operation_failed", type=operation.type, error=description)
        elif operation.attempts >= operation.max_attempts:
            outcome = "dead_letter"
            _move(operation, "dead_letter")
            operation.dead_lettered_at = utcnow()
            log.error("operation_dead_lettered", type=operation.type, attempts=attempt, error=description)
        else:
            outcome = "retry"
            _move(operation, "pending")
            operation.next_attempt_at = utcnow() + policy_for(operation.type).delay_after(attempt)
            operation.published_at = None
            log.warning(
                "operation_retry",
                type=operation.type,
                error=description,
                next_attempt_at=str(operation.next_attempt_at),
            )
        await repository.finish_attempt(uow.session, operation_id, attempt, outcome, description)
        await repository.write_stamped(uow.session, operation)  # `updated` on the tenant's clock
        await _announce_failed_attempt(uow.session, operation, AttemptError.of(error, operation.updated_at))
        if outcome == "failed":
            await _announce(uow.session, operation)
        await uow.commit()
        record_attempt(operation.type, outcome, None if outcome == "retry" else _age(operation))
        return RunResult(outcome, attempt)


async def expire_leases(session: AsyncSession, limit: int = 500) -> int:
    """Hand back work whose worker died: its lease ran out, so another attempt may take it."""
    expired = await repository.expired_leases(session, limit)
    for operation in expired:
        error = "lease expired: the worker stopped before finishing"
        await repository.finish_attempt(session, operation.id, operation.attempts, "lease_expired", error)
        operation.last_error = error
        operation.lease_expires_at = None
        operation.updated_at = utcnow()
        if operation.attempts >= operation.max_attempts:
            _move(operation, "dead_letter")
            operation.dead_lettered_at = utcnow()
            logger.error(
                "operation_dead_lettered", operation_id=operation.id, type=operation.type, error=error
            )
        else:
            _move(operation, "pending")
            operation.next_attempt_at = utcnow()
            operation.published_at = None
            logger.warning("operation_lease_expired", operation_id=operation.id, type=operation.type)
        await repository.write_stamped(session, operation)  # `updated` on the tenant's clock
        lost = AttemptError(LEASE_EXPIRED_CODE, LEASE_EXPIRED_MESSAGE, operation.updated_at)
        await _announce_failed_attempt(session, operation, lost)  # the objects show it; its event
    await session.flush()
    return len(expired)


# --- operators ----------------------------------------------------------------------------------
async def list_dead_letters(
    session: AsyncSession,
    *,
    operation_type: str | None = None,
    installation_id: str | None = None,
    since: datetime | None = None,
    limit: int = 100,
) -> Sequence[Operation]:
    return await repository.dead_letters(
        session, operation_type=operation_type, installation_id=installation_id, since=since, limit=limit
    )


@dataclass(frozen=True)
class OperationHistory:
    operation: Operation
    attempts: Sequence[OperationAttempt]


async def show_operation(session: AsyncSession, operation_id: str) -> OperationHistory:
    operation = await repository.get(session, operation_id)
    if operation is None:
        raise ResourceMissing(f"No such operation: {operation_id!r}", param="operation")
    return OperationHistory(operation, await repository.attempts_of(session, operation_id))


async def _dead_letter_for_decision(session: AsyncSession, operation_id: str) -> Operation:
    operation = await repository.get(session, operation_id, for_update=True)
    if operation is None:
        raise ResourceMissing(f"No such operation: {operation_id!r}", param="operation")
    if operation.status != "dead_letter":
        raise Conflict(
            f"Operation {operation_id} is {operation.status}, not dead_letter: only dead letters can be "
            "retried or discarded by an operator.",
            param="operation",
        )
    return operation


async def retry_dead_letter(session: AsyncSession, operation_id: str, *, operator: str) -> Operation:
    """Run again at once, as new: the attempt count restarts, so the budget and the backoff are those of a
    fresh operation (no backoff of minutes left over from the exhausted attempts). The history keeps
    every earlier attempt; the new ones are numbered from 1 again."""
    operation = await _dead_letter_for_decision(session, operation_id)
    _move(operation, "pending")
    operation.attempts = 0
    operation.max_attempts = policy_for(operation.type).max_attempts
    operation.next_attempt_at = utcnow()
    operation.published_at = None
    operation.dead_lettered_at = None
    operation.updated_at = utcnow()
    await repository.write_stamped(session, operation)
    await repository.notify_relay(session, operation.id)
    logger.info("dead_letter_retried", operation_id=operation_id, operator=operator)
    return operation


async def discard_dead_letter(
    session: AsyncSession, operation_id: str, *, operator: str, reason: str
) -> Operation:
    if not reason.strip():
        raise Conflict("A discard needs a reason.", param="reason")
    operation = await _dead_letter_for_decision(session, operation_id)
    _move(operation, "canceled")
    operation.discarded_at = utcnow()
    operation.discarded_by = operator
    operation.discard_reason = reason.strip()
    operation.finished_at = utcnow()
    operation.updated_at = utcnow()
    await repository.write_stamped(session, operation)
    await _announce(session, operation)
    logger.info("dead_letter_discarded", operation_id=operation_id, operator=operator, reason=reason)
    return operation


@dataclass(frozen=True)
class Decision:
    """An operator's decision on dead letters, as the audit log records it."""

    action: str  # retry | discard
    operator: str  # who: a console operator's e-mail, or the CLI's --operator
    via: str  # console | cli
    reason: str | None
    # how the operations were chosen when not named one by one (a filter), for the record
    selection: dict[str, Any] | None = None


@dataclass(frozen=True)
class Decided:
    operations: list[Operation]
    audit_entry_id: str | None  # None when no operation was chosen


async def decide_dead_letters(
    session: AsyncSession, operation_ids: Sequence[str], decision: Decision
) -> Decided:
    """Retry or discard these dead letters together, and record the decision in the audit log, all in the
    caller's transaction: every one of them or, if one is refused (not a dead letter any more), none,
    and no record."""
    if decision.action not in {"retry", "discard"}:
        raise ValueError(f"unknown decision {decision.action!r}")
    reason = (decision.reason or "").strip() or None
    decided = []
    for operation_id in dict.fromkeys(operation_ids):
        if decision.action == "retry":
            decided.append(await retry_dead_letter(session, operation_id, operator=decision.operator))
        else:
            decided.append(
                await discard_dead_letter(
                    session, operation_id, operator=decision.operator, reason=reason or ""
                )
            )
    if not decided:
        return Decided([], None)
    entry = await audit.record(
        session,
        actor=decision.operator,
        via=decision.via,
        action=f"dead_letter.{decision.action}",
        reason=reason,
        operation_ids=[operation.id for operation in decided],
        details={"selection": decision.selection} if decision.selection else None,
    )
    return Decided(decided, entry.id)
