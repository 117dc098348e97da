"""Queries over commerce orders, always within one tenant."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, and_, exists, select
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.db.pagination import newest_first_page
from moneyrail.kit.pagination import Position
from moneyrail.kit.tenant import Tenant
from moneyrail.models import Order


def _owned_by(tenant: Tenant) -> Any:
    return and_(Order.installation_id == tenant.installation_id, Order.livemode == tenant.livemode)


async def get(
    session: AsyncSession, tenant: Tenant, order_id: str, *, for_update: bool = False
) -> Order | None:
    statement = select(Order).where(_owned_by(tenant), Order.id == order_id)
    if for_update:
        statement = statement.with_for_update()
    return await session.scalar(statement)


def binds_payment(payment_intent_id: ColumnElement[str]) -> ColumnElement[bool]:
    """An order is bound to the payment (a condition asked with the payment's other facts)."""
    return exists().where(Order.payment_intent_id == payment_intent_id)


async def get_by_payment(session: AsyncSession, tenant: Tenant, payment_intent_id: str) -> Order | None:
    return await session.scalar(
        select(Order).where(_owned_by(tenant), Order.payment_intent_id == payment_intent_id)
    )


async def list_page(
    session: AsyncSession, tenant: Tenant, *, limit: int, after: Position | None
) -> Sequence[Order]:
    statement = newest_first_page(select(Order).where(_owned_by(tenant)), Order, limit=limit, after=after)
    return (await session.scalars(statement)).all()
