"""Transfer reversals, by request or by the refund of a distributed payment (CONVENTIONS.md §13).

A reversal is a new journal entry beside the transfer's own, which never changes:

    reversal r    connect:<acct>:pending -z, connect:<acct>:available -(r - z),
                  balance:pending +z, balance:available +(r - z)

z is the part taken from what is still pending settlement of the transfer. The payment's lock comes
first, then the transfer's: the order every path that changes both takes, so two reversals of one
transfer (or a reversal and a refund) are checked one after the other.
"""

from __future__ import annotations

from collections.abc import Sequence

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.connect import service as connect
from moneyrail.engine.outcomes import PermanentFailure, TransientFailure
from moneyrail.engine.service import statuses_of
from moneyrail.errors import AmountInvalid, Conflict, ProcessorUnavailableError
from moneyrail.events.service import record_event
from moneyrail.kit.clock import utcnow
from moneyrail.kit.ids import new_id
from moneyrail.kit.money import split_largest_remainder
from moneyrail.kit.tenant import Tenant
from moneyrail.ledger import service as ledger
from moneyrail.models import AllocationGroup, Operation, PaymentIntent, Refund, Transfer, TransferReversal
from moneyrail.payments import fees
from moneyrail.payments import refunds as payment_refunds
from moneyrail.payments import service as payments
from moneyrail.processor.interface import Processor, ProcessorRefused, ProcessorUnavailable, operation_key

from . import repository
from .schemas import ReversalCreate, render_reversal
from .service import (
    PLATFORM_AVAILABLE,
    PLATFORM_PENDING,
    announce_group,
    announce_transfer,
    get_transfer,
    ledger_legs,
    move_group,
    move_transfer,
)

logger = structlog.get_logger("moneyrail.transfers")


# --- reversals --------------------------------------------------------------------------------------
async def _reverse(
    session: AsyncSession,
    tenant: Tenant,
    processor: Processor,
    payment: PaymentIntent,
    transfer: Transfer,
    amount: int,
    *,
    idempotency_key: str,
    reversal_id: str,
    refund_id: str | None,
    metadata: dict[str, str],
) -> TransferReversal:
    """One reversal: the processor first (keyed), then a new journal entry; the transfer's own entry stays."""
    assert transfer.processor_transfer is not None  # a paid transfer has one
    result = await processor.reverse_transfer(
        tenant, idempotency_key=idempotency_key, transfer_id=transfer.processor_transfer, amount=amount
    )
    from_pending = min(amount, transfer.amount_pending_settlement)
    await ledger.post(
        session,
        tenant,
        kind="transfer_reversal",
        reference=reversal_id,
        idempotency_key=f"{reversal_id}:reversal",
        postings=ledger_legs(
            transfer.currency,
            (connect.pending_account(transfer.destination), -from_pending),
            (connect.available_account(transfer.destination), -(amount - from_pending)),
            (PLATFORM_PENDING, from_pending),
            (PLATFORM_AVAILABLE, amount - from_pending),
        ),
    )
    fees.return_from_reversal(payment, from_pending)
    transfer.amount_pending_settlement -= from_pending
    transfer.amount_reversed += amount
    transfer.updated_at = utcnow()
    if transfer.amount_reversed == transfer.amount:
        move_transfer(transfer, "reversed")
    reversal = TransferReversal(
        id=reversal_id,
        installation_id=tenant.installation_id,
        livemode=tenant.livemode,
        transfer_id=transfer.id,
        amount=amount,
        currency=transfer.currency,
        refund_id=refund_id,
        processor_reversal=result.processor_id,
        metadata_=metadata,
    )
    await repository.add(session, reversal)
    await record_event(
        session, tenant, "transfer.reversal.created", render_reversal(reversal).model_dump(mode="json")
    )
    await announce_transfer(session, tenant, transfer, "transfer.reversed")
    logger.info(
        "transfer_reversed", transfer=transfer.id, reversal=reversal.id, amount=amount, refund=refund_id
    )
    return reversal


