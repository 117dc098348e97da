"""Queries over the console's tables: operators, their set-up links, their sessions."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import delete, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.models import Operator, OperatorSession, OperatorSetupLink


async def add(session: AsyncSession, row: Operator | OperatorSetupLink | OperatorSession) -> None:
    session.add(row)
    await session.flush()


async def operator_by_email(
    session: AsyncSession, email: str, *, for_update: bool = False
) -> Operator | None:
    statement = select(Operator).where(Operator.email == email)
    return await session.scalar(statement.with_for_update() if for_update else statement)


async def operator_by_id(
    session: AsyncSession, operator_id: str, *, for_update: bool = False
) -> Operator | None:
    statement = select(Operator).where(Operator.id == operator_id)
    return await session.scalar(statement.with_for_update() if for_update else statement)


async def operators(session: AsyncSession) -> Sequence[Operator]:
    return (await session.scalars(select(Operator).order_by(Operator.created_at, Operator.id))).all()


async def link_by_token_hash(session: AsyncSession, token_hash: str) -> OperatorSetupLink | None:
    """Locked: two first opens at once are one first open (kit/single_use.py)."""
    return await session.scalar(
        select(OperatorSetupLink).where(OperatorSetupLink.token_hash == token_hash).with_for_update()
    )


async def retire_links(session: AsyncSession, operator_id: str, now: datetime) -> None:
    """The operator's links not used yet stop working: only the newest one may set credentials."""
    await session.execute(
        update(OperatorSetupLink)
        .where(OperatorSetupLink.operator_id == operator_id, OperatorSetupLink.used_at.is_(None))
        .values(used_at=now)
    )


async def session_by_id(session: AsyncSession, session_id: str) -> OperatorSession | None:
    return await session.scalar(select(OperatorSession).where(OperatorSession.id == session_id))


async def end_sessions(session: AsyncSession, operator_id: str, now: datetime) -> None:
    await session.execute(
        update(OperatorSession)
        .where(OperatorSession.operator_id == operator_id, OperatorSession.ended_at.is_(None))
        .values(ended_at=now)
    )


async def delete_sessions_over(session: AsyncSession, before: datetime) -> int:
    """Sessions that ended, or could no longer be used, before `before`."""
    result = await session.execute(
        delete(OperatorSession).where(
            or_(OperatorSession.ended_at < before, OperatorSession.expires_at < before)
        )
    )
    return int(getattr(result, "rowcount", 0) or 0)
