"""Allocation groups and transfers; the commit operation is in commit.py, reversals in reversals.py
(CONVENTIONS.md §8, §9, §13).

State machines (data, STYLE.md habit 7):

    group     open -> committing            commit: its transfers are written `pending`, with one
                                            allocation_commit (or transfer) operation
              committing -> committed       every transfer paid
              committing -> failed          the operation ended for good: a permanent refusal, or an
                                            operator discarded its dead letter (final)
    transfer  pending -> paid | failed (final);  paid -> reversed (in full)

Final means final (CONVENTIONS.md §9): while the operation retries or waits in `dead_letter` the group
stays `committing` and its unpaid transfers `pending`, showing the error (`last_operation_error`); an
operator's retry of the dead letter finishes only the unfinished transfers (commit.py).

Money (the installation's ledger accounts, per currency; + adds to a balance):

    transfer x paid        balance:pending -y, balance:available -(x - y),
                           connect:<acct>:pending +y, connect:<acct>:available +(x - y)
    source payment settles connect:<acct>:pending -p, connect:<acct>:available +p
    reversal r             connect:<acct>:pending -z, connect:<acct>:available -(r - z),
                           balance:pending +z, balance:available +(r - z)

y is the part of x still pending settlement in the source payment (fees.take_for_transfer): money goes
out from where it is and arrives as pending or available alike; p is what of a transfer is still
pending when its source payment's fees become final; z is the part of a reversal taken from what is
still pending. A posted transfer is never changed: a reversal is a new journal entry.

Exactly once: each transfer keeps its own processor key, derived from the operation and its allocation
(`op_…:alloc_…`), and a commit asks for all of them in one batch call (commit.py), so a retried or
re-driven attempt repeats no transfer. A processor refusal ends that key's life: the dead-letter outcome
moves the transfer to its next key, so an operator's retry asks again for it alone, and the others
answer from their first call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.connect import at_processor
from moneyrail.connect import merchants as merchant_accounts
from moneyrail.connect import service as connect
from moneyrail.engine.policy import RetryPolicy, register_policy
from moneyrail.engine.service import create_operation
from moneyrail.errors import (
    AmountInvalid,
    Conflict,
    CurrencyInvalid,
    ParameterInvalid,
    ReferencedResourceMissing,
    ResourceMissing,
)
from moneyrail.events.service import record_event
from moneyrail.kit import states
from moneyrail.kit.clock import utcnow
from moneyrail.kit.ids import looks_like_id, new_id
from moneyrail.kit.money import split_largest_remainder
from moneyrail.kit.pagination import Position
from moneyrail.kit.tenant import Tenant
from moneyrail.ledger import service as ledger
from moneyrail.models import (
    Allocation,
    AllocationGroup,
    Operation,
    PaymentIntent,
    Transfer,
    TransferReversal,
)
from moneyrail.payments import distribution, fees
from moneyrail.payments import refunds as payment_refunds
from moneyrail.payments import service as payments
from moneyrail.processor import provider

from . import repository
from .schemas import (
    AllocationCreate,
    AllocationGroupCreate,
    AllocationGroupOut,
    TransferCreate,
    render_group,
    render_transfer,
)

logger = structlog.get_logger("moneyrail.transfers")

COMMIT_TYPE = "allocation_commit"
TRANSFER_TYPE = "transfer"
COMMIT_ACTOR = "transfers.commit"
# Where the processor has a batch call (`Processor.batches_calls`: the sandbox, whose books are in the
# database), up to COMMIT_BATCH commits share a message, a claim, one processor call and a commit, each
# still its own operation (commit.prepare_commits). Elsewhere (Stripe) each commit runs alone, its
# transfers asked concurrently. Small, as a whole batch must finish well within one operation lease on a
# loaded machine, and a batch that splits is redone one operation at a time.
COMMIT_BATCH = 16
# A transient fault is asked again after about 0.5, 1, 2, 4 s; a refusal, replayed under its key by
# every attempt, dead-letters within seconds for an operator to decide.
for _type in (COMMIT_TYPE, TRANSFER_TYPE):
    register_policy(
        _type,
        RetryPolicy(
            max_attempts=5,
            base_delay=timedelta(milliseconds=500),
            max_delay=timedelta(minutes=5),
            queue_name="money",
        ),
    )

# `canceled`: a refund of a subscription payment stopped what of its distribution was not sent yet
# (reversals.stop_unsent_distribution)
GROUP_TRANSITIONS: dict[str, frozenset[str]] = {
    "open": frozenset({"committing", "canceled"}),
    "committing": frozenset({"committed", "failed", "canceled"}),
    "failed": frozenset(),
    "committed": frozenset(),
    "canceled": frozenset(),
}
TRANSFER_TRANSITIONS: dict[str, frozenset[str]] = {
    "pending": frozenset({"paid", "failed", "canceled"}),
    "failed": frozenset(),
    "paid": frozenset({"reversed"}),
    "reversed": frozenset(),
    "canceled": frozenset(),
}
PLATFORM_PENDING = fees.BALANCE_PENDING
PLATFORM_AVAILABLE = fees.BALANCE_AVAILABLE


def move_group(group: AllocationGroup, status: str) -> None:
    states.move(group, status, GROUP_TRANSITIONS, "An allocation group")


def move_transfer(transfer: Transfer, status: str) -> None:
    states.move(transfer, status, TRANSFER_TRANSITIONS, "A transfer")


# --- events -------------------------------------------------------------------------------------------
async def announce_group(
    session: AsyncSession, tenant: Tenant, group: AllocationGroup, event_type: str
) -> None:
    await record_event(
        session, tenant, event_type, (await show_group(session, group)).model_dump(mode="json")
    )


async def announce_transfer(
    session: AsyncSession, tenant: Tenant, transfer: Transfer, event_type: str
) -> None:
    reversals = (await repository.reversals_of(session, [transfer.id])).get(transfer.id, [])
    await record_event(
        session, tenant, event_type, render_transfer(transfer, reversals).model_dump(mode="json")
    )


# --- reading ------------------------------------------------------------------------------------------
async def get_group(
    session: AsyncSession, tenant: Tenant, group_id: str, *, for_update: bool = False
) -> AllocationGroup:
    group = await repository.get_group(session, tenant, group_id, for_update=for_update)
    if group is None:
        raise ResourceMissing(f"No such allocation_group: {group_id!r}", param="allocation_group")
    return group


async def show_group(session: AsyncSession, group: AllocationGroup) -> AllocationGroupOut:
    transfers = await repository.transfers_of_group(session, group.id)
    reversals = await repository.reversals_of(session, [transfer.id for transfer in transfers])
    return render_group(group, await repository.allocations_of(session, group.id), transfers, reversals)


async def get_transfer(session: AsyncSession, tenant: Tenant, transfer_id: str) -> Transfer:
    transfer = await repository.get_transfer(session, tenant, transfer_id)
    if transfer is None:
        raise ResourceMissing(f"No such transfer: {transfer_id!r}", param="transfer")
    return transfer


async def reversals_of(
    session: AsyncSession, transfer_ids: Sequence[str]
) -> dict[str, list[TransferReversal]]:
    return await repository.reversals_of(session, transfer_ids)


async def list_transfers(
    session: AsyncSession,
    tenant: Tenant,
    *,
    limit: int,
    after: Position | None,
    destination: str | None = None,
    allocation_group: str | None = None,
    source_transaction: str | None = None,
) -> Sequence[Transfer]:
    return await repository.list_transfers(
        session,
        tenant,
        limit=limit,
        after=after,
        destination=destination,
        allocation_group=allocation_group,
        source_transaction=source_transaction,
    )


@dataclass(frozen=True)
class BookedTransfer:
    """A transfer as the ledger has it, for reconciliation: paid, or reversed in full."""

    transfer_id: str
    processor_id: str
    amount: int
    status: str


async def booked_transfers(session: AsyncSession, tenant: Tenant) -> list[BookedTransfer]:
    return [
        BookedTransfer(transfer.id, transfer.processor_transfer, transfer.amount, transfer.status)
        for transfer in await repository.booked_transfers(session, tenant)
        if transfer.processor_transfer is not None
    ]


# --- reserving ----------------------------------------------------------------------------------------
async def distributable(session: AsyncSession, payment: PaymentIntent) -> int:
    """What of a captured payment may still be reserved: its proceeds (captured minus the commission
    withheld), minus what is refunded or being refunded, minus what groups hold, plus what reversals
    brought back. The caller holds the payment's lock, so two reservations take turns."""
    return max(0, await _unreserved(session, payment))


