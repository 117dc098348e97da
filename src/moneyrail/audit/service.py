"""Recording and reading the audit log.

Every operator decision is recorded in the transaction that makes it, so the log can neither miss a
decision nor record one that did not happen. An entry names who (`actor`: a console operator's e-mail
or the CLI's `--operator`), how (`via`), what (`action`), the operations it touched and why (`reason`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.audit import repository
from moneyrail.kit.ids import new_id
from moneyrail.kit.pagination import Position
from moneyrail.models import AuditEntry

# What an entry's `action` may say, and what it means (the console's filter and `audit list --help`).
ACTIONS: dict[str, str] = {
    "dead_letter.retry": "dead letters run again",
    "dead_letter.discard": "dead letters given up for good",
    "operator.created": "an operator account created (a set-up link issued)",
    "operator.set_up": "an operator set a password and a second factor",
    "operator.signed_in": "an operator signed in to the console",
    "operator.locked": "an operator's account locked after failed sign-ins",
    "operator.disabled": "an operator's account disabled",
    "operator.enabled": "an operator's account enabled again",
    "operator.reset": "an operator's credentials reset (a new set-up link issued)",
}


async def record(
    session: AsyncSession,
    *,
    actor: str,
    via: str,
    action: str,
    reason: str | None = None,
    operation_ids: Sequence[str] = (),
    subject: str | None = None,
    details: dict[str, Any] | None = None,
) -> AuditEntry:
    if action not in ACTIONS:
        raise ValueError(f"unknown audit action {action!r}")
    entry = AuditEntry(
        id=new_id("audit"),
        actor=actor,
        via=via,
        action=action,
        reason=reason,
        operation_ids=list(operation_ids),
        subject=subject,
        details=details or {},
    )
    return await repository.add(session, entry)


async def list_entries(
    session: AsyncSession,
    *,
    actor: str | None = None,
    action: str | None = None,
    operation_id: str | None = None,
    since: datetime | None = None,
    limit: int = 50,
    after: Position | None = None,
) -> Sequence[AuditEntry]:
    return await repository.entries(
        session,
        actor=actor,
        action=action,
        operation_id=operation_id,
        since=since,
        limit=limit,
        after=after,
    )


async def get_entry(session: AsyncSession, entry_id: str) -> AuditEntry | None:
    return await repository.entry(session, entry_id)
