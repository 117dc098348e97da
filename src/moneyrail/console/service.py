"""What the console's pages show and do: the engine's overview, operations found by filter, one
operation with its attempts, its object and its money, the audit log, and operators' decisions.

Every decision goes through the engine's own `decide_dead_letters` (the CLI's path too), which changes
the operations and records the audit entry in the request's one transaction: a refusal of any one of
a set changes none of them and records nothing. A discard reaches every domain's outcome listener: the
web process loads every domain (app.py imports domains.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.audit import service as audit
from moneyrail.console import objects
from moneyrail.console.accounts import SignedIn
from moneyrail.console.errors import ConsoleRefusal, RoleRefused
from moneyrail.console.schemas import OperationsQuery, reason_of
from moneyrail.engine import overview as engine_overview
from moneyrail.engine import service as engine
from moneyrail.errors import Conflict, ResourceMissing
from moneyrail.kit.clock import utcnow
from moneyrail.kit.pagination import Position, encode_cursor
from moneyrail.kit.tenant import Tenant
from moneyrail.ledger import service as ledger
from moneyrail.ledger.repository import RecordedTransaction
from moneyrail.models import AuditEntry, Operation, OperationAttempt

PAGE_SIZE = 50
# A bulk decision takes at most this many dead letters, the oldest first; a larger set is decided in
# several rounds, each with its own dry run.
BULK_LIMIT = 500


async def overview(session: AsyncSession) -> engine_overview.Overview:
    return await engine_overview.overview(session)


def _position(operation: Operation) -> Position:
    return Position(operation.accepted_on_wall_clock, operation.id)


@dataclass(frozen=True)
class OperationsPage:
    rows: Sequence[Operation]
    next_cursor: str | None


async def find_operations(
    session: AsyncSession, query: OperationsQuery, after: Position | None
) -> OperationsPage:
    rows = await engine_overview.find_operations(
        session, query.to_filter(utcnow()), limit=PAGE_SIZE + 1, after=after
    )
    shown = rows[:PAGE_SIZE]
    more = len(rows) > PAGE_SIZE
    return OperationsPage(shown, encode_cursor(_position(shown[-1])) if more and shown else None)


@dataclass(frozen=True)
class AttemptLine:
    position: int  # numbered once over the whole history (an operator's retry restarts `number`)
    attempt: OperationAttempt
    new_run: bool  # the first attempt after an operator's retry

    @property
    def duration_seconds(self) -> float | None:
        if self.attempt.finished_at is None:
            return None
        return (self.attempt.finished_at - self.attempt.started_at).total_seconds()


@dataclass(frozen=True)
class OperationDetail:
    operation: Operation
    answer: dict[str, object]
    attempts: list[AttemptLine]
    moved: objects.OperationObject | None
    ledger: list[RecordedTransaction]
    decisions: Sequence[AuditEntry]

    @property
    def waits_for_an_operator(self) -> bool:
        return self.operation.status == "dead_letter"


def _attempt_lines(attempts: Sequence[OperationAttempt]) -> list[AttemptLine]:
    lines = []
    previous = 0
    for position, attempt in enumerate(attempts, start=1):
        lines.append(AttemptLine(position, attempt, new_run=attempt.number <= previous))
        previous = attempt.number
    return lines


async def operation_detail(session: AsyncSession, operation_id: str) -> OperationDetail:
    try:
        history = await engine.show_operation(session, operation_id)
    except ResourceMissing:
        raise ConsoleRefusal(404, "No such operation", f"There is no operation {operation_id!r}.") from None
    operation = history.operation
    moved = await objects.object_of(session, operation)
    references = [operation.id]  # work that books under its operation's own id
    if moved is not None:
        references += moved.ledger_references
    elif operation.resource:
        references.append(operation.resource)
    tenant = Tenant(operation.installation_id, operation.livemode)
    return OperationDetail(
        operation=operation,
        answer=objects.operation_answer(operation),
        attempts=_attempt_lines(history.attempts),
        moved=moved,
        ledger=await ledger.transactions_about(session, tenant, list(dict.fromkeys(references))),
        decisions=await audit.list_entries(session, operation_id=operation.id, limit=PAGE_SIZE),
    )


# --- decisions ------------------------------------------------------------------------------------
def _require_role(signed: SignedIn) -> None:
    if not signed.can_act:
        raise RoleRefused(signed.role)


async def decide(
    session: AsyncSession,
    signed: SignedIn,
    action: str,
    operation_ids: Sequence[str],
    reason: str | None,
    selection: dict[str, object] | None = None,
) -> str:
    """Retry or discard these dead letters, all or none, recorded in the audit log under the operator's
    e-mail. Returns the audit entry's id."""
    _require_role(signed)
    why = reason_of(reason)
    if not operation_ids:
        raise ConsoleRefusal(400, "Nothing to decide", "No dead letter was chosen.")
    decision = engine.Decision(action, signed.email, "console", why, selection)
    try:
        decided = await engine.decide_dead_letters(session, operation_ids, decision)
    except ResourceMissing as missing:
        raise ConsoleRefusal(404, "No such operation", missing.message) from None
    except Conflict as refused:
        raise ConsoleRefusal(
            409,
            "Nothing was changed",
            f"{refused.message} Another operator or a worker may have moved it since the page was shown: "
            "look again.",
        ) from None
    assert decided.audit_entry_id is not None
    return decided.audit_entry_id


