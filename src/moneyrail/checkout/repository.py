"""Queries over checkout sessions: within one tenant, or by the link's token hash (which names the tenant)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import and_, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.kit.tenant import Tenant
from moneyrail.models import CheckoutSession


def _owned_by(tenant: Tenant) -> Any:
    return and_(
        CheckoutSession.installation_id == tenant.installation_id,
        CheckoutSession.livemode == tenant.livemode,
    )


async def add(session: AsyncSession, checkout: CheckoutSession) -> None:
    session.add(checkout)
    await session.flush()
    await session.refresh(checkout, ["created_at"])


async def get(
    session: AsyncSession, tenant: Tenant, checkout_id: str, *, for_update: bool = False
) -> CheckoutSession | None:
    statement = select(CheckoutSession).where(_owned_by(tenant), CheckoutSession.id == checkout_id)
    if for_update:
        statement = statement.with_for_update()
    return await session.scalar(statement.execution_options(populate_existing=True))


async def get_by_id_any_tenant(session: AsyncSession, checkout_id: str) -> CheckoutSession | None:
    """Across tenants, locked: the bank's return address names the session by id."""
    return await session.scalar(
        select(CheckoutSession)
        .where(CheckoutSession.id == checkout_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )


async def get_by_token_hash(session: AsyncSession, token_hash: str) -> CheckoutSession | None:
    """Across tenants, locked: the hosted page's link itself names the session.

    The lock comes first (before the payment's), as everywhere a session and its payment change together.
    """
    return await session.scalar(
        select(CheckoutSession)
        .where(CheckoutSession.token_hash == token_hash)
        .with_for_update()
        .execution_options(populate_existing=True)
    )


async def count_other_open_for_payment(session: AsyncSession, checkout: CheckoutSession) -> int:
    """Open sessions, other than this one, that take the same payment."""
    if checkout.payment_intent_id is None:
        return 0
    count = await session.scalar(
        select(func.count())
        .select_from(CheckoutSession)
        .where(
            CheckoutSession.payment_intent_id == checkout.payment_intent_id,
            CheckoutSession.status == "open",
            CheckoutSession.id != checkout.id,
        )
    )
    return int(count or 0)


async def due_open_sessions(
    session: AsyncSession, *, tenant: Tenant | None, livemode: bool | None, now: datetime, limit: int
) -> Sequence[CheckoutSession]:
    """Open sessions whose expiry has passed by `now`, soonest first, locked for this sweep.

    SKIP LOCKED: a session a payer is paying right now is left to the next sweep; two sweeps (the
    scheduler's and a sandbox clock advance) split the work instead of waiting on each other.
    """
    statement = select(CheckoutSession).where(
        CheckoutSession.status == "open", CheckoutSession.expires_at <= now
    )
    if tenant is not None:
        statement = statement.where(_owned_by(tenant))
    if livemode is not None:
        statement = statement.where(CheckoutSession.livemode == livemode)
    statement = (
        statement.order_by(CheckoutSession.expires_at)
        .limit(limit)
        .with_for_update(skip_locked=True)
        .execution_options(populate_existing=True)
    )
    return (await session.scalars(statement)).all()


async def lock_due_session(
    session: AsyncSession, tenant: Tenant, checkout_id: str, now: datetime
) -> CheckoutSession | None:
    """One session, still open and past its expiry at `now`, locked; None when a payer holds it (SKIP
    LOCKED, as in `due_open_sessions`) or it is no longer due."""
    statement = (
        select(CheckoutSession)
        .where(
            CheckoutSession.id == checkout_id,
            _owned_by(tenant),
            CheckoutSession.status == "open",
            CheckoutSession.expires_at <= now,
        )
        .with_for_update(skip_locked=True)
        .execution_options(populate_existing=True)
    )
    return (await session.scalars(statement)).one_or_none()


async def installations_with_open_sandbox_sessions(session: AsyncSession, limit: int) -> Sequence[str]:
    """Sandbox clocks run ahead of real time by their own offsets, so each is swept on its own clock."""
    statement = (
        select(CheckoutSession.installation_id)
        .where(CheckoutSession.status == "open", CheckoutSession.livemode.is_(False))
        .group_by(CheckoutSession.installation_id)
        .order_by(func.min(CheckoutSession.expires_at))
        .limit(limit)
    )
    return (await session.scalars(statement)).all()
