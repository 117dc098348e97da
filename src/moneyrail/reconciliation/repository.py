"""Queries over reconciliation runs."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.db.pagination import newest_first_page
from moneyrail.kit.pagination import Position
from moneyrail.kit.tenant import Tenant
from moneyrail.models import ReconciliationRun


async def add(session: AsyncSession, run: ReconciliationRun) -> None:
    session.add(run)
    await session.flush()
    await session.refresh(run, ["created_at"])


async def get(
    session: AsyncSession, tenant: Tenant, run_id: str, *, for_update: bool = False
) -> ReconciliationRun | None:
    statement = select(ReconciliationRun).where(
        ReconciliationRun.installation_id == tenant.installation_id,
        ReconciliationRun.livemode == tenant.livemode,
        ReconciliationRun.id == run_id,
    )
    if for_update:
        statement = statement.with_for_update()
    return await session.scalar(statement.execution_options(populate_existing=True))


async def list_runs(
    session: AsyncSession, tenant: Tenant, *, limit: int, after: Position | None
) -> Sequence[ReconciliationRun]:
    statement = select(ReconciliationRun).where(
        ReconciliationRun.installation_id == tenant.installation_id,
        ReconciliationRun.livemode == tenant.livemode,
    )
    return (
        await session.scalars(newest_first_page(statement, ReconciliationRun, limit=limit, after=after))
    ).all()
