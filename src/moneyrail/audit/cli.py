"""`moneyrail audit list`: who did what, when, to which operations and why, newest first, from the console
and the CLI alike. Human output shows times in ISO 8601 (UTC) with their age; `--json` Unix seconds."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Annotated, Any

import typer

from moneyrail.audit import service
from moneyrail.clihelpers import human_time, in_unit_of_work
from moneyrail.kit.clock import to_unix
from moneyrail.models import AuditEntry

audit_app = typer.Typer(help="Read the audit log of operators' actions (append-only).", no_args_is_help=True)

SHOWN_OPERATIONS = 3


def entry_view(entry: AuditEntry) -> dict[str, Any]:
    return {
        "id": entry.id,
        "occurred": to_unix(entry.occurred_at),
        "actor": entry.actor,
        "via": entry.via,
        "action": entry.action,
        "reason": entry.reason,
        "operations": list(entry.operation_ids),
        "subject": entry.subject,
        "details": entry.details,
    }


def _line(view: dict[str, Any]) -> str:
    operations = view["operations"]
    what = view["action"]
    if view["subject"] and view["subject"] != view["actor"]:
        what += f" {view['subject']}"
    if operations:
        named = ", ".join(operations[:SHOWN_OPERATIONS])
        more = f" and {len(operations) - SHOWN_OPERATIONS} more" if len(operations) > SHOWN_OPERATIONS else ""
        what += f" {len(operations)} operation{'' if len(operations) == 1 else 's'}: {named}{more}"
    why = f'  because "{view["reason"]}"' if view["reason"] else ""
    return f"{human_time(view['occurred'])}  {view['actor']} ({view['via']})  {what}{why}"


@audit_app.command("list")
def list_entries(
    action: Annotated[
        str | None,
        typer.Option(help=f"Only this action: {', '.join(service.ACTIONS)}."),
    ] = None,
    actor: Annotated[
        str | None, typer.Option(help="Only what this person did (an e-mail, or a CLI --operator name).")
    ] = None,
    operation: Annotated[
        str | None, typer.Option(help="Only entries that touched this operation (op_…).")
    ] = None,
    since: Annotated[
        datetime | None, typer.Option(help="At or after this moment (UTC, e.g. 2026-11-22T08:00:00).")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, max=10000, help="At most this many entries.")] = 100,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output (Unix seconds).")] = False,
) -> None:
    """The audit log, newest first."""
    if action is not None and action not in service.ACTIONS:
        raise typer.BadParameter(f"unknown action {action!r}; one of {', '.join(service.ACTIONS)}")
    moment = since.replace(tzinfo=UTC) if since is not None and since.tzinfo is None else since
    rows = in_unit_of_work(
        lambda uow: service.list_entries(
            uow.session, actor=actor, action=action, operation_id=operation, since=moment, limit=limit
        )
    )
    views = [entry_view(row) for row in rows]
    if as_json:
        typer.echo(json.dumps(views, indent=2))
        return
    typer.echo("\n".join(_line(view) for view in views) or "no audit entries")