async def _unreserved(session: AsyncSession, payment: PaymentIntent) -> int:
    """`distributable` before it is floored at zero: negative when refunds took money groups hold."""
    held = 0
    for group in await repository.groups_of_payment(session, payment.id):
        held += group.amount if group.status == "open" else group.amount_allocated
    proceeds = payment.amount_received - (payment.fee_reserve or 0) - payment.fee_prior_recovery
    refunded = await payment_refunds.promised_back(session, payment.id)
    returned = await repository.reversed_of_payment(session, payment.id)
    return proceeds - refunded - held + returned


async def _captured_payment(
    session: AsyncSession, tenant: Tenant, payment_id: str, param: str
) -> PaymentIntent:
    try:
        payment = await payments.lock_payment_intent(session, tenant, payment_id)
    except ResourceMissing:
        raise ReferencedResourceMissing(f"No such payment_intent: {payment_id!r}", param=param) from None
    if payment.status != "succeeded":
        raise Conflict(f"Only a captured payment can be distributed; this one is {payment.status}.")
    return payment


async def _reserve(
    session: AsyncSession,
    tenant: Tenant,
    payment: PaymentIntent,
    amount: int,
    source: str,
    metadata: dict[str, str],
) -> AllocationGroup:
    available = await distributable(session, payment)
    if amount > available:
        raise AmountInvalid(
            f"The amount ({amount}) is more than this payment can still distribute ({available}: captured, "
            "minus commission, refunds and other groups' reservations).",
            param="amount",
        )
    group = AllocationGroup(
        id=new_id("ag"),
        installation_id=tenant.installation_id,
        livemode=tenant.livemode,
        payment_intent_id=payment.id,
        amount=amount,
        amount_allocated=0,
        currency=payment.currency,
        status="open",
        source=source,
        metadata_=metadata,
        updated_at=utcnow(),
    )
    await repository.add(session, group)
    return group


