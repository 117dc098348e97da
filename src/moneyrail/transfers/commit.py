"""The allocation_commit (and transfer) operation: a committing group's transfers made at the processor in
one batch call, then booked together (service.py's docstring has the state machines and the money).

Exactly once: the batch call has one key per attempt's set of unfinished transfers
(`op_…:transfers`), and each transfer in it keeps its own key (`op_…:alloc_…`), so a retried or
re-driven attempt replays the batch's answer, and a batch asked after an operator's retry answers the
transfers made before from their first call. A transfer the processor refused fails the attempt; the
dead-letter outcome marks it failed and moves it to its next key, so the retry asks for it alone anew.

Round trips of one commit (bench/allocations.py --statements): the group, its payment and its transfers
with their allocations locked, with the sandbox clock, in one statement; the processor's one
call (two statements that commit by themselves), every journal transaction in one statement, the
transfers', group's and payment's rows in one statement, every event in one statement.
"""

from __future__ import annotations

import hashlib
import re
from datetime import timedelta

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.connect import service as connect
from moneyrail.engine.outcomes import TransientFailure
from moneyrail.engine.service import register_outcome_listener
from moneyrail.events.service import record_events
from moneyrail.kit.clock import utcnow
from moneyrail.kit.tenant import Tenant
from moneyrail.ledger import service as ledger
from moneyrail.models import Operation, PaymentIntent, Transfer
from moneyrail.payments import fees
from moneyrail.processor.interface import BatchedTransfer, Processor, TransferRequest, operation_key

from . import repository
from .schemas import render_group, render_transfer
from .service import (
    COMMIT_TYPE,
    PLATFORM_AVAILABLE,
    PLATFORM_PENDING,
    TRANSFER_TYPE,
    announce_group,
    announce_transfer,
    ledger_legs,
    move_group,
    move_transfer,
)

logger = structlog.get_logger("moneyrail.transfers")


class TransferRefused(TransientFailure):
    """The processor refused transfers of the batch. Retried like a fault (each attempt replays the
    refusal under the same keys, moving nothing) until the operation dead-letters for an operator to
    decide. One line per refused transfer, which the dead-letter outcome reads back."""

    def __init__(self, refusals: list[tuple[str, str, str]]) -> None:
        super().__init__(
            "\n".join(f"{transfer_id} refused: {code}: {message}" for transfer_id, code, message in refusals)
        )
        self.refusals = refusals


REFUSED_TRANSFER = re.compile(r"\b(tr_[0-9A-Za-z]{24}) refused: ([a-z_]+): (.*)$", re.M)


def _processor_key(operation: Operation, transfer: Transfer) -> str:
    step = (
        transfer.allocation_id
        if transfer.key_generation == 0
        else f"{transfer.allocation_id}:{transfer.key_generation}"
    )
    return operation_key(operation.id, step)


def _batch_key(operation: Operation, keys: list[str]) -> str:
    """One key per set of transfers asked together: the first attempt's is `op_…:transfers`; after a
    refusal moved some transfer to its next key the set differs, and so does the key (a digest of it)."""
    if all(key.count(":") == 1 for key in keys):  # every transfer on its first key
        return operation_key(operation.id, "transfers")
    digest = hashlib.sha256("\n".join(keys).encode()).hexdigest()[:16]
    return operation_key(operation.id, f"transfers:{digest}")


def _transfer_entry(payment: PaymentIntent, transfer: Transfer) -> ledger.Entry:
    """The journal transaction of a paid transfer (service.py's docstring), and what of it still waits
    on the source payment's settlement recorded on the transfer."""
    from_pending = fees.take_for_transfer(payment, transfer.amount)
    rest = transfer.amount - from_pending
    transfer.amount_pending_settlement = from_pending
    return ledger.Entry(
        kind="transfer",
        reference=transfer.id,
        idempotency_key=f"{transfer.id}:transfer",
        postings=ledger_legs(
            transfer.currency,
            (PLATFORM_PENDING, -from_pending),
            (PLATFORM_AVAILABLE, -rest),
            (connect.pending_account(transfer.destination), from_pending),
            (connect.available_account(transfer.destination), rest),
        ),
    )


