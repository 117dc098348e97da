"""`moneyrail dead-letters`: operators inspect dead-lettered operations and decide.

Human output shows times in ISO 8601 (UTC) with their age; `--json` gives Unix seconds, like the API.
`retry` and `discard` take operation ids, or a filter (`--type`, `--installation`, `--since`, or
`--all`) for many at once; `--dry-run` shows what would change and changes nothing. Several operations
are decided in one transaction: all of them, or none if one is refused. Each decision is recorded in
the audit log (`moneyrail audit list`) in that transaction: who (`--operator`), which operations, why.

Two clocks: an operation's `created` is the one its API answer shows (in a sandbox, the sandbox's clock);
`accepted` is that moment on the wall clock, which the engine's own times (dead-lettered, discarded, the
attempts) are on. Human output shows `accepted` only where the two differ.
"""

from __future__ import annotations

import getpass
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Annotated, Any

import typer
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.clihelpers import human_time, in_unit_of_work, labelled
from moneyrail.db.uow import UnitOfWork
from moneyrail.engine import service
from moneyrail.errors import Conflict
from moneyrail.kit.clock import to_unix
from moneyrail.models import Operation, OperationAttempt

# The commands that decide: an operator's decision on an operation must reach each domain's outcome
# listener, so the operator CLI (cli.py) loads every domain before these (the others only read, and
# skip that second).
DECISIONS = ("retry", "discard")

dead_letters_app = typer.Typer(
    help="Inspect, retry or discard dead-lettered operations.", no_args_is_help=True
)
JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable output (times in Unix seconds).")]
OperatorOption = Annotated[
    str | None, typer.Option("--operator", help="Who decides (default: the login name).")
]
TypeOption = Annotated[str | None, typer.Option("--type", help="Only this operation type.")]
InstallationOption = Annotated[
    str | None, typer.Option("--installation", "-i", help="Only this installation (inst_…).")
]
SinceOption = Annotated[
    datetime | None, typer.Option(help="Dead-lettered at or after (UTC, e.g. 2026-11-22T08:00:00).")
]
LimitOption = Annotated[int, typer.Option(min=1, max=10000, help="At most this many operations.")]
OperationsArgument = Annotated[
    list[str] | None,
    typer.Argument(help="Operation ids (op_…); or select with the filters.", show_default=False),
]
AllOption = Annotated[bool, typer.Option("--all", help="Every dead letter (with the filters, if any).")]
DryRunOption = Annotated[bool, typer.Option("--dry-run", help="Show what would change; change nothing.")]


def _when(moment: datetime | None) -> int | None:
    return to_unix(moment) if moment is not None else None


def operation_view(operation: Operation) -> dict[str, Any]:
    return {
        "id": operation.id,
        "type": operation.type,
        "status": operation.status,
        "installation": operation.installation_id,
        "livemode": operation.livemode,
        "resource": operation.resource,
        "attempts": operation.attempts,
        "max_attempts": operation.max_attempts,
        "last_error": operation.last_error,
        # what the API shows (a sandbox's clock), and the wall-clock moment the engine accepted it
        "created": to_unix(operation.created_at),
        "accepted": to_unix(operation.accepted_on_wall_clock),
        "dead_lettered": _when(operation.dead_lettered_at),
        "discarded": _when(operation.discarded_at),
        "discarded_by": operation.discarded_by,
        "discard_reason": operation.discard_reason,
    }


def attempt_view(attempt: OperationAttempt) -> dict[str, Any]:
    return {
        "number": attempt.number,
        "worker": attempt.worker,
        "started": to_unix(attempt.started_at),
        "finished": _when(attempt.finished_at),
        "outcome": attempt.outcome,
        "error": attempt.error,
    }


def _operator(given: str | None) -> str:
    return given or getpass.getuser()


def _utc(moment: datetime | None) -> datetime | None:
    return moment.replace(tzinfo=UTC) if moment is not None and moment.tzinfo is None else moment


def _summary_line(view: dict[str, Any]) -> str:
    return (
        f"{view['id']}  {view['type']:<18} {view['installation']}  "
        f"dead-lettered {human_time(view['dead_lettered']) or '-'}  "
        f"after {view['attempts']} attempt{'' if view['attempts'] == 1 else 's'}  {view['last_error'] or ''}"
    ).rstrip()


