"""Queries over saved cards, setup intents and customer sessions, always within one tenant."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import and_, func, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.db.pagination import newest_first_page
from moneyrail.db.raw import Write, WriteAt, driver_connection, inserted_row
from moneyrail.kit.pagination import Position
from moneyrail.kit.tenant import Tenant
from moneyrail.models import CustomerSession, PaymentMethod, SetupIntent


def _owned_by(model: Any, tenant: Tenant) -> Any:
    return and_(model.installation_id == tenant.installation_id, model.livemode == tenant.livemode)


def _attached_to(tenant: Tenant, customer_id: str) -> Any:
    return and_(
        _owned_by(PaymentMethod, tenant),
        PaymentMethod.customer_id == customer_id,
        PaymentMethod.detached_at.is_(None),
    )


def _customer_lock_id(customer_id: str) -> int:
    digest = hashlib.sha256(f"payment_methods|{customer_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


async def lock_customer_methods(session: AsyncSession, customer_id: str) -> None:
    """Serialize changes to one customer's saved cards until the transaction ends.

    Saving (dedupe, first-is-preferred), detaching and choosing the preferred card all read, then write;
    two of them at once would otherwise both see "no preferred card yet" or "not saved yet".
    """
    await session.execute(
        text("SELECT pg_advisory_xact_lock(:lock_id)"), {"lock_id": _customer_lock_id(customer_id)}
    )


async def add(session: AsyncSession, row: PaymentMethod | SetupIntent | CustomerSession) -> None:
    session.add(row)
    await session.flush()


# A saved card's row; `created_at` is the database's (its default, or a sandbox row's tenant clock).
def _insert_method_sql(first_parameter: int) -> str:
    numbers = ", ".join(f"${first_parameter + offset}" for offset in range(13))
    # only parameter numbers are formatted in
    return (
        "INSERT INTO payment_methods (id, installation_id, livemode, customer_id, merchant_id, "  # noqa: S608
        "processor_token, brand, last4, exp_month, exp_year, fingerprint, preferred, detached_at) "
        f"VALUES ({numbers})"
    )


_INSERT_METHOD = _insert_method_sql(1) + " RETURNING created_at"


async def insert_method(session: AsyncSession, method: PaymentMethod, *, flush_first: bool = True) -> None:
    """`add` for a new saved card, without the ORM's flush: its INSERT on the driver (a confirmation
    with a new card saves one on every request), the instance then the session's row. `flush_first`
    False: pending changes stay pending (they may refer to this card: they are written after it)."""
    if flush_first and (session.new or session.dirty or session.deleted):
        await session.flush()  # what a flush of its own would have written first
    connection = await driver_connection(session)
    created_at = await connection.fetchval(_INSERT_METHOD, *_method_values(method))
    inserted_row(session, method, created_at=created_at, detached_at=method.detached_at)


def method_insert(method: PaymentMethod) -> WriteAt:
    """`insert_method`'s INSERT as a write riding in another statement (a CTE of it), its parameters
    numbered from the one given. Nothing is read back: the row's `created_at` stays the database's."""

    def write(first_parameter: int) -> Write:
        return Write(_insert_method_sql(first_parameter), _method_values(method))

    return write


def _method_values(method: PaymentMethod) -> tuple[Any, ...]:
    return (
        method.id,
        method.installation_id,
        method.livemode,
        method.customer_id,
        method.merchant_id,
        method.processor_token,
        method.brand,
        method.last4,
        method.exp_month,
        method.exp_year,
        method.fingerprint,
        method.preferred,
        method.detached_at,
    )


async def get_method(session: AsyncSession, tenant: Tenant, method_id: str) -> PaymentMethod | None:
    return await session.scalar(
        select(PaymentMethod).where(_owned_by(PaymentMethod, tenant), PaymentMethod.id == method_id)
    )


async def methods_by_id(
    session: AsyncSession, tenant: Tenant, method_ids: Sequence[str]
) -> dict[str, PaymentMethod]:
    if not method_ids:
        return {}
    statement = select(PaymentMethod).where(
        _owned_by(PaymentMethod, tenant), PaymentMethod.id.in_(set(method_ids))
    )
    return {method.id: method for method in (await session.scalars(statement)).all()}


async def preferred_of_customers(
    session: AsyncSession, tenant: Tenant, customer_ids: Sequence[str]
) -> dict[str, PaymentMethod]:
    """Each of these customers' preferred attached card, by customer."""
    if not customer_ids:
        return {}
    statement = select(PaymentMethod).where(
        _owned_by(PaymentMethod, tenant),
        PaymentMethod.customer_id.in_(set(customer_ids)),
        PaymentMethod.detached_at.is_(None),
        PaymentMethod.preferred,
    )
    return {
        method.customer_id: method
        for method in (await session.scalars(statement)).all()
        if method.customer_id is not None
    }


