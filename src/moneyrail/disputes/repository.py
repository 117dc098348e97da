"""Queries over disputes and their evidence files, within one tenant unless a name says otherwise."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import and_, select
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.db.pagination import newest_first_page
from moneyrail.kit.pagination import Position
from moneyrail.kit.tenant import Tenant
from moneyrail.models import Dispute, DisputeFile, PaymentIntent

UNDECIDED = ("needs_response", "under_review")


def _dispute_of(tenant: Tenant) -> Any:
    return and_(Dispute.installation_id == tenant.installation_id, Dispute.livemode == tenant.livemode)


async def get_dispute(
    session: AsyncSession, tenant: Tenant, dispute_id: str, *, for_update: bool = False
) -> Dispute | None:
    statement = select(Dispute).where(_dispute_of(tenant), Dispute.id == dispute_id)
    if for_update:
        statement = statement.with_for_update()
    return await session.scalar(statement)


async def dispute_of_payment(session: AsyncSession, payment_id: str) -> Dispute | None:
    return await session.scalar(select(Dispute).where(Dispute.payment_intent_id == payment_id))


async def dispute_by_network_id(
    session: AsyncSession, tenant: Tenant, network_dispute: str
) -> Dispute | None:
    """The dispute the network knows as `network_dispute`, locked."""
    return await session.scalar(
        select(Dispute)
        .where(_dispute_of(tenant), Dispute.network_dispute == network_dispute)
        .with_for_update()
        .execution_options(populate_existing=True)
    )


async def get_dispute_by_operation(session: AsyncSession, operation_id: str) -> Dispute | None:
    return await session.scalar(
        select(Dispute).where(Dispute.withdrawal_operation_id == operation_id).with_for_update()
    )


async def list_disputes(
    session: AsyncSession, tenant: Tenant, *, limit: int, after: Position | None, payment_intent: str | None
) -> Sequence[Dispute]:
    statement = select(Dispute).where(_dispute_of(tenant))
    if payment_intent is not None:
        statement = statement.where(Dispute.payment_intent_id == payment_intent)
    return (await session.scalars(newest_first_page(statement, Dispute, limit=limit, after=after))).all()


async def payments_by_authorization(
    session: AsyncSession, tenant: Tenant, authorization_ids: Sequence[str]
) -> dict[str, str]:
    """The payment each network authorization belongs to (the network names disputes by authorization)."""
    if not authorization_ids:
        return {}
    rows = await session.execute(
        select(PaymentIntent.processor_authorization, PaymentIntent.id).where(
            PaymentIntent.installation_id == tenant.installation_id,
            PaymentIntent.livemode == tenant.livemode,
            PaymentIntent.processor_authorization.in_(authorization_ids),
        )
    )
    return {authorization: payment for authorization, payment in rows if authorization is not None}


async def disputed_payments(session: AsyncSession, payment_ids: Sequence[str]) -> set[str]:
    if not payment_ids:
        return set()
    rows = await session.scalars(
        select(Dispute.payment_intent_id).where(Dispute.payment_intent_id.in_(payment_ids))
    )
    return set(rows)


async def tenants_with_undecided_disputes(session: AsyncSession) -> list[Tenant]:
    rows = await session.execute(
        select(Dispute.installation_id, Dispute.livemode).where(Dispute.status.in_(UNDECIDED)).distinct()
    )
    return [Tenant(installation_id, livemode) for installation_id, livemode in rows]


async def undecided_disputes(session: AsyncSession, tenant: Tenant, limit: int) -> Sequence[Dispute]:
    """Undecided disputes, withdrawn or not, locked for this sweep (others, and one whose withdrawal is
    running, wait their turn)."""
    return (
        await session.scalars(
            select(Dispute)
            .where(_dispute_of(tenant), Dispute.status.in_(UNDECIDED))
            .order_by(Dispute.created_at, Dispute.id)
            .limit(limit)
            .with_for_update(skip_locked=True)
        )
    ).all()


async def files_of(session: AsyncSession, dispute_id: str) -> dict[str, DisputeFile]:
    rows = await session.scalars(select(DisputeFile).where(DisputeFile.dispute_id == dispute_id))
    return {row.id: row for row in rows}