def _discarded(view: dict[str, Any]) -> str:
    if view["discarded"] is None:
        return "no"
    return f"{human_time(view['discarded'])} by {view['discarded_by']}: {view['discard_reason']}"


def _creation_rows(view: dict[str, Any]) -> list[tuple[str, str | None]]:
    """A sandbox operation created after its clock was advanced shows both times: `created` on the
    sandbox clock (as the API answers it) and `accepted` on the wall clock, which the engine's times
    (dead-lettered, discarded, the attempts) are on; otherwise they are one time."""
    if abs(view["created"] - view["accepted"]) <= 1:
        return [("created", human_time(view["created"]))]
    return [
        ("created", f"{human_time(view['created'], age=False)} (sandbox clock)"),
        ("accepted", f"{human_time(view['accepted'])} (wall clock, as the times below)"),
    ]


def _show_lines(view: dict[str, Any]) -> list[str]:
    """One operation for people. Its attempt count is the current run's (an operator's retry restarts
    it, and the attempts' own numbers with it): the history is numbered once, from the first attempt
    ever, with a line where a retry began a new run."""
    header = labelled(
        [
            ("operation", view["id"]),
            ("type", view["type"]),
            ("status", view["status"]),
            ("installation", f"{view['installation']} ({'live' if view['livemode'] else 'sandbox'})"),
            ("resource", view["resource"]),
            ("attempt count", f"{view['attempts']} of {view['max_attempts']} in the current run"),
            ("last error", view["last_error"]),
            *_creation_rows(view),
            ("dead-lettered", human_time(view["dead_lettered"]) or "no"),
            ("discarded", _discarded(view)),
        ]
    )
    history = view["history"]
    lines = [header, f"history ({len(history)} attempt{'' if len(history) == 1 else 's'}):"]
    previous_number = 0
    for position, attempt in enumerate(history, start=1):
        if attempt["number"] <= previous_number:
            lines.append("  -- retried by an operator: a new run, its attempt count restarted --")
        previous_number = attempt["number"]
        error = f": {attempt['error']}" if attempt["error"] else ""
        lines.append(
            f"  #{position} {attempt['outcome'] or 'running'} at {human_time(attempt['started'])} "
            f"on {attempt['worker']}{error}"
        )
    if not history:
        lines.append("  none yet")
    return lines


@dead_letters_app.command("list")
def list_dead_letters(
    operation_type: TypeOption = None,
    installation: InstallationOption = None,
    since: SinceOption = None,
    limit: LimitOption = 100,
    as_json: JsonOption = False,
) -> None:
    """List dead-lettered operations, most recent first, with their last error."""
    rows = in_unit_of_work(
        lambda uow: service.list_dead_letters(
            uow.session,
            operation_type=operation_type,
            installation_id=installation,
            since=_utc(since),
            limit=limit,
        )
    )
    views = [operation_view(row) for row in rows]
    if as_json:
        typer.echo(json.dumps(views, indent=2))
        return
    if not views:
        typer.echo("no dead letters")
    for view in views:
        typer.echo(_summary_line(view))


@dead_letters_app.command("show")
def show(
    operation: Annotated[str, typer.Argument(help="Operation id (op_…).")], as_json: JsonOption = False
) -> None:
    """Show one operation and every attempt it made, with each attempt's error."""
    history = in_unit_of_work(lambda uow: service.show_operation(uow.session, operation))
    view = {**operation_view(history.operation), "history": [attempt_view(a) for a in history.attempts]}
    if as_json:
        typer.echo(json.dumps(view, indent=2))
        return
    typer.echo("\n".join(_show_lines(view)))


async def _selected(
    session: AsyncSession,
    operations: Sequence[str],
    *,
    operation_type: str | None,
    installation: str | None,
    since: datetime | None,
    limit: int,
) -> list[Operation]:
    if operations:
        found = []
        for operation_id in operations:
            history = await service.show_operation(session, operation_id)  # ResourceMissing if unknown
            found.append(history.operation)
        return found
    return list(
        await service.list_dead_letters(
            session, operation_type=operation_type, installation_id=installation, since=since, limit=limit
        )
    )