async def create_reversal(
    session: AsyncSession, tenant: Tenant, processor: Processor, transfer_id: str, command: ReversalCreate
) -> TransferReversal:
    found = await get_transfer(session, tenant, transfer_id)
    # the payment first, then the transfer: the order every path that changes both takes
    payment = await payments.lock_payment_intent(session, tenant, found.source_payment_intent_id)
    transfer = await repository.get_transfer(session, tenant, transfer_id, for_update=True)
    assert transfer is not None
    if transfer.status != "paid":
        raise Conflict(f"Only a paid transfer can be reversed; this one is {transfer.status}.")
    if await payment_refunds.promised_back(session, payment.id) > payment.amount_refunded:
        # the refund's own operation takes back what it needs (reverse_for_refund): a manual reversal
        # beside it would take the recipients' share twice
        raise Conflict(
            "A refund of this transfer's payment is in progress; it reverses the transfers it needs itself, "
            "so a manual reversal is refused until it finishes."
        )
    remaining = transfer.amount - transfer.amount_reversed
    amount = command.amount if command.amount is not None else remaining
    if amount > remaining:
        raise AmountInvalid(
            f"The reversal ({amount}) is more than what is left of the transfer ({remaining} of "
            f"{transfer.amount}).",
            param="amount",
        )
    reversal_id = new_id("trr")
    try:
        return await _reverse(
            session,
            tenant,
            processor,
            payment,
            transfer,
            amount,
            idempotency_key=f"{reversal_id}:reverse",
            reversal_id=reversal_id,
            refund_id=None,
            metadata=command.metadata,
        )
    except ProcessorUnavailable as fault:
        raise ProcessorUnavailableError(
            f"The processor did not answer ({fault}). Nothing was reversed; "
            "retry with the same Idempotency-Key."
        ) from fault
    except ProcessorRefused as refused:
        raise Conflict(f"The processor refused the reversal: {refused.code}: {refused.message}") from refused


async def _commits(
    session: AsyncSession, groups: Sequence[AllocationGroup]
) -> tuple[list[AllocationGroup], list[AllocationGroup]]:
    """The committing groups of a payment: (those whose commit is under way, those whose commit waits
    in `dead_letter` for an operator). Either stays `committing` until its commit ends for good."""
    committing = [group for group in groups if group.status == "committing"]
    statuses = await statuses_of(session, [g.operation_id for g in committing if g.operation_id])
    stuck = [group for group in committing if statuses.get(group.operation_id or "") == "dead_letter"]
    return [group for group in committing if group not in stuck], stuck


# --- disputes of distributed payments --------------------------------------------------------------------
async def reversible_transfers(
    session: AsyncSession, payment: PaymentIntent
) -> list[tuple[Transfer, str | None]]:
    """The paid transfers out of a payment with their allocation's role, locked, in the order they were
    made; TransientFailure while a commit is still sending them (take back what went, once it went). A
    commit waiting in `dead_letter` sends nothing until an operator decides: what went is taken back."""
    groups = await repository.groups_of_payment(session, payment.id)
    under_way, _ = await _commits(session, groups)
    if under_way:
        raise TransientFailure("the payment's distribution is still being committed")
    roles: dict[str, str | None] = {}
    for group in groups:
        allocations = await repository.allocations_of(session, group.id)
        roles.update({allocation.id: allocation.role for allocation in allocations})
    return [
        (transfer, roles.get(transfer.allocation_id))
        for transfer in await repository.transfers_of_payment(session, payment.id, for_update=True)
        if transfer.status == "paid"
    ]


async def reverse_in_operation(
    session: AsyncSession,
    processor: Processor,
    operation: Operation,
    payment: PaymentIntent,
    transfer: Transfer,
    amount: int,
    metadata: dict[str, str],
) -> TransferReversal:
    """A reversal made by another domain's operation (a dispute's withdrawal): its processor call keyed by
    the operation and the transfer, so a retried attempt reverses nothing twice."""
    return await _reverse(
        session,
        Tenant(payment.installation_id, payment.livemode),
        processor,
        payment,
        transfer,
        amount,
        idempotency_key=operation_key(operation.id, f"reverse:{transfer.id}"),
        reversal_id=new_id("trr"),
        refund_id=None,
        metadata=metadata,
    )


# --- refunds of distributed payments ---------------------------------------------------------------------
# a `failed` group is final: its unpaid transfers failed, and what it reserved for them was released
UNSENT_GROUP_STATUSES = ("open", "committing")


