"""Queries over the billing tables, always within one tenant unless named otherwise."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, and_, exists, or_, select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.db.pagination import newest_first_page
from moneyrail.db.raw import driver_connection
from moneyrail.kit.pagination import Position
from moneyrail.kit.tenant import Tenant
from moneyrail.models import (
    AllocationGroup,
    Price,
    Product,
    Subscription,
    SubscriptionChange,
    SubscriptionInvoice,
)
from moneyrail.models.billing import UNAPPLIED_CHANGE_STATUSES


def _owned_by(model: Any, tenant: Tenant) -> Any:
    return and_(model.installation_id == tenant.installation_id, model.livemode == tenant.livemode)


async def add(
    session: AsyncSession, row: Product | Price | Subscription | SubscriptionInvoice | SubscriptionChange
) -> None:
    session.add(row)
    await session.flush()


async def get_product(
    session: AsyncSession, tenant: Tenant, product_id: str, *, for_update: bool = False
) -> Product | None:
    statement = select(Product).where(_owned_by(Product, tenant), Product.id == product_id)
    return await session.scalar(statement.with_for_update() if for_update else statement)


async def get_price(
    session: AsyncSession, tenant: Tenant, price_id: str, *, for_update: bool = False
) -> Price | None:
    statement = select(Price).where(_owned_by(Price, tenant), Price.id == price_id)
    return await session.scalar(statement.with_for_update() if for_update else statement)


async def get_subscription(
    session: AsyncSession, tenant: Tenant, subscription_id: str, *, for_update: bool = False
) -> Subscription | None:
    statement = select(Subscription).where(
        _owned_by(Subscription, tenant), Subscription.id == subscription_id
    )
    return await session.scalar(statement.with_for_update() if for_update else statement)


async def get_invoice(
    session: AsyncSession, tenant: Tenant, invoice_id: str, *, for_update: bool = False
) -> SubscriptionInvoice | None:
    statement = select(SubscriptionInvoice).where(
        _owned_by(SubscriptionInvoice, tenant), SubscriptionInvoice.id == invoice_id
    )
    return await session.scalar(statement.with_for_update() if for_update else statement)


def collected_by_payment(payment_intent_id: ColumnElement[str]) -> ColumnElement[bool]:
    """A subscription invoice (a cycle's or a change's) is collected by the payment (a condition asked
    with the payment's other facts)."""
    return exists().where(SubscriptionInvoice.payment_intent_id == payment_intent_id)


async def invoice_for_payment(session: AsyncSession, payment_id: str) -> SubscriptionInvoice | None:
    statement = select(SubscriptionInvoice).where(SubscriptionInvoice.payment_intent_id == payment_id)
    return await session.scalar(statement.with_for_update())


async def invoices_of_groups(
    session: AsyncSession, group_ids: Sequence[str]
) -> list[tuple[str, str, SubscriptionInvoice]]:
    """(group id, group status, invoice, locked) for each of these allocation groups whose source
    payment pays a subscription invoice, in one statement (across tenants: a batch of commits)."""
    rows = await session.execute(
        select(AllocationGroup.id, AllocationGroup.status, SubscriptionInvoice)
        .join(SubscriptionInvoice, SubscriptionInvoice.payment_intent_id == AllocationGroup.payment_intent_id)
        .where(AllocationGroup.id.in_(list(group_ids)))
        .order_by(SubscriptionInvoice.id)
        .with_for_update(of=SubscriptionInvoice)
    )
    return [(group_id, status, invoice) for group_id, status, invoice in rows]


async def cycle_invoice(
    session: AsyncSession, subscription_id: str, cycle: int
) -> SubscriptionInvoice | None:
    statement = select(SubscriptionInvoice).where(
        SubscriptionInvoice.subscription_id == subscription_id,
        SubscriptionInvoice.billing_kind == "cycle",
        SubscriptionInvoice.cycle == cycle,
    )
    return await session.scalar(statement)


async def unsettled_invoices(session: AsyncSession, subscription_id: str) -> Sequence[SubscriptionInvoice]:
    statement = select(SubscriptionInvoice).where(
        SubscriptionInvoice.subscription_id == subscription_id,
        SubscriptionInvoice.status.in_(("open", "failed")),
    )
    return (await session.scalars(statement.with_for_update())).all()


async def list_products(
    session: AsyncSession, tenant: Tenant, *, limit: int, after: Position | None
) -> Sequence[Product]:
    statement = newest_first_page(
        select(Product).where(_owned_by(Product, tenant)), Product, limit=limit, after=after
    )
    return (await session.scalars(statement)).all()


async def list_prices(
    session: AsyncSession, tenant: Tenant, *, limit: int, after: Position | None
) -> Sequence[Price]:
    statement = newest_first_page(
        select(Price).where(_owned_by(Price, tenant)), Price, limit=limit, after=after
    )
    return (await session.scalars(statement)).all()


async def list_subscriptions(
    session: AsyncSession, tenant: Tenant, *, limit: int, after: Position | None
) -> Sequence[Subscription]:
    statement = newest_first_page(
        select(Subscription).where(_owned_by(Subscription, tenant)), Subscription, limit=limit, after=after
    )
    return (await session.scalars(statement)).all()


async def list_invoices(
    session: AsyncSession, subscription_id: str, *, limit: int, after: Position | None
) -> Sequence[SubscriptionInvoice]:
    statement = newest_first_page(
        select(SubscriptionInvoice).where(SubscriptionInvoice.subscription_id == subscription_id),
        SubscriptionInvoice,
        limit=limit,
        after=after,
    )
    return (await session.scalars(statement)).all()


async def due_subscriptions(
    session: AsyncSession,
    *,
    tenant: Tenant | None,
    livemode: bool | None,
    now: datetime,
    unpaid_after: timedelta,
    limit: int,
    after: tuple[datetime, str] | None = None,
) -> Sequence[Subscription]:
    """Subscriptions with something due at `now`, locked: an active one whose period has ended and
    whose latest invoice is paid (no renewal open yet) or that cancels at the period's end, and an
    incomplete one left unpaid too long. SKIP LOCKED: two sweeps (a fail-over) share, never repeat.
    `after`: the last (period end, id) of the run's previous batch, where this one starts: the index
    is not walked again over the rows just settled (100,000 due at once made that quadratic)."""
    latest = SubscriptionInvoice
    statement = (
        select(Subscription)
        .join(latest, latest.id == Subscription.latest_invoice_id)
        .where(
            or_(
                and_(
                    Subscription.status == "active",
                    Subscription.current_period_end <= now,
                    or_(Subscription.cancel_at_period_end, latest.status == "paid"),
                ),
                and_(Subscription.status == "incomplete", Subscription.anchor_at <= now - unpaid_after),
            )
        )
        .order_by(Subscription.current_period_end, Subscription.id)
        .limit(limit)
        .with_for_update(of=Subscription, skip_locked=True)
    )
    if after is not None:
        statement = statement.where(
            Subscription.current_period_end >= after[0],
            tuple_(Subscription.current_period_end, Subscription.id) > tuple_(*after),
        )
    if tenant is not None:
        statement = statement.where(_owned_by(Subscription, tenant))
    if livemode is not None:
        statement = statement.where(Subscription.livemode == livemode)
    return (await session.scalars(statement)).all()


async def sandboxes_with_subscriptions(session: AsyncSession, limit: int) -> Sequence[str]:
    statement = (
        select(Subscription.installation_id)
        .where(Subscription.livemode.is_(False), Subscription.status.in_(("active", "incomplete")))
        .distinct()
        .limit(limit)
    )
    return (await session.scalars(statement)).all()


# --- changes --------------------------------------------------------------------------------------------
async def get_change(
    session: AsyncSession, tenant: Tenant, change_id: str, *, for_update: bool = False
) -> SubscriptionChange | None:
    statement = select(SubscriptionChange).where(
        _owned_by(SubscriptionChange, tenant), SubscriptionChange.id == change_id
    )
    return await session.scalar(statement.with_for_update() if for_update else statement)


async def unapplied_change(
    session: AsyncSession, subscription_id: str, *, for_update: bool = False
) -> SubscriptionChange | None:
    """The subscription's one change not yet applied, withdrawn or expired (a unique index)."""
    statement = select(SubscriptionChange).where(
        SubscriptionChange.subscription_id == subscription_id,
        SubscriptionChange.status.in_(UNAPPLIED_CHANGE_STATUSES),
    )
    return await session.scalar(statement.with_for_update() if for_update else statement)


async def change_for_invoice(session: AsyncSession, invoice_id: str) -> SubscriptionChange | None:
    statement = select(SubscriptionChange).where(SubscriptionChange.invoice_id == invoice_id)
    return await session.scalar(statement.with_for_update())


async def list_changes(
    session: AsyncSession, subscription_id: str, *, limit: int, after: Position | None
) -> Sequence[SubscriptionChange]:
    statement = newest_first_page(
        select(SubscriptionChange).where(SubscriptionChange.subscription_id == subscription_id),
        SubscriptionChange,
        limit=limit,
        after=after,
    )
    return (await session.scalars(statement)).all()


async def lapsed_changes(
    session: AsyncSession, *, tenant: Tenant | None, livemode: bool | None, now: datetime, limit: int
) -> Sequence[SubscriptionChange]:
    """Open proposals past their lifetime, locked (SKIP LOCKED: two sweeps share, never repeat)."""
    statement = (
        select(SubscriptionChange)
        .where(SubscriptionChange.status == "open", SubscriptionChange.expires_at <= now)
        .order_by(SubscriptionChange.expires_at)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    if tenant is not None:
        statement = statement.where(_owned_by(SubscriptionChange, tenant))
    if livemode is not None:
        statement = statement.where(SubscriptionChange.livemode == livemode)
    return (await session.scalars(statement)).all()


async def sandboxes_with_open_changes(session: AsyncSession, limit: int) -> Sequence[str]:
    statement = (
        select(SubscriptionChange.installation_id)
        .where(SubscriptionChange.livemode.is_(False), SubscriptionChange.status == "open")
        .distinct()
        .limit(limit)
    )
    return (await session.scalars(statement)).all()


async def with_unapplied_change(session: AsyncSession, subscription_ids: Sequence[str]) -> set[str]:
    """Which of these subscriptions have a change not yet applied, withdrawn or expired."""
    if not subscription_ids:
        return set()
    statement = select(SubscriptionChange.subscription_id).where(
        SubscriptionChange.subscription_id.in_(subscription_ids),
        SubscriptionChange.status.in_(UNAPPLIED_CHANGE_STATUSES),
    )
    return set((await session.scalars(statement)).all())


async def prices_by_id(session: AsyncSession, tenant: Tenant, price_ids: Sequence[str]) -> dict[str, Price]:
    statement = select(Price).where(_owned_by(Price, tenant), Price.id.in_(set(price_ids)))
    return {price.id: price for price in (await session.scalars(statement)).all()}


async def invoices_for_payments(
    session: AsyncSession, payment_ids: Sequence[str]
) -> dict[str, SubscriptionInvoice]:
    """The subscription invoices these payments collect, locked, by payment."""
    statement = (
        select(SubscriptionInvoice)
        .where(SubscriptionInvoice.payment_intent_id.in_(payment_ids))
        .order_by(SubscriptionInvoice.id)
        .with_for_update()
    )
    return {invoice.payment_intent_id: invoice for invoice in (await session.scalars(statement)).all()}


async def lock_subscriptions(
    session: AsyncSession, tenant: Tenant, subscription_ids: Sequence[str]
) -> dict[str, Subscription]:
    statement = (
        select(Subscription)
        .where(_owned_by(Subscription, tenant), Subscription.id.in_(set(subscription_ids)))
        .order_by(Subscription.id)
        .with_for_update()
    )
    return {subscription.id: subscription for subscription in (await session.scalars(statement)).all()}


async def lock_subscriptions_of_invoices(
    session: AsyncSession, tenant: Tenant, invoice_ids: Sequence[str]
) -> dict[str, Subscription]:
    """The subscriptions these invoices bill, locked in id order, in one statement (no read of the
    invoices before their own lock: the subscription is locked first, as everywhere)."""
    billed = select(SubscriptionInvoice.subscription_id).where(
        _owned_by(SubscriptionInvoice, tenant), SubscriptionInvoice.id.in_(set(invoice_ids))
    )
    statement = (
        select(Subscription)
        .where(_owned_by(Subscription, tenant), Subscription.id.in_(billed.scalar_subquery()))
        .order_by(Subscription.id)
        .with_for_update()
    )
    return {subscription.id: subscription for subscription in (await session.scalars(statement)).all()}


async def invoices_by_id(
    session: AsyncSession, tenant: Tenant, invoice_ids: Sequence[str], *, for_update: bool = False
) -> dict[str, SubscriptionInvoice]:
    statement = (
        select(SubscriptionInvoice)
        .where(_owned_by(SubscriptionInvoice, tenant), SubscriptionInvoice.id.in_(set(invoice_ids)))
        .order_by(SubscriptionInvoice.id)
    )
    if for_update:
        statement = statement.with_for_update()
    return {invoice.id: invoice for invoice in (await session.scalars(statement)).all()}


# --- the set-based opening of renewals: many rows in one statement each, on the driver (no ORM rows to
# flush and read back: a clock advance opens 100,000 renewals) ---------------------------------------
_INSERT_CYCLE_INVOICES = """
    INSERT INTO subscription_invoices (
        id, installation_id, livemode, subscription_id, billing_kind, cycle, status, amount, currency,
        period_start, period_end, payment_intent_id, terms_version, settlement_status, operation_id,
        created_at, updated_at)
    SELECT new.id, $1, $2, new.subscription_id, 'cycle', new.cycle, 'open', new.amount, new.currency,
        new.period_start, new.period_end, new.payment_intent_id, new.terms_version, 'not_applicable',
        new.operation_id, new.created_at, new.created_at
    FROM unnest($3::text[], $4::text[], $5::int[], $6::bigint[], $7::text[], $8::timestamptz[],
                $9::timestamptz[], $10::text[], $11::int[], $12::text[], $13::timestamptz[])
        AS new(id, subscription_id, cycle, amount, currency, period_start, period_end, payment_intent_id,
               terms_version, operation_id, created_at)
"""

_POINT_LATEST_INVOICES = """
    UPDATE subscriptions AS s SET latest_invoice_id = new.invoice_id, updated_at = $3
    FROM unnest($1::text[], $2::text[]) AS new(id, invoice_id)
    WHERE s.id = new.id
"""


async def insert_cycle_invoices(
    session: AsyncSession, tenant: Tenant, invoices: Sequence[SubscriptionInvoice]
) -> None:
    """Open cycle invoices without a distribution (built by `cycle_invoice`, never added to the session),
    written as the ORM would write them."""
    if any(invoice.distribution is not None or invoice.billing_kind != "cycle" for invoice in invoices):
        raise ValueError("only plain cycle invoices are inserted together")
    connection = await driver_connection(session)
    await connection.execute(
        _INSERT_CYCLE_INVOICES,
        tenant.installation_id,
        tenant.livemode,
        [invoice.id for invoice in invoices],
        [invoice.subscription_id for invoice in invoices],
        [invoice.cycle for invoice in invoices],
        [invoice.amount for invoice in invoices],
        [invoice.currency for invoice in invoices],
        [invoice.period_start for invoice in invoices],
        [invoice.period_end for invoice in invoices],
        [invoice.payment_intent_id for invoice in invoices],
        [invoice.terms_version for invoice in invoices],
        [invoice.operation_id for invoice in invoices],
        [invoice.created_at for invoice in invoices],
    )


async def point_latest_invoices(
    session: AsyncSession, latest: Sequence[tuple[str, str]], updated_at: datetime
) -> None:
    """(subscription id, invoice id) each: the subscriptions' `latest_invoice`, in one statement."""
    connection = await driver_connection(session)
    await connection.execute(
        _POINT_LATEST_INVOICES,
        [subscription_id for subscription_id, _ in latest],
        [invoice_id for _, invoice_id in latest],
        updated_at,
    )