def _decide_many(
    action: str,
    who: str,
    reason: str | None,
    operations: list[str] | None,
    *,
    operation_type: str | None,
    installation: str | None,
    since: datetime | None,
    select_all: bool,
    limit: int,
    dry_run: bool,
    as_json: bool,
) -> None:
    ids = list(dict.fromkeys(operations or []))
    filtered = select_all or any(value is not None for value in (operation_type, installation, since))
    if ids and filtered:
        raise typer.BadParameter(
            "name operations or give a filter (--type, --installation, --since, --all), not both"
        )
    if not ids and not filtered:
        raise typer.BadParameter(
            "name operations (op_…) or select them with --type, --installation, --since or --all"
        )

    async def work(uow: UnitOfWork) -> list[Operation]:
        targets = await _selected(
            uow.session,
            ids,
            operation_type=operation_type,
            installation=installation,
            since=_utc(since),
            limit=limit,
        )
        if dry_run:
            refused = [operation for operation in targets if operation.status != "dead_letter"]
            if refused:
                raise Conflict(
                    f"Operation {refused[0].id} is {refused[0].status}, not dead_letter: only dead letters "
                    f"can be {action}ed by an operator.",
                    param="operation",
                )
            return targets  # the unit of work commits nothing: nothing was changed
        selection = None
        if filtered:
            selection = {
                "type": operation_type,
                "installation": installation,
                "since": since.isoformat() if since is not None else None,
                "all": select_all,
                "limit": limit,
            }
        decision = service.Decision(action, who, "cli", reason, selection)
        decided = await service.decide_dead_letters(
            uow.session, [operation.id for operation in targets], decision
        )
        return decided.operations

    decided = in_unit_of_work(work)
    views = [operation_view(operation) for operation in decided]
    past = {"retry": "retried", "discard": "discarded"}[action]
    if as_json:
        single = len(ids) == 1 and not dry_run  # one named operation: its view, as before bulk decisions
        typer.echo(json.dumps(views[0] if single else {"dry_run": dry_run, past: views}, indent=2))
        return
    if dry_run:
        for view in views:
            typer.echo(f"would {action}: {_summary_line(view)}")
        typer.echo(f"dry run: {len(views)} dead letter(s) would be {past}; nothing changed")
        return
    for view in views:
        if action == "retry":
            typer.echo(f"{view['id']} is pending again ({view['type']}), its attempt count restarts from 1")
        else:
            typer.echo(f"{view['id']} discarded by {view['discarded_by']}")
    if len(views) != 1:
        typer.echo(f"{len(views)} dead letter(s) {past}")


@dead_letters_app.command("retry")
def retry(
    operations: OperationsArgument = None,
    operation_type: TypeOption = None,
    installation: InstallationOption = None,
    since: SinceOption = None,
    select_all: AllOption = False,
    limit: LimitOption = 1000,
    dry_run: DryRunOption = False,
    operator: OperatorOption = None,
    reason: Annotated[
        str | None, typer.Option(help="Why it is run again (recorded in the audit log).")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Run dead letters again at once, as new: the attempt count restarts (the history stays)."""
    _decide_many(
        "retry",
        _operator(operator),
        reason,
        operations,
        operation_type=operation_type,
        installation=installation,
        since=since,
        select_all=select_all,
        limit=limit,
        dry_run=dry_run,
        as_json=as_json,
    )


@dead_letters_app.command("discard")
def discard(
    reason: Annotated[str, typer.Option(help="Why it will not be retried (recorded in the audit log).")],
    operations: OperationsArgument = None,
    operation_type: TypeOption = None,
    installation: InstallationOption = None,
    since: SinceOption = None,
    select_all: AllOption = False,
    limit: LimitOption = 1000,
    dry_run: DryRunOption = False,
    operator: OperatorOption = None,
    as_json: JsonOption = False,
) -> None:
    """Give up on dead letters for good; the reason and the operator are recorded."""
    _decide_many(
        "discard",
        _operator(operator),
        reason,
        operations,
        operation_type=operation_type,
        installation=installation,
        since=since,
        select_all=select_all,
        limit=limit,
        dry_run=dry_run,
        as_json=as_json,
    )
