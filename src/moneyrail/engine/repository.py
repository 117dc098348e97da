"""Queries over operations and their attempts. Timestamps come from PostgreSQL's clock, one clock for all;
a sandbox row's `created_at` and `updated_at` are then moved to its tenant's clock by the database itself
(models/operation.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.db.raw import Write, driver_connection, from_row
from moneyrail.kit.tenant import Tenant
from moneyrail.models import Operation, OperationAttempt

NOTIFY_CHANNEL = "moneyrail_outbox"


async def notify_relay(session: AsyncSession, operation_id: str) -> None:
    """Delivered at commit, never before: the relay wakes the moment the operation is visible."""
    await session.execute(
        text("SELECT pg_notify(:channel, :id)"), {"channel": NOTIFY_CHANNEL, "id": operation_id}
    )


# Many operations of one type and tenant in one statement, straight on the driver (no ORM rows to build,
# flush and read back: a clock advance opens 100,000 renewals). The columns not given take their defaults.
_INSERT_OPERATIONS = """
    INSERT INTO operations (id, installation_id, livemode, type, resource, payload, actor_name, queue_name,
                            max_attempts, batch_size)
    SELECT new.id, $4, $5, $6, new.resource, new.payload::jsonb, $7, $8, $9, $10
    FROM unnest($1::text[], $2::text[], $3::text[]) AS new(id, resource, payload)
"""


@dataclass(frozen=True, slots=True)
class NewOperations:
    """What the operations of one `insert_operations` share."""

    operation_type: str
    actor_name: str
    queue_name: str
    max_attempts: int
    batch_size: int


async def insert_operations(
    session: AsyncSession, tenant: Tenant, shared: NewOperations, rows: Sequence[tuple[str, str, str]]
) -> None:
    """(id, resource, payload as JSON) each."""
    connection = await driver_connection(session)
    await connection.execute(
        _INSERT_OPERATIONS,
        [operation_id for operation_id, _, _ in rows],
        [resource for _, resource, _ in rows],
        [payload for _, _, payload in rows],
        *_shared_columns(tenant, shared),
    )


def _shared_columns(tenant: Tenant, shared: NewOperations) -> tuple[Any, ...]:
    """The columns every operation of one insert shares, in the order both statements take them."""
    return (
        tenant.installation_id,
        tenant.livemode,
        shared.operation_type,
        shared.actor_name,
        shared.queue_name,
        shared.max_attempts,
        shared.batch_size,
    )


# The same as a CTE of another statement (a route whose effect, event and deliveries are one statement):
# one operation per row of the caller's CTE `source` (its columns id, resource, payload as jsonb).
def operations_from(source: str, tenant: Tenant, shared: NewOperations, first_parameter: int) -> Write:
    """The INSERT of `source`'s operations, `RETURNING id, created_at` (the columns not given take their
    defaults, as `create_operation`'s flush leaves them)."""
    n = first_parameter
    # only a CTE's name and parameter numbers are formatted in
    sql = (
        "INSERT INTO operations (id, installation_id, livemode, type, resource, payload, actor_name, "  # noqa: S608
        "queue_name, max_attempts, batch_size) "
        f"SELECT id, ${n}::text, ${n + 1}::boolean, ${n + 2}::text, resource, payload, ${n + 3}::text, "
        f"${n + 4}::text, ${n + 5}::integer, ${n + 6}::integer FROM {source} RETURNING id, created_at"
    )
    return Write(sql, _shared_columns(tenant, shared))


def relay_wakeups(written: str) -> str:
    """`notify_relay` for each operation of the caller's CTE `written` (its column id), as a scalar
    subquery that answers how many: the statement's SELECT must name it, or PostgreSQL skips it."""
    # a CTE's name only; pg_notify is volatile, so PostgreSQL calls it for every row it counts
    return f"(SELECT count(*) FROM (SELECT pg_notify('{NOTIFY_CHANNEL}', id) FROM {written}) AS woken)"  # noqa: S608


