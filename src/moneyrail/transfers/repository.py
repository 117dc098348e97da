"""Queries over distributions, allocation groups, allocations, transfers and reversals."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from sqlalchemy import and_, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.db.pagination import newest_first_page
from moneyrail.kit.pagination import Position
from moneyrail.kit.tenant import Tenant
from moneyrail.models import (
    Allocation,
    AllocationGroup,
    PaymentDistribution,
    PaymentIntent,
    SandboxClock,
    Transfer,
    TransferReversal,
)


def _owned(model: Any, tenant: Tenant) -> Any:
    return and_(model.installation_id == tenant.installation_id, model.livemode == tenant.livemode)


async def add(session: AsyncSession, row: Any) -> None:
    session.add(row)
    await session.flush()
    await session.refresh(row, ["created_at"])


async def get_distribution(session: AsyncSession, payment_id: str) -> PaymentDistribution | None:
    return await session.scalar(
        select(PaymentDistribution)
        .where(PaymentDistribution.payment_intent_id == payment_id)
        .with_for_update()
    )


async def get_group(
    session: AsyncSession, tenant: Tenant, group_id: str, *, for_update: bool = False
) -> AllocationGroup | None:
    statement = select(AllocationGroup).where(_owned(AllocationGroup, tenant), AllocationGroup.id == group_id)
    if for_update:
        statement = statement.with_for_update()
    return await session.scalar(statement.execution_options(populate_existing=True))


async def lock_group_for_commit(
    session: AsyncSession, tenant: Tenant, group_id: str
) -> tuple[AllocationGroup, PaymentIntent, int] | None:
    """A commit's group and its source payment, both locked (the group first, as every writer takes
    them), with the sandbox clock's offset in seconds: one round trip."""
    offset = (
        select(SandboxClock.offset_seconds)
        .where(SandboxClock.installation_id == AllocationGroup.installation_id)
        .scalar_subquery()
    )
    statement = (
        select(AllocationGroup, PaymentIntent, func.coalesce(offset, 0))
        .join(PaymentIntent, PaymentIntent.id == AllocationGroup.payment_intent_id)
        .where(_owned(AllocationGroup, tenant), AllocationGroup.id == group_id)
        .with_for_update(of=[AllocationGroup, PaymentIntent])
        .execution_options(populate_existing=True)
    )
    row = (await session.execute(statement)).first()
    if row is None:
        return None
    group, payment, offset_seconds = row
    return group, payment, int(offset_seconds)


async def transfers_with_allocations(
    session: AsyncSession, group_id: str
) -> list[tuple[Transfer, Allocation]]:
    """A committed group's transfers, locked, each with its allocation, in the allocations' order."""
    statement = (
        select(Transfer, Allocation)
        .join(Allocation, Allocation.id == Transfer.allocation_id)
        .where(Transfer.allocation_group_id == group_id)
        .order_by(Allocation.position)
        .with_for_update(of=Transfer)
        .execution_options(populate_existing=True)
    )
    return [(transfer, allocation) for transfer, allocation in (await session.execute(statement)).all()]


async def groups_of_payment(session: AsyncSession, payment_id: str) -> Sequence[AllocationGroup]:
    return (
        await session.scalars(
            select(AllocationGroup)
            .where(AllocationGroup.payment_intent_id == payment_id)
            .order_by(AllocationGroup.created_at, AllocationGroup.id)
        )
    ).all()


async def allocations_of(session: AsyncSession, group_id: str) -> list[Allocation]:
    return list(
        (
            await session.scalars(
                select(Allocation)
                .where(Allocation.allocation_group_id == group_id)
                .order_by(Allocation.position)
            )
        ).all()
    )


async def transfers_of_group(
    session: AsyncSession, group_id: str, *, for_update: bool = False
) -> list[Transfer]:
    statement = (
        select(Transfer)
        .join(Allocation, Allocation.id == Transfer.allocation_id)
        .where(Transfer.allocation_group_id == group_id)
        .order_by(Allocation.position)
    )
    if for_update:
        statement = statement.with_for_update(of=Transfer)
    return list((await session.scalars(statement.execution_options(populate_existing=True))).all())


