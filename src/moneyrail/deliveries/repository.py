"""Queries over receipt deliveries, and the payment rows a receipt reads (by id, within one tenant)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import and_, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.db.pagination import newest_first_page
from moneyrail.kit.pagination import Position
from moneyrail.kit.tenant import Tenant
from moneyrail.models import PaymentIntent, PaymentMethod, ReceiptDelivery, SandboxSmsMessage


def _delivery_owned_by(tenant: Tenant) -> Any:
    return and_(
        ReceiptDelivery.installation_id == tenant.installation_id,
        ReceiptDelivery.livemode == tenant.livemode,
    )


async def insert_delivery_unless_present(
    session: AsyncSession,
    tenant: Tenant,
    *,
    delivery_id: str,
    payment_intent_id: str,
    channel: str,
    recipient: str,
) -> ReceiptDelivery | None:
    """Insert a pending delivery; None when this payment has one for this channel already.

    ON CONFLICT DO NOTHING rather than catching the unique violation: a violation would abort the
    caller's transaction, which is the payment's own.
    """
    inserted = await session.scalar(
        insert(ReceiptDelivery)
        .values(
            id=delivery_id,
            installation_id=tenant.installation_id,
            livemode=tenant.livemode,
            payment_intent_id=payment_intent_id,
            channel=channel,
            recipient=recipient,
            status="pending",
        )
        .on_conflict_do_nothing(index_elements=[ReceiptDelivery.payment_intent_id, ReceiptDelivery.channel])
        .returning(ReceiptDelivery.id)
    )
    if inserted is None:
        return None
    return await session.get(ReceiptDelivery, inserted)


async def deliveries_of_payment(
    session: AsyncSession, tenant: Tenant, payment_intent_id: str, channels: Sequence[str] | None = None
) -> Sequence[ReceiptDelivery]:
    statement = select(ReceiptDelivery).where(
        _delivery_owned_by(tenant), ReceiptDelivery.payment_intent_id == payment_intent_id
    )
    if channels is not None:
        statement = statement.where(ReceiptDelivery.channel.in_(channels))
    return (await session.scalars(statement.order_by(ReceiptDelivery.channel))).all()


async def list_deliveries(
    session: AsyncSession, tenant: Tenant, payment_intent_id: str, *, limit: int, after: Position | None
) -> Sequence[ReceiptDelivery]:
    statement = select(ReceiptDelivery).where(
        _delivery_owned_by(tenant), ReceiptDelivery.payment_intent_id == payment_intent_id
    )
    return (
        await session.scalars(newest_first_page(statement, ReceiptDelivery, limit=limit, after=after))
    ).all()


async def get_delivery(
    session: AsyncSession, tenant: Tenant, delivery_id: str, *, for_update: bool = False
) -> ReceiptDelivery | None:
    statement = select(ReceiptDelivery).where(_delivery_owned_by(tenant), ReceiptDelivery.id == delivery_id)
    if for_update:
        statement = statement.with_for_update()
    return await session.scalar(statement)


async def get_payment(session: AsyncSession, tenant: Tenant, payment_intent_id: str) -> PaymentIntent | None:
    """The payment row itself, read by id (the payments domain owns it; receipts only read it)."""
    return await session.scalar(
        select(PaymentIntent).where(
            PaymentIntent.installation_id == tenant.installation_id,
            PaymentIntent.livemode == tenant.livemode,
            PaymentIntent.id == payment_intent_id,
        )
    )


async def get_payment_method(
    session: AsyncSession, tenant: Tenant, payment_method_id: str
) -> PaymentMethod | None:
    return await session.scalar(
        select(PaymentMethod).where(
            PaymentMethod.installation_id == tenant.installation_id,
            PaymentMethod.livemode == tenant.livemode,
            PaymentMethod.id == payment_method_id,
        )
    )


async def record_sandbox_sms(
    session: AsyncSession, tenant: Tenant, *, recipient: str, body: str, idempotency_key: str
) -> bool:
    """True if recorded now; False if a message with this key was recorded before (a retry)."""
    recorded = await session.scalar(
        insert(SandboxSmsMessage)
        .values(
            installation_id=tenant.installation_id,
            livemode=tenant.livemode,
            recipient=recipient,
            body=body,
            idempotency_key=idempotency_key,
        )
        .on_conflict_do_nothing(index_elements=[SandboxSmsMessage.idempotency_key])
        .returning(SandboxSmsMessage.id)
    )
    return recorded is not None
