"""The allocation_commit (and transfer) operation: a committing group's transfers made at the processor in
one batch call, then booked together (service.py's docstring has the state machines and the money).

Exactly once: the batch call has one key per attempt's set of unfinished transfers
(`op_…:transfers`), and each transfer in it keeps its own key (`op_…:alloc_…`), so a retried or
re-driven attempt replays the batch's answer, and a batch asked after an operator's retry answers the
transfers made before from their first call. A transfer the processor refused fails the attempt; when
the operation dead-letters, the refused transfer moves to its next key (still `pending`, the refusal
shown in its `last_operation_error`), so an operator's retry asks for it alone anew. Only the operation's
end for good (a permanent refusal, or an operator's discard) makes the group and its unpaid transfers
`failed`, with `transfer.failed` (final means final, CONVENTIONS.md §9).

In phases (engine `PhasedHandler`, ARCHITECTURE.md "The processor is an outside system"): the groups are
locked and read in a first unit of work, which commits; the processor is called with no transaction or
lock held; the answers are booked in a second unit of work, with the operation's success. A worker that
dies between the call and the booking leaves the operation `running` until its lease runs out; the
relay re-drives it, and the next attempt's call under the same keys replays the processor's answer,
booked once.

A batch (transfers.COMMIT_BATCH commits to a message where the processor has a batch call,
`Processor.batches_calls`: the sandbox) runs as one: `prepare_commits` asks the processor once per
tenant for every transfer of the batch, each under its own operation's key; a refusal or a fault of any
fails the batch, which the engine then runs one operation at a time, each meeting its own answer under
its keys.

Round trips of a commit (bench/allocations.py --statements), however many groups the batch holds: the
source payments locked alone, in id order, then the groups, payments and transfers with their
allocations and the sandbox clock in one statement (once to read, once again to book); the processor's
one call per tenant (two statements that commit by themselves); every journal transaction in one
statement per tenant; every transfer's, group's and payment's row in one statement; every event in one
statement per tenant.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.connect import at_processor
from moneyrail.connect import service as connect
from moneyrail.engine.outcomes import AttemptError, TransientFailure
from moneyrail.engine.service import (
    Call,
    Recording,
    final_failure,
    register_attempt_failure_listener,
    register_outcome_listener,
)
from moneyrail.events.service import record_events
from moneyrail.kit.clock import utcnow
from moneyrail.kit.tenant import Tenant
from moneyrail.ledger import service as ledger
from moneyrail.models import Operation, PaymentIntent, Transfer, TransferReversal
from moneyrail.payments import fees
from moneyrail.processor.interface import Processor, TransferRequest, operation_key

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
        self.code = refusals[0][1]


REFUSED_TRANSFER = re.compile(r"\b(tr_[0-9A-Za-z]{24}) refused: ([a-z_]+): (.*)$", re.M)


def _processor_key(operation: Operation, transfer: Transfer) -> str:
    step = (
        transfer.allocation_id
        if transfer.key_generation == 0
        else f"{transfer.allocation_id}:{transfer.key_generation}"
    )
    return operation_key(operation.id, step)


def _batch_key(operations: Sequence[Operation], keys: list[str]) -> str:
    """One key per set of transfers asked together. One operation's first attempt: `op_…:transfers`;
    after a refusal moved some transfer to its next key the set differs, and so does the key (a digest
    of it). Several operations' (a batch): the first one's id and a digest of every transfer's key, so
    a re-driven batch of the same operations replays its answer."""
    if len(operations) == 1 and all(key.count(":") == 1 for key in keys):  # every one on its first key
        return operation_key(operations[0].id, "transfers")
    digest = hashlib.sha256("\n".join(keys).encode()).hexdigest()[:16]
    step = "transfers" if len(operations) == 1 else "batch"
    return operation_key(operations[0].id, f"{step}:{digest}")


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


@dataclass
class _Commit:
    """One operation's group, locked, and its transfers not paid yet."""

    operation: Operation
    tenant: Tenant
    locked: repository.LockedCommit
    unfinished: list[Transfer]


async def _lock_commits(
    session: AsyncSession, operations: Sequence[Operation]
) -> dict[Tenant, list[_Commit]]:
    """The operations' groups still `committing`, locked, by tenant, each with its unfinished transfers."""
    locked = await repository.lock_for_commits(
        session,
        [
            (Tenant(operation.installation_id, operation.livemode), operation.payload["allocation_group"])
            for operation in operations
        ],
    )
    by_tenant: dict[Tenant, list[_Commit]] = {}
    for operation in operations:
        found = locked.get(operation.payload["allocation_group"])
        if found is None or found.group.status != "committing":
            continue  # done already, or stopped by a refund before it went out
        tenant = Tenant(operation.installation_id, operation.livemode)
        unfinished = [t for t, _ in found.transfers if t.status not in {"paid", "reversed"}]
        by_tenant.setdefault(tenant, []).append(_Commit(operation, tenant, found, unfinished))
    return by_tenant


