"""Queries over customers, always within one tenant."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
from sqlalchemy import and_, select
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.db.pagination import newest_first_page
from moneyrail.db.raw import driver_connection
from moneyrail.kit.pagination import Position
from moneyrail.kit.tenant import Tenant
from moneyrail.models import Customer


def _owned_by(tenant: Tenant) -> Any:
    return and_(Customer.installation_id == tenant.installation_id, Customer.livemode == tenant.livemode)


_INSERT = """
    INSERT INTO customers (id, installation_id, livemode, external_reference, email, name, metadata)
    VALUES ($1, $2, $3, $4, $5, $6, $7)
    ON CONFLICT (installation_id, livemode, external_reference) WHERE external_reference IS NOT NULL
    DO NOTHING
    RETURNING created_at
"""


async def insert_unless_referenced(session: AsyncSession, customer: Customer) -> Customer | None:
    """Insert; if a customer with the same external_reference exists already, insert nothing.

    The intake's hottest statement, so straight on the driver (db/raw.py).
    """
    connection = await driver_connection(session)
    created_at = await connection.fetchval(
        _INSERT,
        customer.id,
        customer.installation_id,
        customer.livemode,
        customer.external_reference,
        customer.email,
        customer.name,
        orjson.dumps(customer.metadata_).decode(),
    )
    if created_at is None:
        return None
    customer.created_at = created_at
    return customer


async def get(session: AsyncSession, tenant: Tenant, customer_id: str) -> Customer | None:
    return await session.scalar(select(Customer).where(_owned_by(tenant), Customer.id == customer_id))


async def get_by_reference(session: AsyncSession, tenant: Tenant, reference: str) -> Customer | None:
    return await session.scalar(
        select(Customer).where(_owned_by(tenant), Customer.external_reference == reference)
    )


async def list_page(
    session: AsyncSession, tenant: Tenant, *, limit: int, after: Position | None
) -> Sequence[Customer]:
    statement = newest_first_page(
        select(Customer).where(_owned_by(tenant)), Customer, limit=limit, after=after
    )
    return (await session.scalars(statement)).all()
