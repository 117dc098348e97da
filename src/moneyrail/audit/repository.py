"""Queries over the audit log. It is only ever inserted into and read (the database refuses the rest)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import and_, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.kit.pagination import Position
from moneyrail.models import AuditEntry


async def add(session: AsyncSession, entry: AuditEntry) -> AuditEntry:
    session.add(entry)
    await session.flush()
    await session.refresh(entry, ["occurred_at"])
    return entry


async def entries(
    session: AsyncSession,
    *,
    actor: str | None,
    action: str | None,
    operation_id: str | None,
    since: datetime | None,
    limit: int,
    after: Position | None,
) -> Sequence[AuditEntry]:
    """Newest first, keyset-paged on (occurred_at, id)."""
    conditions = []
    if actor:
        conditions.append(AuditEntry.actor == actor)
    if action:
        conditions.append(AuditEntry.action == action)
    if operation_id:
        conditions.append(AuditEntry.operation_ids.contains([operation_id]))
    if since is not None:
        conditions.append(AuditEntry.occurred_at >= since)
    if after is not None:
        conditions.append(
            or_(
                AuditEntry.occurred_at < after.created_at,
                and_(AuditEntry.occurred_at == after.created_at, AuditEntry.id < after.id),
            )
        )
    statement = (
        select(AuditEntry)
        .where(*conditions)
        .order_by(AuditEntry.occurred_at.desc(), AuditEntry.id.desc())
        .limit(limit)
    )
    return (await session.scalars(statement)).all()


async def entry(session: AsyncSession, entry_id: str) -> AuditEntry | None:
    return await session.get(AuditEntry, entry_id)
