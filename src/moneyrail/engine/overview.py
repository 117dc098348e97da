"""What operators look at: the engine's state in numbers, and operations found by what they know.

Read-only queries for the operator console (console/). The counts of work not yet final read the
partial indexes of pending, running and dead-lettered operations; the last hour's finished work is
counted from the attempts (a BRIN index on their start), never from the whole history of operations.
The engine's own times (acceptance, attempts, dead-lettering) are on the wall clock, so lists are
ordered by acceptance: a sandbox's `created` may be days ahead on its own clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, and_, func, or_, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.engine.leadership import LEADER_LOCK_ID
from moneyrail.kit.pagination import Position
from moneyrail.models import Operation

WAITING_STATUSES = ("pending", "running", "dead_letter")
# how much of a dead letter's error groups it with others: enough to tell causes apart, not ids apart
ERROR_GROUP_CHARACTERS = 160


@dataclass(frozen=True)
class TypeCounts:
    operation_type: str
    pending: int = 0
    running: int = 0
    dead_letter: int = 0
    succeeded_last_hour: int = 0
    failed_last_hour: int = 0


@dataclass(frozen=True)
class OldestDue:
    operation_id: str
    operation_type: str
    due_since: datetime


@dataclass(frozen=True)
class DeadLetterGroup:
    operation_type: str
    error: str
    count: int
    latest: datetime


@dataclass(frozen=True)
class MinuteOfWork:
    minute: datetime
    succeeded: int
    other: int  # retried, failed, dead-lettered, lease expired


@dataclass(frozen=True)
class Leader:
    """The connection holding the scheduler's advisory lock."""

    application_name: str
    client_address: str | None
    connected_since: datetime | None


@dataclass(frozen=True)
class Overview:
    now: datetime
    by_type: list[TypeCounts]
    oldest_due: OldestDue | None
    dead_letters: list[DeadLetterGroup]
    last_hour: list[MinuteOfWork]  # one per minute, oldest first, 60 of them
    leaders: list[Leader]


WAITING_COUNTS = text(
    "SELECT type, status, count(*) FROM operations "
    "WHERE status IN ('pending', 'running', 'dead_letter') GROUP BY type, status"
)
# An attempt's operation type is its operation's; the last hour's attempts are a small set.
FINISHED_LAST_HOUR = text(
    """
    SELECT o.type, a.outcome, count(*)
    FROM operation_attempts a JOIN operations o ON o.id = a.operation_id
    WHERE a.started_at >= now() - interval '1 hour' AND a.outcome IN ('succeeded', 'failed')
    GROUP BY o.type, a.outcome
    """
)
OLDEST_DUE = text(
    "SELECT id, type, next_attempt_at FROM operations WHERE status = 'pending' AND next_attempt_at <= now() "
    "ORDER BY next_attempt_at LIMIT 1"
)
DEAD_LETTER_GROUPS = text(
    """
    SELECT type, left(coalesce(last_error, ''), :characters) AS error, count(*), max(dead_lettered_at)
    FROM operations WHERE status = 'dead_letter'
    GROUP BY type, error ORDER BY count(*) DESC, max(dead_lettered_at) DESC LIMIT 50
    """
)
PER_MINUTE = text(
    """
    SELECT date_trunc('minute', finished_at) AS minute,
           count(*) FILTER (WHERE outcome = 'succeeded'),
           count(*) FILTER (WHERE outcome <> 'succeeded')
    FROM operation_attempts
    WHERE started_at >= now() - interval '61 minutes'
      AND finished_at > date_trunc('minute', now()) - interval '59 minutes'
    GROUP BY minute
    """
)
# pg_locks shows the bigint key as its high and low halves (engine/leadership.py); pg_stat_activity
# names the holder's connection (the scheduler sets its application_name: host and process id).
LEADERS = text(
    """
    SELECT coalesce(s.application_name, ''), host(s.client_addr), s.backend_start
    FROM pg_locks l LEFT JOIN pg_stat_activity s ON s.pid = l.pid
    WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
      AND l.classid = :high AND l.objid = :low
      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
    """
).bindparams(high=LEADER_LOCK_ID >> 32, low=LEADER_LOCK_ID & 0xFFFFFFFF)


