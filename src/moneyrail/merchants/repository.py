"""Queries over merchants and their connection records: within one tenant, or by a credential's hash
(which names the tenant)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import and_, select
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.db.pagination import newest_first_page
from moneyrail.kit.pagination import Position
from moneyrail.kit.tenant import Tenant
from moneyrail.models import (
    Merchant,
    MerchantAuthorizationCode,
    MerchantConnection,
    MerchantOnboardingSession,
)


def _owned_by(model: Any, tenant: Tenant) -> Any:
    return and_(model.installation_id == tenant.installation_id, model.livemode == tenant.livemode)


async def add(session: AsyncSession, row: Any) -> None:
    session.add(row)
    await session.flush()
    await session.refresh(row, ["created_at"])


async def get_merchant(
    session: AsyncSession, tenant: Tenant, merchant_id: str, *, for_update: bool = False
) -> Merchant | None:
    statement = select(Merchant).where(_owned_by(Merchant, tenant), Merchant.id == merchant_id)
    if for_update:
        statement = statement.with_for_update()
    return await session.scalar(statement.execution_options(populate_existing=True))


async def list_merchants(
    session: AsyncSession, tenant: Tenant, *, limit: int, after: Position | None
) -> Sequence[Merchant]:
    statement = newest_first_page(
        select(Merchant).where(_owned_by(Merchant, tenant)), Merchant, limit=limit, after=after
    )
    return (await session.scalars(statement)).all()


async def connection_by_token_hash(session: AsyncSession, token_hash: str) -> MerchantConnection | None:
    """Across tenants, locked: the consent page's link names the connection (and so the tenant)."""
    return await session.scalar(
        select(MerchantConnection)
        .where(MerchantConnection.token_hash == token_hash)
        .with_for_update()
        .execution_options(populate_existing=True)
    )


async def open_connections_of(session: AsyncSession, merchant_id: str) -> Sequence[MerchantConnection]:
    return (
        await session.scalars(
            select(MerchantConnection)
            .where(MerchantConnection.merchant_id == merchant_id, MerchantConnection.status == "open")
            .with_for_update()
        )
    ).all()


async def code_by_hash(
    session: AsyncSession, tenant: Tenant, code_hash: str
) -> MerchantAuthorizationCode | None:
    """Locked: two token requests with one code take turns, and the second finds it used."""
    return await session.scalar(
        select(MerchantAuthorizationCode)
        .where(_owned_by(MerchantAuthorizationCode, tenant), MerchantAuthorizationCode.code_hash == code_hash)
        .with_for_update()
        .execution_options(populate_existing=True)
    )


async def onboarding_by_token_hash(
    session: AsyncSession, token_hash: str
) -> MerchantOnboardingSession | None:
    return await session.scalar(
        select(MerchantOnboardingSession)
        .where(MerchantOnboardingSession.token_hash == token_hash)
        .with_for_update()
        .execution_options(populate_existing=True)
    )


async def connection_statuses(
    session: AsyncSession, tenant: Tenant, merchant_ids: Sequence[str]
) -> dict[str, str]:
    if not merchant_ids:
        return {}
    rows = await session.execute(
        select(Merchant.id, Merchant.connection_status).where(
            _owned_by(Merchant, tenant), Merchant.id.in_(list(merchant_ids))
        )
    )
    return {merchant_id: status for merchant_id, status in rows}