@dataclass(frozen=True)
class _Asked:
    """One tenant's transfers as asked of the processor in one call: which operation's, and the requests."""

    tenant: Tenant
    operations: list[Operation]
    transfer_ids: list[str]
    requests: list[TransferRequest]


async def _asking(session: AsyncSession, tenant: Tenant, commits: Sequence[_Commit]) -> _Asked | None:
    """The tenant's unfinished transfers as asked of the processor: each to the account the processor
    knows (at_processor.destinations: Stripe's own, made by the account's operation; the commit waits
    while one is not made yet), drawing on its source payment's charge."""
    asked = [(commit, transfer) for commit in commits for transfer in commit.unfinished]
    if not asked:
        return None
    known_as = await at_processor.destinations(session, tenant, [t.destination for _, t in asked])
    return _Asked(
        tenant,
        [commit.operation for commit in commits],
        [transfer.id for _, transfer in asked],
        [
            TransferRequest(
                _processor_key(commit.operation, t),
                t.amount,
                t.currency,
                known_as[t.destination],
                commit.locked.payment.processor_authorization,
            )
            for commit, t in asked
        ],
    )


async def _ask_processor(processor: Processor, asked: _Asked) -> dict[str, str]:
    """Every unfinished transfer of one tenant's commits in one call, each under its own operation's
    key; a refusal of any fails the attempt (TransferRefused), which splits a batch so that each
    operation asks again alone, and meets its own answer (its transfers' keys replay it). The processor
    ids by transfer id."""
    answers = await processor.create_transfers(
        asked.tenant,
        idempotency_key=_batch_key(asked.operations, [request.idempotency_key for request in asked.requests]),
        transfers=asked.requests,
    )
    refusals = [
        (transfer_id, answer.failure_code or "processor_error", answer.failure_message or "")
        for transfer_id, answer in zip(asked.transfer_ids, answers, strict=True)
        if answer.status != "paid"
    ]
    if refusals:
        raise TransferRefused(refusals)
    return {
        transfer_id: answer.processor_id or ""
        for transfer_id, answer in zip(asked.transfer_ids, answers, strict=True)
    }


def _paid(commit: _Commit) -> repository.CommittedGroup:
    """The group committed and its unfinished transfers paid, on the rows, at the tenant's present
    (engine/clock.py's tenant_now: its clock was read with the lock)."""
    locked = commit.locked
    now = utcnow() + timedelta(seconds=0 if commit.tenant.livemode else locked.clock_offset)
    for transfer in commit.unfinished:
        move_transfer(transfer, "paid")
        transfer.failure_code = None
        transfer.failure_message = None
        transfer.paid_at = now
    move_group(locked.group, "committed")
    locked.group.committed_at = now
    return repository.CommittedGroup(locked.group, locked.payment, commit.unfinished)


async def prepare_commits(
    session: AsyncSession, operations: Sequence[Operation], processor: Processor
) -> Call | None:
    """The allocation_commit (and transfer) handler in phases (engine `PhasedHandler`), set-based: every
    unfinished transfer of each operation's group, once, for one operation or a batch of them.

    First, the groups and their payments are locked long enough to read what is unfinished (a refund
    stopping a group waits, or is waited for), then committed. The call: one processor call per tenant
    (concurrent when there are several), with no row locked. The recording locks them again and books
    what the processor made: the journal transactions in one statement per tenant, every row's change
    in one statement, the events in one statement per tenant. A group that is committing with nothing
    left to ask is booked at once, in the first unit of work."""
    commits = await _lock_commits(session, operations)
    asked = [
        found
        for tenant, owned in commits.items()
        if (found := await _asking(session, tenant, owned)) is not None
    ]
    if not asked:
        await _book(session, commits, {})
        return None

    async def call() -> Recording:
        answered: dict[str, str] = {}
        for processor_ids in await _each_tenant(processor, asked):
            answered.update(processor_ids)

        async def record(session: AsyncSession) -> None:
            again = await _lock_commits(session, operations)
            unfinished = {t.id for owned in again.values() for commit in owned for t in commit.unfinished}
            if unfinished != answered.keys():
                # only this operation's own outcome ends a committing group, and only its commit pays a
                # transfer: a change means another attempt took over (its lease ran out). Nothing is
                # written; the next attempt asks again under the same keys, and books what they answer.
                raise TransientFailure("the allocation groups changed while the processor was asked")
            await _book(session, again, answered)

        return record

    return call


async def _each_tenant(processor: Processor, asked: Sequence[_Asked]) -> list[dict[str, str]]:
    """The tenants' calls, concurrently; a failure of any raised once all have ended."""
    answers = await asyncio.gather(*(_ask_processor(processor, one) for one in asked), return_exceptions=True)
    for answer in answers:
        if isinstance(answer, BaseException):
            raise answer
    return [answer for answer in answers if not isinstance(answer, BaseException)]