async def overview(session: AsyncSession) -> Overview:
    now: datetime = (await session.execute(text("SELECT now()"))).scalar_one()
    counts: dict[str, dict[str, int]] = {}
    for operation_type, status, count in await session.execute(WAITING_COUNTS):
        counts.setdefault(operation_type, {})[status] = count
    for operation_type, outcome, count in await session.execute(FINISHED_LAST_HOUR):
        counts.setdefault(operation_type, {})[f"{outcome}_last_hour"] = count
    by_type = [TypeCounts(operation_type, **found) for operation_type, found in sorted(counts.items())]
    oldest = (await session.execute(OLDEST_DUE)).first()
    groups = [
        DeadLetterGroup(operation_type, error, count, latest)
        for operation_type, error, count, latest in await session.execute(
            DEAD_LETTER_GROUPS, {"characters": ERROR_GROUP_CHARACTERS}
        )
    ]
    minutes = {minute: (succeeded, other) for minute, succeeded, other in await session.execute(PER_MINUTE)}
    this_minute = now.replace(second=0, microsecond=0)
    last_hour = []
    for back in range(59, -1, -1):
        minute = this_minute - timedelta(minutes=back)
        succeeded, other = minutes.get(minute, (0, 0))
        last_hour.append(MinuteOfWork(minute, succeeded, other))
    leaders = [Leader(name, address, since) for name, address, since in await session.execute(LEADERS)]
    return Overview(
        now=now,
        by_type=by_type,
        oldest_due=OldestDue(*oldest) if oldest is not None else None,
        dead_letters=groups,
        last_hour=last_hour,
        leaders=leaders,
    )


@dataclass(frozen=True)
class OperationFilter:
    """What an operator knows about the operations sought; None is any."""

    status: str | None = None
    operation_type: str | None = None
    installation_id: str | None = None
    livemode: bool | None = None
    error_text: str | None = None  # a part of the last error, case-insensitive
    accepted_after: datetime | None = None  # the age, as moments on the wall clock
    accepted_before: datetime | None = None


def _like_pattern(fragment: str) -> str:
    escaped = fragment.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _conditions(wanted: OperationFilter) -> list[ColumnElement[bool]]:
    accepted = func.coalesce(Operation.accepted_at, Operation.created_at)
    conditions: list[ColumnElement[bool]] = []
    if wanted.status:
        conditions.append(Operation.status == wanted.status)
    if wanted.operation_type:
        conditions.append(Operation.type == wanted.operation_type)
    if wanted.installation_id:
        conditions.append(Operation.installation_id == wanted.installation_id)
    if wanted.livemode is not None:
        conditions.append(Operation.livemode == wanted.livemode)
    if wanted.error_text:
        conditions.append(Operation.last_error.ilike(_like_pattern(wanted.error_text), escape="\\"))
    if wanted.accepted_after is not None:
        conditions.append(accepted >= wanted.accepted_after)
    if wanted.accepted_before is not None:
        conditions.append(accepted < wanted.accepted_before)
    return conditions


async def find_operations(
    session: AsyncSession, wanted: OperationFilter, *, limit: int, after: Position | None = None
) -> Sequence[Operation]:
    """Newest accepted first, keyset-paged on (acceptance, id): a Position's `created_at` is the
    acceptance moment here."""
    accepted = func.coalesce(Operation.accepted_at, Operation.created_at)
    conditions = _conditions(wanted)
    if after is not None:
        conditions.append(
            or_(accepted < after.created_at, and_(accepted == after.created_at, Operation.id < after.id))
        )
    statement = (
        select(Operation).where(*conditions).order_by(accepted.desc(), Operation.id.desc()).limit(limit)
    )
    return (await session.scalars(statement)).all()


async def count_operations(session: AsyncSession, wanted: OperationFilter) -> int:
    count = await session.scalar(select(func.count()).select_from(Operation).where(*_conditions(wanted)))
    return int(count or 0)


async def oldest_first(session: AsyncSession, wanted: OperationFilter, *, limit: int) -> Sequence[Operation]:
    """The operations a bulk decision would take: the oldest accepted first, at most `limit`."""
    accepted = func.coalesce(Operation.accepted_at, Operation.created_at)
    statement = select(Operation).where(*_conditions(wanted)).order_by(accepted, Operation.id).limit(limit)
    return (await session.scalars(statement)).all()
