"""Queries over payouts."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.db.pagination import newest_first_page
from moneyrail.kit.pagination import Position
from moneyrail.kit.tenant import Tenant
from moneyrail.models import Payout


async def add(session: AsyncSession, payout: Payout) -> None:
    session.add(payout)
    await session.flush()
    await session.refresh(payout, ["created_at"])


async def get_by_operation(session: AsyncSession, operation_id: str) -> Payout | None:
    return await session.scalar(
        select(Payout)
        .where(Payout.operation_id == operation_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )


async def list_for_account(
    session: AsyncSession, tenant: Tenant, account_id: str, *, limit: int, after: Position | None
) -> Sequence[Payout]:
    statement = select(Payout).where(
        Payout.installation_id == tenant.installation_id,
        Payout.livemode == tenant.livemode,
        Payout.connected_account_id == account_id,
    )
    return (await session.scalars(newest_first_page(statement, Payout, limit=limit, after=after))).all()


async def tenants_in_transit(session: AsyncSession) -> list[Tenant]:
    rows = await session.execute(
        select(Payout.installation_id, Payout.livemode).where(Payout.status == "in_transit").distinct()
    )
    return [Tenant(installation_id, livemode) for installation_id, livemode in rows]


async def arrived(session: AsyncSession, tenant: Tenant, now: datetime, limit: int) -> Sequence[Payout]:
    """In-transit payouts whose arrival date has come, locked for this sweep (SKIP LOCKED: two sweeps
    split the work)."""
    return (
        await session.scalars(
            select(Payout)
            .where(
                Payout.installation_id == tenant.installation_id,
                Payout.livemode == tenant.livemode,
                Payout.status == "in_transit",
                Payout.arrival_date <= now,
            )
            .order_by(Payout.arrival_date)
            .limit(limit)
            .with_for_update(skip_locked=True)
        )
    ).all()


async def get(
    session: AsyncSession, tenant: Tenant, payout_id: str, *, for_update: bool = False
) -> Payout | None:
    statement = select(Payout).where(
        Payout.installation_id == tenant.installation_id,
        Payout.livemode == tenant.livemode,
        Payout.id == payout_id,
    )
    if for_update:
        statement = statement.with_for_update()
    return await session.scalar(statement.execution_options(populate_existing=True))


async def get_by_processor_id(session: AsyncSession, tenant: Tenant, processor_payout: str) -> Payout | None:
    """The payout the processor knows as `processor_payout`, locked."""
    return await session.scalar(
        select(Payout)
        .where(
            Payout.installation_id == tenant.installation_id,
            Payout.livemode == tenant.livemode,
            Payout.processor_payout == processor_payout,
        )
        .with_for_update()
        .execution_options(populate_existing=True)
    )


async def list_all(
    session: AsyncSession, tenant: Tenant, *, limit: int, after: Position | None
) -> Sequence[Payout]:
    statement = select(Payout).where(
        Payout.installation_id == tenant.installation_id, Payout.livemode == tenant.livemode
    )
    return (await session.scalars(newest_first_page(statement, Payout, limit=limit, after=after))).all()
