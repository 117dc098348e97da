"""`moneyrail operators`: the console's accounts. `create` prints a one-time set-up link where the operator
sets a password and a TOTP second factor; `reset` issues a new one (a lost phone or password); `disable`
ends every session of an account at once. Each change is recorded in the audit log under `--operator`."""

from __future__ import annotations

import getpass
from datetime import datetime
from typing import Annotated, Any

import typer

from moneyrail.clihelpers import emit, human_time, in_unit_of_work
from moneyrail.config import get_settings
from moneyrail.console import accounts
from moneyrail.kit.clock import to_unix, utcnow
from moneyrail.models import Operator

operators_app = typer.Typer(
    help="Console operators: create (a one-time set-up link), list, disable, enable, reset.",
    no_args_is_help=True,
)
JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable output (times in Unix seconds).")]
EmailArgument = Annotated[str, typer.Argument(help="The operator's e-mail address.", show_default=False)]
ActorOption = Annotated[
    str | None, typer.Option("--operator", help="Who makes the change (default: the login name); audited.")
]
ReasonOption = Annotated[str | None, typer.Option(help="Why (recorded in the audit log).")]


def _when(moment: datetime | None) -> int | None:
    return to_unix(moment) if moment is not None else None


def operator_view(operator: Operator) -> dict[str, Any]:
    return {
        "id": operator.id,
        "email": operator.email,
        "role": operator.role,
        "status": accounts.operator_status(operator, utcnow()),
        "locked_until": _when(operator.locked_until)
        if operator.locked_until and operator.locked_until > utcnow()
        else None,
        "set_up": _when(operator.set_up_at),
        "last_sign_in": _when(operator.last_sign_in_at),
        "created": to_unix(operator.created_at),
    }


def _link_view(issued: accounts.IssuedLink) -> dict[str, Any]:
    return {
        **operator_view(issued.operator),
        "setup_url": issued.url,
        "setup_expires": to_unix(issued.expires_at),
    }


def _link_lines(view: dict[str, Any], verb: str) -> str:
    return (
        f"{verb} operator {view['email']} ({view['role']})\n"
        f"set-up link (opens once, until {human_time(view['setup_expires'], age=False)}; send it to them "
        f"privately): {view['setup_url']}"
    )


def _actor(given: str | None) -> str:
    return given or getpass.getuser()


@operators_app.command("create")
def create(
    email: Annotated[
        str, typer.Option("--email", help="The operator's e-mail address (their sign-in name).")
    ],
    role: Annotated[
        str, typer.Option("--role", help="viewer (reads everything) or operator (also retries and discards).")
    ],
    operator: ActorOption = None,
    as_json: JsonOption = False,
) -> None:
    """Create an operator; prints the one-time link where they set a password and a second factor."""
    settings = get_settings()
    issued = in_unit_of_work(
        lambda uow: accounts.create_operator(
            uow.session, email=email, role=role, actor=_actor(operator), settings=settings
        )
    )
    view = _link_view(issued)
    emit(as_json, view, _link_lines(view, "created"))


@operators_app.command("list")
def list_operators(as_json: JsonOption = False) -> None:
    """Every operator, oldest first, with the account's state and last sign-in."""
    rows = in_unit_of_work(lambda uow: accounts.list_operators(uow.session))
    views = [operator_view(row) for row in rows]
    lines = [
        f"{view['email']:<32} {view['role']:<8} {view['status']:<15} "
        f"last sign-in {human_time(view['last_sign_in']) or 'never'}"
        for view in views
    ]
    emit(as_json, views, "\n".join(lines) or "no operators")


@operators_app.command("disable")
def disable(
    email: EmailArgument,
    operator: ActorOption = None,
    reason: ReasonOption = None,
    as_json: JsonOption = False,
) -> None:
    """Stop an account at once: its sessions end and it cannot sign in."""
    disabled = in_unit_of_work(
        lambda uow: accounts.disable_operator(uow.session, email, actor=_actor(operator), reason=reason)
    )
    view = operator_view(disabled)
    emit(as_json, view, f"disabled operator {view['email']}; its sessions have ended")


@operators_app.command("enable")
def enable(
    email: EmailArgument,
    operator: ActorOption = None,
    reason: ReasonOption = None,
    as_json: JsonOption = False,
) -> None:
    """Let a disabled account sign in again (with its credentials as they were)."""
    enabled = in_unit_of_work(
        lambda uow: accounts.enable_operator(uow.session, email, actor=_actor(operator), reason=reason)
    )
    view = operator_view(enabled)
    emit(as_json, view, f"enabled operator {view['email']} ({view['status']})")


@operators_app.command("reset")
def reset(
    email: EmailArgument,
    operator: ActorOption = None,
    reason: ReasonOption = None,
    as_json: JsonOption = False,
) -> None:
    """New credentials: the password and second factor go, sessions end, and a new set-up link is printed."""
    settings = get_settings()
    issued = in_unit_of_work(
        lambda uow: accounts.reset_operator(
            uow.session, email, actor=_actor(operator), reason=reason, settings=settings
        )
    )
    view = _link_view(issued)
    emit(as_json, view, _link_lines(view, "reset"))
