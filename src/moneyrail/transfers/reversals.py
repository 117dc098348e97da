"""Transfer reversals, by request or by the refund of a distributed payment (CONVENTIONS.md §13).

A reversal is a new journal entry beside the transfer's own, which never changes:

    reversal r    connect:<acct>:pending -z, connect:<acct>:available -(r - z),
                  balance:pending +z, balance:available +(r - z)

z is the part taken from what is still pending settlement of the transfer. The payment's lock comes
first, then the transfer's: the order every path that changes both takes, so two reversals of one
transfer (or a reversal and a refund) are checked one after the other.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

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
from moneyrail.processor.interface import (
    Processor,
    ProcessorRefused,
    ProcessorUnavailable,
    TransferReversalResult,
    operation_key,
)

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
@dataclass(frozen=True)
class PlannedReversal:
    """A reversal an operation asks of the processor: read in its first phase, asked with no row
    locked, booked in its recording (engine `PhasedHandler`)."""

    transfer_id: str
    processor_transfer: str
    amount: int
    idempotency_key: str


def planned_in_operation(operation: Operation, transfer: Transfer, amount: int) -> PlannedReversal:
    """A reversal made by an operation (a refund's, a dispute's withdrawal): its processor call keyed by
    the operation and the transfer, so a retried attempt reverses nothing twice."""
    assert transfer.processor_transfer is not None  # a paid transfer has one
    return PlannedReversal(
        transfer.id,
        transfer.processor_transfer,
        amount,
        operation_key(operation.id, f"reverse:{transfer.id}"),
    )


AnsweredReversal = tuple[PlannedReversal, TransferReversalResult]


async def ask_reversals(
    processor: Processor, tenant: Tenant, planned: Sequence[PlannedReversal]
) -> list[AnsweredReversal]:
    """The reversals at the processor, concurrently, each under its own key; a failure of any raised
    (the first, in the plan's order) once all have ended."""
    answers = await asyncio.gather(
        *(
            processor.reverse_transfer(
                tenant,
                idempotency_key=reversal.idempotency_key,
                transfer_id=reversal.processor_transfer,
                amount=reversal.amount,
            )
            for reversal in planned
        ),
        return_exceptions=True,
    )
    for answer in answers:
        if isinstance(answer, BaseException):
            raise answer
    return [
        (reversal, answer)
        for reversal, answer in zip(planned, answers, strict=True)
        if not isinstance(answer, BaseException)
    ]


async def book_reversals(
    session: AsyncSession,
    tenant: Tenant,
    payment: PaymentIntent,
    answered: Sequence[AnsweredReversal],
    *,
    refund_id: str | None,
    metadata: dict[str, str],
) -> int:
    """What the processor reversed, booked: the caller has locked the payment again; its transfers are
    locked here. Booked as answered, whatever changed since the plan: the money moved at the processor.
    The total reversed."""
    if not answered:
        return 0
    transfers = {
        transfer.id: transfer
        for transfer in await repository.transfers_of_payment(session, payment.id, for_update=True)
    }
    for reversal, result in answered:
        await _book_reversal(
            session,
            tenant,
            payment,
            transfers[reversal.transfer_id],
            reversal.amount,
            result,
            reversal_id=new_id("trr"),
            refund_id=refund_id,
            metadata=metadata,
        )
    return sum(reversal.amount for reversal, _ in answered)


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
    return await _book_reversal(
        session,
        tenant,
        payment,
        transfer,
        amount,
        result,
        reversal_id=reversal_id,
        refund_id=refund_id,
        metadata=metadata,
    )


async def _book_reversal(
    session: AsyncSession,
    tenant: Tenant,
    payment: PaymentIntent,
    transfer: Transfer,
    amount: int,
    result: TransferReversalResult,
    *,
    reversal_id: str,
    refund_id: str | None,
    metadata: dict[str, str],
) -> TransferReversal:
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
    (reverse_for_refund). The caller holds the payment's lock, which a commit takes (before the group's)
    to read what it sends: a commit whose operation is running may have its transfers at the processor
    by now, with no lock held, so its group is left to finish; the refund's operation waits for it
    (reverse_for_refund) and takes back what it sent. True if it stopped any."""
    stopped = False
    found_groups = await repository.groups_of_payment(session, payment.id)
    operations = await statuses_of(
        session, [g.operation_id for g in found_groups if g.status == "committing" and g.operation_id]
    )
    for found in found_groups:
        if found.status not in UNSENT_GROUP_STATUSES:
            continue
        if operations.get(found.operation_id or "") == "running":
            continue  # at the processor now (see above)
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
) -> payment_refunds.RefundSideCall | None:
    """Before a distributed payment is refunded, the same operation takes back the refunded share of
    every transfer that went out of it (README: "Refunds of distributed payments").

    Each recipient gives back the same fraction of what it received as the payer gets back of what
    was paid; cumulative over the payment's refunds, so a full refund reverses everything. The split
    over transfers is largest remainder. The commission the service withheld is not returned, so that
    part of a refund comes from the platform's own balance: if the platform cannot cover it even with
    the reversals, the refund fails before anything moves.

    The refund operation's first phase (the payment locked): the plan, made once the payment's older
    refunds are over (each plans on what the ones before it took back). Its call: the reversals,
    concurrently, each keyed by the operation and its transfer. Its recording books what they answered.
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
        return None
    if await payment_refunds.refund_in_progress(session, payment.id, before=refund):
        raise TransientFailure("an earlier refund of this payment is still being made")
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
    planned = [planned_in_operation(operation, transfer, amount) for transfer, amount in plan if amount > 0]
    if not planned:
        return None
    refund_id = refund.id

    async def call() -> payment_refunds.RefundSideRecording:
        answered = await ask_reversals(processor, tenant, planned)

        async def record(session: AsyncSession, payment: PaymentIntent) -> None:
            await book_reversals(session, tenant, payment, answered, refund_id=refund_id, metadata={})

        return record

    return call


payment_refunds.register_refund_preparer(reverse_for_refund)