async def get_attached(
    session: AsyncSession, tenant: Tenant, customer_id: str, method_id: str
) -> PaymentMethod | None:
    return await session.scalar(
        select(PaymentMethod).where(_attached_to(tenant, customer_id), PaymentMethod.id == method_id)
    )


async def find_attached_by_fingerprint(
    session: AsyncSession, tenant: Tenant, customer_id: str, fingerprint: str, *, merchant_id: str | None
) -> PaymentMethod | None:
    """The same card already saved for the customer on the same payment account."""
    return await session.scalar(
        select(PaymentMethod)
        .where(
            _attached_to(tenant, customer_id),
            PaymentMethod.fingerprint == fingerprint,
            PaymentMethod.merchant_id.is_not_distinct_from(merchant_id),
        )
        .order_by(PaymentMethod.created_at, PaymentMethod.id)
        .limit(1)
    )


async def preferred_id(session: AsyncSession, tenant: Tenant, customer_id: str) -> str | None:
    return await session.scalar(
        select(PaymentMethod.id).where(_attached_to(tenant, customer_id), PaymentMethod.preferred)
    )


async def clear_preferred(session: AsyncSession, tenant: Tenant, customer_id: str) -> None:
    await session.execute(
        update(PaymentMethod)
        .where(_attached_to(tenant, customer_id), PaymentMethod.preferred)
        .values(preferred=False)
    )


async def attached_page(
    session: AsyncSession, tenant: Tenant, customer_id: str, *, limit: int, after: Position | None
) -> Sequence[PaymentMethod]:
    statement = newest_first_page(
        select(PaymentMethod).where(_attached_to(tenant, customer_id)),
        PaymentMethod,
        limit=limit,
        after=after,
    )
    return (await session.scalars(statement)).all()


async def attached_preferred_first(
    session: AsyncSession, tenant: Tenant, customer_id: str, *, merchant_id: str | None
) -> Sequence[PaymentMethod]:
    """The customer's cards on one payment account (null: the installation's own)."""
    statement = (
        select(PaymentMethod)
        .where(_attached_to(tenant, customer_id), PaymentMethod.merchant_id.is_not_distinct_from(merchant_id))
        .order_by(PaymentMethod.preferred.desc(), PaymentMethod.created_at.desc(), PaymentMethod.id.desc())
    )
    return (await session.scalars(statement)).all()


async def get_setup_intent(
    session: AsyncSession, tenant: Tenant, setup_intent_id: str, *, for_update: bool = False
) -> SetupIntent | None:
    statement = select(SetupIntent).where(_owned_by(SetupIntent, tenant), SetupIntent.id == setup_intent_id)
    if for_update:
        # populate_existing: a row read before the lock is refreshed with what its holder committed
        statement = statement.with_for_update().execution_options(populate_existing=True)
    return await session.scalar(statement)


async def due_setup_intents(
    session: AsyncSession, *, tenant: Tenant | None, livemode: bool | None, now: datetime, limit: int
) -> Sequence[SetupIntent]:
    """Setup intents still waiting for a card whose expiry has passed by `now`, soonest first, locked.

    SKIP LOCKED: one being confirmed right now is left to its confirmation (which checks the expiry
    itself) and to the next sweep; two sweeps split the work instead of waiting on each other.
    """
    statement = select(SetupIntent).where(
        SetupIntent.status == "requires_payment_method", SetupIntent.expires_at <= now
    )
    if tenant is not None:
        statement = statement.where(_owned_by(SetupIntent, tenant))
    if livemode is not None:
        statement = statement.where(SetupIntent.livemode == livemode)
    statement = (
        statement.order_by(SetupIntent.expires_at)
        .limit(limit)
        .with_for_update(skip_locked=True)
        .execution_options(populate_existing=True)
    )
    return (await session.scalars(statement)).all()


async def installations_with_waiting_sandbox_setup_intents(
    session: AsyncSession, limit: int
) -> Sequence[str]:
    """Sandbox clocks run ahead of real time by their own offsets, so each is swept on its own clock."""
    statement = (
        select(SetupIntent.installation_id)
        .where(SetupIntent.status == "requires_payment_method", SetupIntent.livemode.is_(False))
        .group_by(SetupIntent.installation_id)
        .order_by(func.min(SetupIntent.expires_at))
        .limit(limit)
    )
    return (await session.scalars(statement)).all()


async def get_customer_session(
    session: AsyncSession, tenant: Tenant, customer_session_id: str
) -> CustomerSession | None:
    return await session.scalar(
        select(CustomerSession).where(
            _owned_by(CustomerSession, tenant), CustomerSession.id == customer_session_id
        )
    )