async def stop_unsent_distribution(session: AsyncSession, tenant: Tenant, payment: PaymentIntent) -> bool:
    """A refund of a subscription payment was accepted (spec 4.C): what of the payment's distribution
    has not gone out yet never will. Its groups not committed are `canceled` with their unsent transfers
    (a commit operation still queued, or a dead letter an operator retries, then finds nothing to send;
    one the operator discards leaves them canceled),
    and their reservation shrinks to what was sent, so the rest is the platform's to refund or to
    distribute anew. What was sent already is taken back by the refund's own operation
    (reverse_for_refund). The caller holds the payment's lock: a commit takes it before the group's, so
    one that is running finishes first and this stops nothing of what it sent. True if it stopped any."""
    stopped = False
    for found in await repository.groups_of_payment(session, payment.id):
        if found.status not in UNSENT_GROUP_STATUSES:
            continue
        group = await repository.get_group(session, tenant, found.id, for_update=True)
        assert group is not None
        for transfer in await repository.transfers_of_group(session, group.id, for_update=True):
            if transfer.status == "pending":
                move_transfer(transfer, "canceled")
                group.amount_allocated -= transfer.amount
                await session.flush()
                await announce_transfer(session, tenant, transfer, "transfer.canceled")
        move_group(group, "canceled")
        group.failure_reason = "stopped by a refund of its payment before it was sent"
        group.updated_at = utcnow()
        await session.flush()
        await announce_group(session, tenant, group, "allocation_group.updated")
        logger.info(
            "allocation_group_stopped_by_refund", allocation_group=group.id, payment_intent=payment.id
        )
        stopped = True
    return stopped


async def reverse_for_refund(
    session: AsyncSession, processor: Processor, operation: Operation, payment: PaymentIntent, refund: Refund
) -> None:
    """Before a distributed payment is refunded, the same operation takes back the refunded share of
    every transfer that went out of it (README: "Refunds of distributed payments").

    Each recipient gives back the same fraction of what it received as the payer gets back of what
    was paid; cumulative over the payment's refunds, so a full refund reverses everything. The split
    over transfers is largest remainder. The commission the service withheld is not returned, so that
    part of a refund comes from the platform's own balance: if the platform cannot cover it even with
    the reversals, the refund fails before anything moves.
    """
    tenant = Tenant(payment.installation_id, payment.livemode)
    groups = await repository.groups_of_payment(session, payment.id)
    under_way, stuck = await _commits(session, groups)
    if under_way:
        # its transfers are going out right now: wait for them, then take back what went
        raise TransientFailure("the payment's distribution is still being committed")
    if stuck:
        # a dead-lettered commit could still pay out money this refund would give back
        raise PermanentFailure(
            "distribution_unfinished",
            "A commit of this payment's distribution is dead-lettered: an operator retries or discards it "
            "(moneyrail dead-letters) before the payment can be refunded.",
        )
    transfers = [
        transfer
        for transfer in await repository.transfers_of_payment(session, payment.id, for_update=True)
        if transfer.status in {"paid", "reversed"}
    ]
    if not transfers:
        return
    refunded_after = payment.amount_refunded + refund.amount
    transferred = sum(transfer.amount for transfer in transfers)
    target_total = transferred * refunded_after // payment.amount_received
    targets = split_largest_remainder(target_total, [transfer.amount for transfer in transfers])
    already = await repository.reversed_by_refunds(session, [transfer.id for transfer in transfers])
    plan = [
        (
            transfer,
            min(max(0, target - already.get(transfer.id, 0)), transfer.amount - transfer.amount_reversed),
        )
        for transfer, target in zip(transfers, targets, strict=True)
    ]
    taking_back = sum(amount for _, amount in plan)
    accounts = [
        await ledger.ensure_account(session, tenant, code, payment.currency)
        for code in (PLATFORM_PENDING, PLATFORM_AVAILABLE)
    ]
    await ledger.lock_accounts(session, [account.id for account in accounts])
    held = sum(
        [
            await ledger.balance(session, tenant, code, payment.currency)
            for code in (PLATFORM_PENDING, PLATFORM_AVAILABLE)
        ]
    )
    if held + taking_back < refund.amount:
        raise PermanentFailure(
            "insufficient_platform_balance",
            f"The platform holds {held} {payment.currency} and the reversals bring back {taking_back}: "
            f"not enough to refund {refund.amount}.",
        )
    for transfer, amount in plan:
        if amount > 0:
            await _reverse(
                session,
                tenant,
                processor,
                payment,
                transfer,
                amount,
                idempotency_key=operation_key(operation.id, f"reverse:{transfer.id}"),
                reversal_id=new_id("trr"),
                refund_id=refund.id,
                metadata={},
            )


payment_refunds.register_refund_preparer(reverse_for_refund)
