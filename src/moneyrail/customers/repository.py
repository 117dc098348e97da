"""Queries over customers, always within one tenant."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import and_, or_, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.kit.pagination import Position
from moneyrail.kit.tenant import Tenant
from moneyrail.models import Customer


def _owned_by(tenant: Tenant) -> Any:
    return and_(Customer.installation_id == tenant.installation_id, Customer.livemode == tenant.livemode)


async def insert_unless_referenced(session: AsyncSession, values: dict[str, Any]) -> Customer | None:
    """Insert; if a customer with the same external_reference exists already, insert nothing."""
    statement = (
        insert(Customer)
        .values(**values)
        .on_conflict_do_nothing(
            index_elements=["installation_id", "livemode", "external_reference"],
            index_where=Customer.external_reference.is_not(None),
        )
        .returning(Customer)
    )
    return (await session.scalars(statement)).one_or_none()


async def get(session: AsyncSession, tenant: Tenant, customer_id: str) -> Customer | None:
    return await session.scalar(select(Customer).where(_owned_by(tenant), Customer.id == customer_id))


async def get_by_reference(session: AsyncSession, tenant: Tenant, reference: str) -> Customer | None:
    return await session.scalar(
        select(Customer).where(_owned_by(tenant), Customer.external_reference == reference)
    )


async def list_page(
    session: AsyncSession, tenant: Tenant, *, limit: int, after: Position | None
) -> Sequence[Customer]:
    statement = select(Customer).where(_owned_by(tenant))
    if after is not None:
        statement = statement.where(
            or_(
                Customer.created_at < after.created_at,
                and_(Customer.created_at == after.created_at, Customer.id < after.id),
            )
        )
    statement = statement.order_by(Customer.created_at.desc(), Customer.id.desc()).limit(limit + 1)
    return (await session.scalars(statement)).all()