async def _ask_processor(
    processor: Processor, tenant: Tenant, operation: Operation, transfers: list[Transfer]
) -> list[BatchedTransfer]:
    """Every unfinished transfer in one call; a refusal of any fails the attempt (TransferRefused)."""
    requests = [
        TransferRequest(_processor_key(operation, t), t.amount, t.currency, t.destination) for t in transfers
    ]
    answers = await processor.create_transfers(
        tenant,
        idempotency_key=_batch_key(operation, [request.idempotency_key for request in requests]),
        transfers=requests,
    )
    refusals = [
        (transfer.id, answer.failure_code or "processor_error", answer.failure_message or "")
        for transfer, answer in zip(transfers, answers, strict=True)
        if answer.status != "paid"
    ]
    if refusals:
        raise TransferRefused(refusals)
    return answers


async def process_commit(session: AsyncSession, operation: Operation, processor: Processor) -> None:
    """The allocation_commit (and transfer) handler: every unfinished transfer of the group, once."""
    tenant = Tenant(operation.installation_id, operation.livemode)
    locked = await repository.lock_for_commit(session, tenant, operation.payload["allocation_group"])
    if locked is None or locked.group.status in ("committed", "canceled"):
        return  # done already, or stopped by a refund before it went out
    group, payment, rows = locked.group, locked.payment, locked.transfers
    if group.status == "failed":  # an operator retried the dead letter
        move_group(group, "committing")
        group.failure_reason = None
    transfers = [transfer for transfer, _ in rows]
    unfinished = [transfer for transfer in transfers if transfer.status not in {"paid", "reversed"}]
    answers = await _ask_processor(processor, tenant, operation, unfinished) if unfinished else []
    await ledger.post_many(session, tenant, [_transfer_entry(payment, transfer) for transfer in unfinished])
    # the tenant's present (sandbox_service.tenant_now), its clock read with the lock
    now = utcnow() + timedelta(seconds=0 if tenant.livemode else locked.clock_offset)
    for transfer, answer in zip(unfinished, answers, strict=True):
        if transfer.status == "failed":  # retried: pending again, then paid
            move_transfer(transfer, "pending")
        move_transfer(transfer, "paid")
        transfer.processor_transfer = answer.processor_id
        transfer.failure_code = None
        transfer.failure_message = None
        transfer.paid_at = now
    move_group(group, "committed")
    group.committed_at = now
    await repository.write_committed(session, group, payment, unfinished)
    # reversals exist only of transfers paid before this attempt (an operator's retry of a group partly
    # paid): a first commit has none to read
    reversals = (
        await repository.reversals_of(session, [transfer.id for transfer in transfers])
        if len(unfinished) < len(transfers)
        else {}
    )
    rendered_group = render_group(group, [allocation for _, allocation in rows], transfers, reversals)
    await record_events(
        session,
        tenant,
        [
            *(
                (
                    "transfer.paid",
                    render_transfer(transfer, reversals.get(transfer.id, [])).model_dump(mode="json"),
                )
                for transfer in unfinished
            ),
            ("allocation_group.updated", rendered_group.model_dump(mode="json")),
        ],
    )
    logger.info("allocation_group_committed", allocation_group=group.id, operation_id=operation.id)


async def _on_commit_outcome(session: AsyncSession, operation: Operation) -> None:
    """A commit that dead-lettered (or failed) leaves its group `failed`, with the reason; each transfer
    the processor refused is `failed` too and moves to its next key, so a retry asks for it anew."""
    if operation.type not in {COMMIT_TYPE, TRANSFER_TYPE} or operation.status not in {
        "dead_letter",
        "failed",
    }:
        return
    tenant = Tenant(operation.installation_id, operation.livemode)
    group = await repository.get_group(
        session, tenant, operation.payload["allocation_group"], for_update=True
    )
    if group is None or group.status != "committing":
        return
    move_group(group, "failed")
    group.failure_reason = operation.last_error
    for refused in REFUSED_TRANSFER.finditer(operation.last_error or ""):
        transfer = await repository.get_transfer(session, tenant, refused.group(1), for_update=True)
        if transfer is not None and transfer.status == "pending":
            move_transfer(transfer, "failed")
            transfer.failure_code = refused.group(2)
            transfer.failure_message = refused.group(3)[:500]
            transfer.key_generation += 1
            await session.flush()
            await announce_transfer(session, tenant, transfer, "transfer.failed")
    await session.flush()
    await announce_group(session, tenant, group, "allocation_group.updated")


register_outcome_listener(_on_commit_outcome)