async def transfers_of_payment(
    session: AsyncSession, payment_id: str, *, for_update: bool = False
) -> list[Transfer]:
    statement = (
        select(Transfer)
        .where(Transfer.source_payment_intent_id == payment_id)
        .order_by(Transfer.created_at, Transfer.id)
    )
    if for_update:
        statement = statement.with_for_update()
    return list((await session.scalars(statement.execution_options(populate_existing=True))).all())


async def get_transfer(
    session: AsyncSession, tenant: Tenant, transfer_id: str, *, for_update: bool = False
) -> Transfer | None:
    statement = select(Transfer).where(_owned(Transfer, tenant), Transfer.id == transfer_id)
    if for_update:
        statement = statement.with_for_update()
    return await session.scalar(statement.execution_options(populate_existing=True))


async def get_transfer_any_tenant(session: AsyncSession, transfer_id: str) -> Transfer | None:
    return await session.scalar(select(Transfer).where(Transfer.id == transfer_id).with_for_update())


async def list_transfers(
    session: AsyncSession,
    tenant: Tenant,
    *,
    limit: int,
    after: Position | None,
    destination: str | None,
    allocation_group: str | None,
    source_transaction: str | None,
) -> Sequence[Transfer]:
    statement = select(Transfer).where(_owned(Transfer, tenant))
    if destination is not None:
        statement = statement.where(Transfer.destination == destination)
    if allocation_group is not None:
        statement = statement.where(Transfer.allocation_group_id == allocation_group)
    if source_transaction is not None:
        statement = statement.where(Transfer.source_payment_intent_id == source_transaction)
    return (await session.scalars(newest_first_page(statement, Transfer, limit=limit, after=after))).all()


async def reversals_of(
    session: AsyncSession, transfer_ids: Sequence[str]
) -> dict[str, list[TransferReversal]]:
    found: dict[str, list[TransferReversal]] = defaultdict(list)
    if transfer_ids:
        rows = await session.scalars(
            select(TransferReversal)
            .where(TransferReversal.transfer_id.in_(list(transfer_ids)))
            .order_by(TransferReversal.created_at, TransferReversal.id)
        )
        for row in rows:
            found[row.transfer_id].append(row)
    return found


async def reversed_of_payment(session: AsyncSession, payment_id: str) -> int:
    total = await session.scalar(
        select(func.coalesce(func.sum(TransferReversal.amount), 0))
        .join(Transfer, Transfer.id == TransferReversal.transfer_id)
        .where(Transfer.source_payment_intent_id == payment_id)
    )
    return int(total or 0)


async def reversed_by_refunds(session: AsyncSession, transfer_ids: Sequence[str]) -> dict[str, int]:
    if not transfer_ids:
        return {}
    rows = await session.execute(
        select(TransferReversal.transfer_id, func.sum(TransferReversal.amount))
        .where(TransferReversal.transfer_id.in_(list(transfer_ids)), TransferReversal.refund_id.is_not(None))
        .group_by(TransferReversal.transfer_id)
    )
    return {transfer_id: int(amount) for transfer_id, amount in rows}


async def transfers_awaiting_settlement(session: AsyncSession, payment_id: str) -> list[Transfer]:
    return list(
        (
            await session.scalars(
                select(Transfer)
                .where(
                    Transfer.source_payment_intent_id == payment_id, Transfer.amount_pending_settlement > 0
                )
                .order_by(Transfer.created_at, Transfer.id)
                .with_for_update()
            )
        ).all()
    )


async def booked_transfers(session: AsyncSession, tenant: Tenant) -> list[Transfer]:
    """Every transfer the ledger paid (paid or reversed), oldest first."""
    return list(
        (
            await session.scalars(
                select(Transfer)
                .where(_owned(Transfer, tenant), Transfer.status.in_(("paid", "reversed")))
                .order_by(Transfer.created_at, Transfer.id)
            )
        ).all()
    )