async def create_group(
    session: AsyncSession, tenant: Tenant, command: AllocationGroupCreate
) -> AllocationGroup:
    payment = await _captured_payment(session, tenant, command.payment_intent, "payment_intent")
    group = await _reserve(session, tenant, payment, command.amount, "api", command.metadata)
    await announce_group(session, tenant, group, "allocation_group.created")
    logger.info(
        "allocation_group_created", allocation_group=group.id, payment_intent=payment.id, amount=group.amount
    )
    return group


async def _recipient(session: AsyncSession, tenant: Tenant, recipient: str, param: str) -> str:
    if looks_like_id(recipient, "mer"):
        reason = await merchant_accounts.merchant_is_not_a_recipient(session, tenant, recipient)
        raise ParameterInvalid(reason, param=param)
    if not looks_like_id(recipient, "acct"):
        raise ParameterInvalid(
            "A recipient is a connected account id (acct_) of this installation; processor identifiers "
            "and other ids are not accepted.",
            param=param,
        )
    account = (await connect.find_recipients(session, tenant, [recipient])).get(recipient)
    if account is None:
        raise ReferencedResourceMissing(f"No such connected_account: {recipient!r}", param=param)
    refused = (await distribution.merchant_refusals(session, tenant, [account])).get(recipient)
    if refused is not None:
        raise ParameterInvalid(refused, param=param)
    return recipient


async def _add_allocation(
    session: AsyncSession,
    tenant: Tenant,
    group: AllocationGroup,
    *,
    recipient: str,
    role: str | None,
    gross_amount: int,
    commission: int,
    metadata: dict[str, str],
) -> Allocation:
    amount = gross_amount - commission
    if group.amount_allocated + amount > group.amount:
        raise AmountInvalid(
            f"This allocation ({amount}) would take the group past its reserved {group.amount} "
            f"({group.amount_allocated} allocated already).",
            param="amount",
        )
    allocations = await repository.allocations_of(session, group.id)
    allocation = Allocation(
        id=new_id("alloc"),
        installation_id=tenant.installation_id,
        livemode=tenant.livemode,
        allocation_group_id=group.id,
        position=len(allocations),
        recipient=recipient,
        role=role,
        gross_amount=gross_amount,
        commission=commission,
        amount=amount,
        metadata_=metadata,
    )
    await repository.add(session, allocation)
    group.amount_allocated += amount
    group.updated_at = utcnow()
    return allocation


