"""`moneyrail dead-letters`: operators inspect dead-lettered operations and decide."""

from __future__ import annotations

import getpass
import json
from datetime import UTC, datetime
from typing import Annotated, Any

import typer

from moneyrail.clihelpers import in_unit_of_work
from moneyrail.engine import service
from moneyrail.kit.clock import to_unix
from moneyrail.models import Operation, OperationAttempt

dead_letters_app = typer.Typer(
    help="Inspect, retry or discard dead-lettered operations.", no_args_is_help=True
)
JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]
OperatorOption = Annotated[
    str | None, typer.Option("--operator", help="Who decides (default: the login name).")
]


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
        "created": to_unix(operation.created_at),
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


@dead_letters_app.command("list")
def list_dead_letters(
    operation_type: Annotated[str | None, typer.Option("--type", help="Only this operation type.")] = None,
    installation: Annotated[
        str | None, typer.Option("--installation", "-i", help="Only this installation.")
    ] = None,
    since: Annotated[
        datetime | None, typer.Option(help="Dead-lettered at or after (UTC, e.g. 2026-11-22T08:00:00).")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, max=1000)] = 100,
    as_json: JsonOption = False,
) -> None:
    since_utc = since.replace(tzinfo=UTC) if since is not None and since.tzinfo is None else since
    rows = in_unit_of_work(
        lambda uow: service.list_dead_letters(
            uow.session,
            operation_type=operation_type,
            installation_id=installation,
            since=since_utc,
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
        typer.echo(
            f"{view['id']}  {view['type']:<18} {view['installation']}  attempts {view['attempts']}  "
            f"{view['last_error'] or ''}"
        )


@dead_letters_app.command("show")
def show(
    operation: Annotated[str, typer.Argument(help="Operation id (op_…).")], as_json: JsonOption = False
) -> None:
    history = in_unit_of_work(lambda uow: service.show_operation(uow.session, operation))
    view = {**operation_view(history.operation), "history": [attempt_view(a) for a in history.attempts]}
    if as_json:
        typer.echo(json.dumps(view, indent=2))
        return
    for key, value in view.items():
        if key != "history":
            typer.echo(f"{key}: {value}")
    typer.echo("attempts:")
    for attempt in view["history"]:
        typer.echo(
            f"  #{attempt['number']} {attempt['outcome'] or 'running'} on {attempt['worker']}: "
            f"{attempt['error'] or ''}"
        )


@dead_letters_app.command("retry")
def retry(
    operation: Annotated[str, typer.Argument(help="Operation id (op_…).")],
    operator: OperatorOption = None,
    as_json: JsonOption = False,
) -> None:
    """Run the operation again with a fresh attempt budget."""
    retried = in_unit_of_work(
        lambda uow: service.retry_dead_letter(uow.session, operation, operator=_operator(operator))
    )
    view = operation_view(retried)
    typer.echo(json.dumps(view, indent=2) if as_json else f"{retried.id} is pending again ({retried.type})")


@dead_letters_app.command("discard")
def discard(
    operation: Annotated[str, typer.Argument(help="Operation id (op_…).")],
    reason: Annotated[str, typer.Option(help="Why it will not be retried (recorded).")],
    operator: OperatorOption = None,
    as_json: JsonOption = False,
) -> None:
    """Give up on the operation for good; the reason and the operator are recorded."""
    discarded = in_unit_of_work(
        lambda uow: service.discard_dead_letter(
            uow.session, operation, operator=_operator(operator), reason=reason
        )
    )
    view = operation_view(discarded)
    typer.echo(
        json.dumps(view, indent=2) if as_json else f"{discarded.id} discarded by {view['discarded_by']}"
    )