async def get_for_tenant(session: AsyncSession, tenant: Tenant, operation_id: str) -> Operation | None:
    return await session.scalar(
        select(Operation).where(
            Operation.id == operation_id,
            Operation.installation_id == tenant.installation_id,
            Operation.livemode == tenant.livemode,
        )
    )


async def get(session: AsyncSession, operation_id: str, *, for_update: bool = False) -> Operation | None:
    statement = select(Operation).where(Operation.id == operation_id)
    if for_update:
        statement = statement.with_for_update()
    return await session.scalar(statement)


async def statuses_of(session: AsyncSession, operation_ids: Sequence[str]) -> dict[str, str]:
    rows = await session.execute(
        select(Operation.id, Operation.status).where(Operation.id.in_(list(operation_ids)))
    )
    return {operation_id: status for operation_id, status in rows}


_COLUMNS = ", ".join(column.name for column in Operation.__table__.columns)  # from the model, not input
_CLAIM = f"""
    WITH claimed AS (
        UPDATE operations
        SET status = 'running', attempts = attempts + 1,
            lease_expires_at = now() + make_interval(secs => $2), updated_at = now()
        WHERE id = ANY($1::text[]) AND status = 'pending' AND next_attempt_at <= now()
        RETURNING {_COLUMNS}
    ),
    attempt AS (
        INSERT INTO operation_attempts (operation_id, number, worker)
        SELECT id, attempts, $3 FROM claimed
    )
    SELECT {_COLUMNS} FROM claimed
"""  # noqa: S608


async def claim(
    connection: Any, operation_ids: Sequence[str], lease: timedelta, worker: str
) -> list[Operation]:
    """Take those of the operations that are due and pending for one attempt each, open each attempt's
    record and return the rows; the others someone else has, or are not due. One statement decides,
    so duplicate or concurrent deliveries of one message act once (the ids go in sorted, so two
    deliveries of a batch ask for its rows in one order). A row the relay still has locked, its
    message sent before the relay's commit, is waited for, not skipped. Every message passes
    here: straight on the driver (db/raw.py), on a connection outside any transaction, so the
    statement commits by itself (it is the lease). The objects are attached to no session:
    record_successes writes what changes."""
    rows = await connection.fetch(_CLAIM, sorted(set(operation_ids)), lease.total_seconds(), worker)
    return [from_row(Operation, row) for row in rows]


_SUCCEED = """
    WITH done AS (
        SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[]) AS done(id, attempt, payload)
    ),
    attempt AS (
        UPDATE operation_attempts SET outcome = 'succeeded', error = NULL, finished_at = now()
        FROM done WHERE operation_attempts.operation_id = done.id AND operation_attempts.number = done.attempt
          AND operation_attempts.finished_at IS NULL
    )
    UPDATE operations
    SET status = 'succeeded', finished_at = now(), lease_expires_at = NULL, last_error = NULL,
        updated_at = now(), payload = coalesce(done.payload::jsonb, operations.payload)
    FROM done
    WHERE operations.id = done.id AND operations.status = 'running' AND operations.attempts = done.attempt
    RETURNING operations.id, operations.finished_at, operations.updated_at
"""


async def record_successes(session: AsyncSession, finished: Sequence[tuple[Operation, str | None]]) -> bool:
    """The operations (each with the handler's new payload, as JSON, if it changed one) and their
    attempts end `succeeded`, in one statement on the caller's transaction. False when an attempt no
    longer holds its operation (its lease ran out and the relay handed it to another): the caller
    then rolls back, as what was written for it must not commit."""
    connection = await driver_connection(session)
    rows = await connection.fetch(
        _SUCCEED,
        [operation.id for operation, _ in finished],
        [operation.attempts for operation, _ in finished],
        [new_payload for _, new_payload in finished],
    )
    stamped = {row["id"]: row for row in rows}
    if len(stamped) < len(finished):
        return False
    for operation, _ in finished:
        operation.status = "succeeded"
        operation.finished_at = stamped[operation.id]["finished_at"]
        operation.updated_at = stamped[operation.id]["updated_at"]  # a sandbox row's: its tenant's clock
        operation.lease_expires_at = None
        operation.last_error = None
    return True


