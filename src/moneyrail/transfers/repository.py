"""Queries over distributions, allocation groups, allocations, transfers and reversals."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm.attributes import set_committed_value

from moneyrail.db.pagination import newest_first_page
from moneyrail.db.raw import driver_connection
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


@dataclass(frozen=True)
class LockedCommit:
    """What a commit works on, all locked: the group, its source payment, its transfers with their
    allocations (in the allocations' order), and the sandbox clock's offset in seconds."""

    group: AllocationGroup
    payment: PaymentIntent
    transfers: list[tuple[Transfer, Allocation]]
    clock_offset: int


async def lock_for_commits(
    session: AsyncSession, targets: Sequence[tuple[Tenant, str]]
) -> dict[str, LockedCommit]:
    """The groups of (tenant, group id) `targets`, by id, in two round trips however many: the source
    payments' locks alone first, in id order, so two batches never deadlock and a refund stopping a
    group (which takes the payment, then the group) waits or is waited for; then a row per transfer,
    each carrying its group, payment and clock. A group of another tenant, or without transfers (which
    no commit leaves), is missing from the answer."""
    group_ids = sorted({group_id for _, group_id in targets})
    sources = select(AllocationGroup.payment_intent_id).where(AllocationGroup.id.in_(group_ids))
    await session.execute(
        select(PaymentIntent.id)
        .where(PaymentIntent.id.in_(sources))
        .order_by(PaymentIntent.id)
        .with_for_update()
    )
    offset = (
        select(SandboxClock.offset_seconds)
        .where(SandboxClock.installation_id == AllocationGroup.installation_id)
        .scalar_subquery()
    )
    statement = (
        select(AllocationGroup, PaymentIntent, func.coalesce(offset, 0), Transfer, Allocation)
        .join(PaymentIntent, PaymentIntent.id == AllocationGroup.payment_intent_id)
        .join(Transfer, Transfer.allocation_group_id == AllocationGroup.id)
        .join(Allocation, Allocation.id == Transfer.allocation_id)
        .where(AllocationGroup.id.in_(group_ids))
        .order_by(AllocationGroup.id, Allocation.position)
        .with_for_update(of=[AllocationGroup, PaymentIntent, Transfer])
        .execution_options(populate_existing=True)
    )
    rows: dict[str, list[Any]] = defaultdict(list)
    for row in await session.execute(statement):
        rows[row[0].id].append(row)
    owners = {group_id: tenant for tenant, group_id in targets}
    locked: dict[str, LockedCommit] = {}
    for group_id, found in rows.items():
        group, payment, clock_offset = found[0][:3]
        if Tenant(group.installation_id, group.livemode) != owners[group_id]:
            continue
        locked[group_id] = LockedCommit(
            group, payment, [(row[3], row[4]) for row in found], int(clock_offset)
        )
    return locked


_PAID_COLUMNS = (
    "status",
    "processor_transfer",
    "failure_code",
    "failure_message",
    "paid_at",
    "amount_pending_settlement",
    "updated_at",
)
_COMMITTED_COLUMNS = ("status", "failure_reason", "committed_at", "updated_at")
_WRITE_COMMITTED = """
    WITH paid AS (
        UPDATE transfers AS t
        SET status = v.status, processor_transfer = v.processor_transfer, failure_code = v.failure_code,
            failure_message = v.failure_message, paid_at = v.paid_at,
            amount_pending_settlement = v.amount_pending_settlement, updated_at = v.updated_at
        FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::timestamptz[],
                    $7::bigint[], $8::timestamptz[])
             AS v(id, status, processor_transfer, failure_code, failure_message, paid_at,
                  amount_pending_settlement, updated_at)
        WHERE t.id = v.id
        RETURNING 1
    ), payments AS (
        UPDATE payment_intents AS p SET amount_pending_settlement = v.amount_pending_settlement
        FROM unnest($9::text[], $10::bigint[]) AS v(id, amount_pending_settlement)
        WHERE p.id = v.id
        RETURNING 1
    )
    UPDATE allocation_groups AS g
    SET status = v.status, failure_reason = v.failure_reason, committed_at = v.committed_at,
        updated_at = v.updated_at
    FROM unnest($11::text[], $12::text[], $13::text[], $14::timestamptz[], $15::timestamptz[])
         AS v(id, status, failure_reason, committed_at, updated_at)
    WHERE g.id = v.id
"""


@dataclass(frozen=True)
class CommittedGroup:
    group: AllocationGroup
    payment: PaymentIntent
    paid: Sequence[Transfer]


async def write_committed(session: AsyncSession, committed: Sequence[CommittedGroup]) -> None:
    """What commits changed (their transfers paid, their groups committed, what of each source payment
    is still pending settlement) in one statement however many groups, instead of a flush's three per
    group; the rows in hand then marked as written so no flush repeats them. The changes were made on
    the rows (through kit/states) first. Groups may share a payment: it is written once, as it is now."""
    paid = [transfer for entry in committed for transfer in entry.paid]
    payments = list({entry.payment.id: entry.payment for entry in committed}.values())
    groups = [entry.group for entry in committed]
    connection = await driver_connection(session)
    await connection.execute(
        _WRITE_COMMITTED,
        *([getattr(transfer, column) for transfer in paid] for column in ("id", *_PAID_COLUMNS)),
        [payment.id for payment in payments],
        [payment.amount_pending_settlement for payment in payments],
        *([getattr(group, column) for group in groups] for column in ("id", *_COMMITTED_COLUMNS)),
    )
    for transfer in paid:
        for column in _PAID_COLUMNS:
            set_committed_value(transfer, column, getattr(transfer, column))
    for group in groups:
        for column in _COMMITTED_COLUMNS:
            set_committed_value(group, column, getattr(group, column))
    for payment in payments:
        set_committed_value(payment, "amount_pending_settlement", payment.amount_pending_settlement)


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