async def _book(
    session: AsyncSession, by_tenant: dict[Tenant, list[_Commit]], answered: dict[str, str]
) -> None:
    """The committed groups' books: their transfers paid with the processor's ids (`answered`)."""
    every = [commit for commits in by_tenant.values() for commit in commits]
    if not every:
        return
    for commit in every:
        for transfer in commit.unfinished:
            transfer.processor_transfer = answered[transfer.id]
    for tenant, commits in by_tenant.items():
        await ledger.post_many(
            session,
            tenant,
            [
                _transfer_entry(commit.locked.payment, transfer)
                for commit in commits
                for transfer in commit.unfinished
            ],
        )
    await repository.write_committed(session, [_paid(commit) for commit in every])
    # reversals exist only of transfers paid before this attempt (an operator's retry of a group partly
    # paid): a first commit has none to read
    partly_paid = [
        transfer.id
        for commit in every
        if len(commit.unfinished) < len(commit.locked.transfers)
        for transfer, _ in commit.locked.transfers
    ]
    reversals = await repository.reversals_of(session, partly_paid) if partly_paid else {}
    for tenant, commits in by_tenant.items():
        await record_events(
            session, tenant, [event for commit in commits for event in _events(commit, reversals)]
        )
    for commit in every:
        logger.info(
            "allocation_group_committed",
            allocation_group=commit.locked.group.id,
            operation_id=commit.operation.id,
        )


def _events(
    commit: _Commit, reversals: dict[str, list[TransferReversal]]
) -> list[tuple[str, dict[str, Any]]]:
    transfers = [transfer for transfer, _ in commit.locked.transfers]
    group = render_group(
        commit.locked.group, [allocation for _, allocation in commit.locked.transfers], transfers, reversals
    )
    return [
        *(
            ("transfer.paid", render_transfer(t, reversals.get(t.id, [])).model_dump(mode="json"))
            for t in commit.unfinished
        ),
        ("allocation_group.updated", group.model_dump(mode="json")),
    ]


def _refusals(operation: Operation) -> dict[str, tuple[str, str]]:
    """The transfers the processor refused in the operation's last attempt: (code, message) by id."""
    return {
        refused.group(1): (refused.group(2), refused.group(3)[:500])
        for refused in REFUSED_TRANSFER.finditer(operation.last_error or "")
    }


async def _on_commit_attempt_failed(session: AsyncSession, operation: Operation, error: AttemptError) -> None:
    """An attempt failed and the commit is not over (or failed for good, whose outcome follows): the
    group stays `committing` and its unpaid transfers `pending`, each showing the error, a refused one its
    own refusal. A dead letter moves each refused transfer to its next key, so that an operator's retry
    asks for it anew instead of replaying the refusal."""
    if operation.type not in {COMMIT_TYPE, TRANSFER_TYPE}:
        return
    tenant = Tenant(operation.installation_id, operation.livemode)
    group = await repository.get_group(
        session, tenant, operation.payload["allocation_group"], for_update=True
    )
    if group is None or group.status != "committing":
        return
    group.last_operation_error = error.as_json()
    group.updated_at = utcnow()
    refusals = _refusals(operation)
    for transfer in await repository.transfers_of_group(session, group.id, for_update=True):
        if transfer.status != "pending":
            continue
        refused = refusals.get(transfer.id)
        shown = error if refused is None else AttemptError(refused[0], refused[1], error.at)
        transfer.last_operation_error = shown.as_json()
        if refused is not None and operation.status == "dead_letter":
            transfer.key_generation += 1
        transfer.updated_at = utcnow()
    await session.flush()


async def _on_commit_outcome(session: AsyncSession, operation: Operation) -> None:
    """A commit that ended for good without paying everything (a permanent refusal, or an operator's
    discard of its dead letter) leaves its group `failed` and each transfer still unpaid `failed`, with
    `transfer.failed` once. Nothing of a failed transfer was booked, so no money comes back; what the
    group reserved for it is released (the payment may distribute or refund it again)."""
    if operation.type not in {COMMIT_TYPE, TRANSFER_TYPE} or operation.status not in {"failed", "canceled"}:
        return
    tenant = Tenant(operation.installation_id, operation.livemode)
    group = await repository.get_group(
        session, tenant, operation.payload["allocation_group"], for_update=True
    )
    if group is None or group.status != "committing":
        return
    move_group(group, "failed")
    ended = final_failure(operation, group.last_operation_error)
    group.failure_reason = f"{ended.code}: {ended.message}"
    group.updated_at = utcnow()
    for transfer in await repository.transfers_of_group(session, group.id, for_update=True):
        if transfer.status != "pending":
            continue
        move_transfer(transfer, "failed")
        ended = final_failure(operation, transfer.last_operation_error)
        transfer.failure_code, transfer.failure_message = ended.code, ended.message[:500]
        transfer.updated_at = utcnow()
        group.amount_allocated -= transfer.amount  # the reservation shrinks to what was sent
        await session.flush()
        await announce_transfer(session, tenant, transfer, "transfer.failed")
    await session.flush()
    await announce_group(session, tenant, group, "allocation_group.updated")


register_attempt_failure_listener(_on_commit_attempt_failed)
register_outcome_listener(_on_commit_outcome)