async def write_stamped(session: AsyncSession, operation: Operation) -> None:
    """Write the operation's changes and read back its `updated_at` as the database stamped it: a
    sandbox row's is moved to its tenant's clock (migration 0035), and answers and events show it."""
    await session.flush()
    await session.refresh(operation, ["updated_at"])


async def finish_attempt(
    session: AsyncSession, operation_id: str, number: int, outcome: str, error: str | None
) -> None:
    connection = await driver_connection(session)
    await connection.execute(
        # the open attempt: after an operator's retry, numbers restart and the closed history keeps its own
        "UPDATE operation_attempts SET outcome = $3, error = $4, finished_at = now() "
        "WHERE operation_id = $1 AND number = $2 AND finished_at IS NULL",
        operation_id,
        number,
        outcome,
        error,
    )


async def attempts_of(session: AsyncSession, operation_id: str) -> Sequence[OperationAttempt]:
    return (
        await session.scalars(
            select(OperationAttempt)
            .where(OperationAttempt.operation_id == operation_id)
            .order_by(OperationAttempt.id)  # as they ran: numbers restart after an operator retry
        )
    ).all()


async def expired_leases(session: AsyncSession, limit: int) -> Sequence[Operation]:
    return (
        await session.scalars(
            select(Operation)
            .where(Operation.status == "running", Operation.lease_expires_at < text("now()"))
            .order_by(Operation.lease_expires_at)
            .limit(limit)
            .with_for_update(skip_locked=True)
        )
    ).all()


_TAKE_DUE = """
    WITH due AS (
        SELECT id FROM operations
        WHERE status = 'pending' AND next_attempt_at <= now()
          AND (published_at IS NULL OR published_at < now() - make_interval(secs => $1))
        ORDER BY next_attempt_at
        LIMIT $2
        FOR UPDATE SKIP LOCKED
    ),
    marked AS (
        UPDATE operations SET published_at = now() FROM due WHERE operations.id = due.id
        RETURNING operations.id, operations.actor_name, operations.queue_name, operations.batch_size,
                  operations.next_attempt_at
    )
    SELECT id, actor_name, queue_name, batch_size FROM marked ORDER BY next_attempt_at
"""


@dataclass(frozen=True, slots=True)
class DueOperation:
    id: str
    actor_name: str
    queue_name: str
    batch_size: int


async def take_due_for_publishing(
    session: AsyncSession, redrive_after: timedelta, limit: int
) -> list[DueOperation]:
    """Operations due for publishing, longest due first, marked published in the caller's
    transaction.

    Due: pending, and either never published or published long ago without a worker taking it. The rows
    stay locked until the caller's transaction ends (SKIP LOCKED: two relays never take the same ones),
    and a rollback leaves them unpublished.
    """
    connection = await driver_connection(session)
    rows = await connection.fetch(_TAKE_DUE, redrive_after.total_seconds(), limit)
    return [DueOperation(**row) for row in rows]


async def dead_letters(
    session: AsyncSession,
    *,
    operation_type: str | None,
    installation_id: str | None,
    since: datetime | None,
    limit: int,
) -> Sequence[Operation]:
    conditions: list[Any] = [Operation.status == "dead_letter"]
    if operation_type:
        conditions.append(Operation.type == operation_type)
    if installation_id:
        conditions.append(Operation.installation_id == installation_id)
    if since:
        conditions.append(Operation.dead_lettered_at >= since)
    return (
        await session.scalars(
            select(Operation)
            .where(and_(*conditions))
            .order_by(Operation.dead_lettered_at.desc())
            .limit(limit)
        )
    ).all()