async def add_allocation(
    session: AsyncSession, tenant: Tenant, group_id: str, command: AllocationCreate
) -> AllocationGroup:
    group = await get_group(session, tenant, group_id, for_update=True)
    if group.status != "open":
        raise Conflict(f"Allocations are added to an open group; this one is {group.status}.")
    recipient = await _recipient(session, tenant, command.recipient, "recipient")
    await _add_allocation(
        session,
        tenant,
        group,
        recipient=recipient,
        role=command.role,
        gross_amount=command.amount,
        commission=0,
        metadata=command.metadata,
    )
    await session.flush()
    return group


# --- committing ---------------------------------------------------------------------------------------
async def _commit(
    session: AsyncSession, tenant: Tenant, group: AllocationGroup, operation_type: str
) -> Operation:
    """Write the group's transfers `pending` and the one operation that makes them."""
    allocations = await repository.allocations_of(session, group.id)
    if not allocations:
        raise Conflict("This allocation group has no allocations to commit.")
    await at_processor.ensure_linked(session, tenant, [allocation.recipient for allocation in allocations])
    move_group(group, "committing")
    operation = await create_operation(
        session,
        tenant,
        operation_type=operation_type,
        actor_name=COMMIT_ACTOR,
        resource=group.id,
        payload={"allocation_group": group.id},
        batch_size=COMMIT_BATCH if await provider.batches_calls(session, tenant) else 1,
    )
    group.operation_id = operation.id
    now = utcnow()
    transfers = [
        Transfer(
            id=new_id("tr"),
            installation_id=tenant.installation_id,
            livemode=tenant.livemode,
            allocation_group_id=group.id,
            allocation_id=allocation.id,
            source_payment_intent_id=group.payment_intent_id,
            destination=allocation.recipient,
            amount=allocation.amount,
            currency=group.currency,
            status="pending",
            operation_id=operation.id,
            metadata_=allocation.metadata_,
            updated_at=now,
        )
        for allocation in allocations
    ]
    session.add_all(transfers)
    await session.flush()
    for transfer in transfers:
        await session.refresh(transfer, ["created_at"])
        await announce_transfer(session, tenant, transfer, "transfer.created")
    await announce_group(session, tenant, group, "allocation_group.updated")
    logger.info("allocation_group_committing", allocation_group=group.id, operation_id=operation.id)
    return operation


async def commit_group(session: AsyncSession, tenant: Tenant, group_id: str) -> Operation:
    await provider.require_processor(session, tenant)
    # the payment's lock first, then the group's: the order a refund stopping the group takes
    found = await get_group(session, tenant, group_id)
    payment = await payments.lock_payment_intent(session, tenant, found.payment_intent_id)
    group = await get_group(session, tenant, group_id, for_update=True)
    if group.status != "open":
        raise Conflict(f"Only an open group can be committed; this one is {group.status}.")
    # a refund accepted since the reservation may have taken money the group counted on
    still_there = await _unreserved(session, payment) + group.amount
    if group.amount_allocated > still_there:
        raise Conflict(
            f"This payment can distribute only {max(0, still_there)} now (refunded since the reservation); "
            f"the group allocates {group.amount_allocated}."
        )
    return await _commit(session, tenant, group, COMMIT_TYPE)


@dataclass(frozen=True)
class CreatedTransfer:
    transfer: Transfer
    operation: Operation


