"""Queries over payment invoices, always within one tenant."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, and_, exists, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.db.pagination import newest_first_page
from moneyrail.kit.pagination import Position
from moneyrail.kit.tenant import Tenant
from moneyrail.models import Invoice, InvoiceDelivery


def _owned_by(tenant: Tenant) -> Any:
    return and_(Invoice.installation_id == tenant.installation_id, Invoice.livemode == tenant.livemode)


async def get(
    session: AsyncSession, tenant: Tenant, invoice_id: str, *, for_update: bool = False
) -> Invoice | None:
    statement = select(Invoice).where(_owned_by(tenant), Invoice.id == invoice_id)
    if for_update:
        statement = statement.with_for_update()
    return await session.scalar(statement)


def paid_by_payment(payment_intent_id: ColumnElement[str]) -> ColumnElement[bool]:
    """An invoice is paid by the payment (a condition asked with the payment's other facts)."""
    return exists().where(Invoice.payment_intent_id == payment_intent_id)


async def get_by_payment(
    session: AsyncSession, tenant: Tenant, payment_intent_id: str, *, for_update: bool = False
) -> Invoice | None:
    statement = select(Invoice).where(_owned_by(tenant), Invoice.payment_intent_id == payment_intent_id)
    if for_update:
        statement = statement.with_for_update()
    return await session.scalar(statement)


async def open_among_payments(
    session: AsyncSession, tenant: Tenant, payment_intent_ids: Sequence[str]
) -> set[str]:
    """Which of these payments an open invoice is paid by."""
    statement = select(Invoice.payment_intent_id).where(
        _owned_by(tenant), Invoice.payment_intent_id.in_(payment_intent_ids), Invoice.status == "open"
    )
    return {payment_id for payment_id in (await session.scalars(statement)).all() if payment_id}


async def list_page(
    session: AsyncSession, tenant: Tenant, *, limit: int, after: Position | None, customer: str | None
) -> Sequence[Invoice]:
    statement = select(Invoice).where(_owned_by(tenant))
    if customer is not None:
        statement = statement.where(Invoice.customer_id == customer)
    return (await session.scalars(newest_first_page(statement, Invoice, limit=limit, after=after))).all()


_NEXT_NUMBER = text(
    """
    INSERT INTO invoice_number_counters (installation_id, livemode, last_number)
    VALUES (:installation_id, :livemode, 1)
    ON CONFLICT (installation_id, livemode)
    DO UPDATE SET last_number = invoice_number_counters.last_number + 1
    RETURNING last_number
    """
)


async def take_next_number(session: AsyncSession, tenant: Tenant) -> int:
    """The environment's next invoice number. The counter's row stays locked until the transaction
    ends, so concurrent finalizations take numbers one after another, and a finalization that rolls
    back gives its number back: no gaps, no repeats."""
    number = await session.scalar(
        _NEXT_NUMBER, {"installation_id": tenant.installation_id, "livemode": tenant.livemode}
    )
    assert number is not None
    return int(number)


async def deliveries_of(
    session: AsyncSession, tenant: Tenant, invoice_ids: Sequence[str]
) -> list[InvoiceDelivery]:
    if not invoice_ids:
        return []
    statement = (
        select(InvoiceDelivery)
        .where(
            InvoiceDelivery.installation_id == tenant.installation_id,
            InvoiceDelivery.livemode == tenant.livemode,
            InvoiceDelivery.invoice_id.in_(list(invoice_ids)),
        )
        .order_by(InvoiceDelivery.created_at.desc(), InvoiceDelivery.id.desc())
    )
    return list((await session.scalars(statement)).all())


async def get_delivery(
    session: AsyncSession, tenant: Tenant, delivery_id: str, *, for_update: bool = False
) -> InvoiceDelivery | None:
    statement = select(InvoiceDelivery).where(
        InvoiceDelivery.installation_id == tenant.installation_id,
        InvoiceDelivery.livemode == tenant.livemode,
        InvoiceDelivery.id == delivery_id,
    )
    if for_update:
        statement = statement.with_for_update()
    return await session.scalar(statement)