@dataclass(frozen=True)
class BulkPreview:
    """A dry run: how many dead letters the filter finds, and the ones a decision would take now."""

    action: str
    query: OperationsQuery
    total: int
    chosen: Sequence[Operation]

    @property
    def truncated(self) -> bool:
        return self.total > len(self.chosen)


async def bulk_preview(session: AsyncSession, action: str, query: OperationsQuery) -> BulkPreview:
    wanted = query.dead_letters.to_filter(utcnow())
    total = await engine_overview.count_operations(session, wanted)
    chosen = await engine_overview.oldest_first(session, wanted, limit=BULK_LIMIT)
    return BulkPreview(action, query.dead_letters, total, chosen)


# --- the audit log --------------------------------------------------------------------------------
@dataclass(frozen=True)
class AuditPage:
    rows: Sequence[AuditEntry]
    next_cursor: str | None


async def audit_page(
    session: AsyncSession,
    *,
    actor: str | None,
    action: str | None,
    operation_id: str | None,
    after: Position | None,
) -> AuditPage:
    rows = await audit.list_entries(
        session, actor=actor, action=action, operation_id=operation_id, limit=PAGE_SIZE + 1, after=after
    )
    shown = rows[:PAGE_SIZE]
    more = len(rows) > PAGE_SIZE
    return AuditPage(shown, encode_cursor(Position(shown[-1].occurred_at, shown[-1].id)) if more else None)


@dataclass(frozen=True)
class AuditDetail:
    entry: AuditEntry
    operations: Sequence[Operation]  # as they are now


async def audit_detail(session: AsyncSession, entry_id: str) -> AuditDetail:
    entry = await audit.get_entry(session, entry_id)
    if entry is None:
        raise ConsoleRefusal(404, "No such audit entry", f"There is no audit entry {entry_id!r}.")
    statuses = await engine.statuses_of(session, entry.operation_ids)
    operations = []
    for operation_id in entry.operation_ids:
        if operation_id in statuses:
            operations.append((await engine.show_operation(session, operation_id)).operation)
    return AuditDetail(entry, operations)


def age_of(moment: datetime | None, now: datetime) -> str:
    """`3 min ago`, for people."""
    if moment is None:
        return ""
    seconds = round((now - moment).total_seconds())
    span = abs(seconds)
    if span < 60:
        amount = f"{span} s"
    elif span < 3600:
        amount = f"{span // 60} min"
    elif span < 86400:
        amount = f"{span // 3600} h"
    else:
        amount = f"{span // 86400} d"
    return f"{amount} ago" if seconds >= 0 else f"in {amount}"