async def create_transfer(session: AsyncSession, tenant: Tenant, command: TransferCreate) -> CreatedTransfer:
    """A one-recipient group, reserved, allocated and committed in this one transaction."""
    await provider.require_processor(session, tenant)
    payment = await _captured_payment(session, tenant, command.source_transaction, "source_transaction")
    if command.currency is not None and command.currency != payment.currency:
        raise CurrencyInvalid(
            f"The transfer's currency must be its source payment's ({payment.currency}).", param="currency"
        )
    recipient = await _recipient(session, tenant, command.destination, "destination")
    group = await _reserve(session, tenant, payment, command.amount, "transfer", {})
    await _add_allocation(
        session,
        tenant,
        group,
        recipient=recipient,
        role=None,
        gross_amount=command.amount,
        commission=0,
        metadata=command.metadata,
    )
    operation = await _commit(session, tenant, group, TRANSFER_TYPE)
    (transfer,) = await repository.transfers_of_group(session, group.id)
    return CreatedTransfer(transfer, operation)


# --- distributions at capture ----------------------------------------------------------------------------
async def distribute_captured_payment(session: AsyncSession, tenant: Tenant, payment: PaymentIntent) -> None:
    """A payment declared with a distribution was captured: its allocation group, committed at once.

    The commission withheld at capture (the reserve, plus any earlier shortfall recovered) is taken
    from the merchant allocations in proportion; what the allocations keep sums exactly to the proceeds.
    """
    if not payment.has_distribution:
        return
    declared = await repository.get_distribution(session, payment.id)
    if declared is None or declared.allocation_group_id is not None:
        return
    rows = declared.allocations
    gross = [int(row["amount"]) for row in rows]
    if payment.amount_received != payment.amount:  # a partial capture scales every allocation
        gross = split_largest_remainder(payment.amount_received, gross)
    withheld = (payment.fee_reserve or 0) + payment.fee_prior_recovery
    shares = distribution.commission_shares(
        withheld, [(row["role"], amount) for row, amount in zip(rows, gross, strict=True)]
    )
    net_total = sum(gross) - withheld
    if net_total <= 0:
        logger.warning("distribution_nothing_to_transfer", payment_intent=payment.id)
        return
    group = AllocationGroup(
        id=new_id("ag"),
        installation_id=tenant.installation_id,
        livemode=tenant.livemode,
        payment_intent_id=payment.id,
        amount=net_total,
        amount_allocated=0,
        currency=payment.currency,
        status="open",
        source="distribution",
        metadata_={},
        updated_at=utcnow(),
    )
    await repository.add(session, group)
    for row, amount, share in zip(rows, gross, shares, strict=True):
        if amount - share > 0:  # an allocation the commission took whole transfers nothing
            await _add_allocation(
                session,
                tenant,
                group,
                recipient=row["recipient"],
                role=row["role"],
                gross_amount=amount,
                commission=share,
                metadata=row.get("metadata") or {},
            )
    declared.allocation_group_id = group.id
    await announce_group(session, tenant, group, "allocation_group.created")
    await _commit(session, tenant, group, COMMIT_TYPE)


def _has_distribution(payment: PaymentIntent) -> bool:
    return payment.has_distribution


payments.register_capture_listener(distribute_captured_payment, for_payment=_has_distribution)


async def distribution_group_id(session: AsyncSession, payment_id: str) -> str | None:
    """The allocation group that distributes a payment's declared distribution, once it exists."""
    declared = await repository.get_distribution(session, payment_id)
    return declared.allocation_group_id if declared is not None else None


# --- ledger -------------------------------------------------------------------------------------------
def ledger_legs(currency: str, *legs: tuple[str, int]) -> list[ledger.Posting]:
    return [ledger.Posting(account, amount, currency) for account, amount in legs if amount != 0]


# --- settlement -------------------------------------------------------------------------------------
async def settle_transfers(session: AsyncSession, tenant: Tenant, payment: PaymentIntent) -> None:
    """The source payment's fees are final: what its transfers left pending becomes available."""
    for transfer in await repository.transfers_awaiting_settlement(session, payment.id):
        settling = transfer.amount_pending_settlement
        await ledger.post(
            session,
            tenant,
            kind="transfer_settlement",
            reference=transfer.id,
            idempotency_key=f"{transfer.id}:settle",
            postings=ledger_legs(
                transfer.currency,
                (connect.pending_account(transfer.destination), -settling),
                (connect.available_account(transfer.destination), settling),
            ),
        )
        transfer.amount_pending_settlement = 0
        transfer.updated_at = utcnow()


fees.register_settlement_listener(settle_transfers)
