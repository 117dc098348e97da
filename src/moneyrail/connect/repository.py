"""Queries over connected accounts and onboarding links, within one tenant unless a name says otherwise."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import and_, select
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.db.pagination import newest_first_page
from moneyrail.kit.pagination import Position
from moneyrail.kit.tenant import Tenant
from moneyrail.models import ConnectedAccount, OnboardingLink


def _account_of(tenant: Tenant) -> Any:
    return and_(
        ConnectedAccount.installation_id == tenant.installation_id,
        ConnectedAccount.livemode == tenant.livemode,
    )


async def add(session: AsyncSession, row: Any) -> None:
    session.add(row)
    await session.flush()
    await session.refresh(row, ["created_at"])


async def get_account(
    session: AsyncSession, tenant: Tenant, account_id: str, *, for_update: bool = False
) -> ConnectedAccount | None:
    statement = select(ConnectedAccount).where(_account_of(tenant), ConnectedAccount.id == account_id)
    if for_update:
        statement = statement.with_for_update()
    return await session.scalar(statement)


async def get_accounts(
    session: AsyncSession, tenant: Tenant, account_ids: Sequence[str], *, for_update: bool = False
) -> dict[str, ConnectedAccount]:
    statement = select(ConnectedAccount).where(
        _account_of(tenant), ConnectedAccount.id.in_(list(account_ids))
    )
    if for_update:
        # read anew under the lock: rows this session loaded before may have changed meanwhile
        statement = (
            statement.order_by(ConnectedAccount.id)
            .with_for_update()
            .execution_options(populate_existing=True)
        )
    rows = await session.scalars(statement)
    return {row.id: row for row in rows}


async def list_accounts(
    session: AsyncSession, tenant: Tenant, *, limit: int, after: Position | None, kind: str | None
) -> Sequence[ConnectedAccount]:
    statement = select(ConnectedAccount).where(_account_of(tenant))
    if kind is not None:
        statement = statement.where(ConnectedAccount.kind == kind)
    return (
        await session.scalars(newest_first_page(statement, ConnectedAccount, limit=limit, after=after))
    ).all()


async def get_link_by_token_hash(session: AsyncSession, token_hash: str) -> OnboardingLink | None:
    """Across tenants, locked: the link itself names its account (and so its tenant)."""
    return await session.scalar(
        select(OnboardingLink).where(OnboardingLink.token_hash == token_hash).with_for_update()
    )


async def get_account_of_merchant(
    session: AsyncSession, tenant: Tenant, merchant_id: str, *, for_update: bool = False
) -> ConnectedAccount | None:
    statement = select(ConnectedAccount).where(
        _account_of(tenant), ConnectedAccount.merchant_id == merchant_id
    )
    if for_update:
        statement = statement.with_for_update()
    return await session.scalar(statement)


async def account_ids_of_merchants(
    session: AsyncSession, tenant: Tenant, merchant_ids: Sequence[str]
) -> dict[str, str]:
    if not merchant_ids:
        return {}
    rows = await session.execute(
        select(ConnectedAccount.merchant_id, ConnectedAccount.id).where(
            _account_of(tenant), ConnectedAccount.merchant_id.in_(list(merchant_ids))
        )
    )
    return {merchant_id: account_id for merchant_id, account_id in rows if merchant_id is not None}


async def processor_accounts(
    session: AsyncSession, tenant: Tenant, account_ids: Sequence[str]
) -> dict[str, str | None]:
    """account id -> the processor's account it is linked to (None while it is not yet)."""
    if not account_ids:
        return {}
    rows = await session.execute(
        select(ConnectedAccount.id, ConnectedAccount.processor_account).where(
            _account_of(tenant), ConnectedAccount.id.in_(list(account_ids))
        )
    )
    return {account_id: processor_account for account_id, processor_account in rows}
