"""Refunds: accepted at once, carried out by a worker through the processor (an operation on `money`).

    pending -> succeeded   the processor refunded; `amount_refunded` and the ledger follow
    pending -> failed      final: the processor refused for good (the operation failed), or an operator
                           discarded its dead-lettered operation; `refund.failed`, and its amount is
                           free to refund again

Final means final (CONVENTIONS.md §9): while the operation retries or waits in `dead_letter` the refund
stays `pending` (its amount held), showing the error in `last_operation_error`. A processor error (an
injected sandbox fault among them) is not a refusal for good: it is retried, and dead-letters.

The payment's row is locked while a refund is accepted, so two refunds arriving at the same moment
are checked one after the other against what was captured: together they never exceed it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from typing import NamedTuple

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.engine.outcomes import AttemptError, PermanentFailure, TransientFailure
from moneyrail.engine.policy import RetryPolicy, register_policy
from moneyrail.engine.service import (
    Call,
    Recording,
    create_operation,
    final_failure,
    register_attempt_failure_listener,
    register_outcome_listener,
    statuses_of,
)
from moneyrail.errors import AmountInvalid, Conflict, ReferencedResourceMissing, ResourceMissing
from moneyrail.events.service import record_event
from moneyrail.kit.clock import utcnow
from moneyrail.kit.ids import new_id
from moneyrail.kit.pagination import Position
from moneyrail.kit.tenant import Tenant
from moneyrail.models import Operation, PaymentIntent, Refund
from moneyrail.processor import provider
from moneyrail.processor.interface import Processor, ProcessorRefused, operation_key

from . import fees, repository
from .schemas import RefundCreate, render_refund

logger = structlog.get_logger("moneyrail.payments")

REFUND_TYPE = "refund"
REFUND_ACTOR = "payments.refund"
register_policy(
    REFUND_TYPE,
    RetryPolicy(
        max_attempts=8, base_delay=timedelta(seconds=2), max_delay=timedelta(minutes=10), queue_name="money"
    ),
)

# Called in the refund operation's first phase, the payment locked (engine `PhasedHandler`): the transfers
# domain plans what to take back from a distributed payment's recipients for the refund, in the same
# operation. Its call is made before the refund's, outside any transaction; its recording books the
# answers in the refund's recording, given the payment locked again.
RefundSideRecording = Callable[[AsyncSession, PaymentIntent], Awaitable[None]]
RefundSideCall = Callable[[], Awaitable[RefundSideRecording]]
RefundPreparer = Callable[
    [AsyncSession, Processor, Operation, PaymentIntent, Refund], Awaitable[RefundSideCall | None]
]
_refund_preparers: list[RefundPreparer] = []


def register_refund_preparer(preparer: RefundPreparer) -> None:
    if preparer not in _refund_preparers:
        _refund_preparers.append(preparer)


class RefundHold(NamedTuple):
    """Of what a payment captured, an amount another domain says may not be refunded, and why."""

    amount: int
    reason: str


# Called while a refund is accepted, the payment's row locked: a domain may hold back part of the
# payment (a lost dispute: the network took that amount back already, a refund would pay it twice) or
# refuse the refund outright by raising (an open dispute).
RefundHolder = Callable[[AsyncSession, PaymentIntent], Awaitable[RefundHold | None]]
_refund_holders: list[RefundHolder] = []


def register_refund_holder(holder: RefundHolder) -> None:
    if holder not in _refund_holders:
        _refund_holders.append(holder)


# Called in the transaction that accepts a refund, the payment locked: another domain stops what must not
# happen after it (billing: the unsent distribution of a subscription payment).
RefundAcceptor = Callable[[AsyncSession, Tenant, PaymentIntent, Refund], Awaitable[None]]
_refund_acceptors: list[RefundAcceptor] = []


def register_refund_acceptor(acceptor: RefundAcceptor) -> None:
    if acceptor not in _refund_acceptors:
        _refund_acceptors.append(acceptor)


async def promised_back(session: AsyncSession, payment_id: str) -> int:
    """What of a payment is refunded or being refunded (pending and succeeded refunds)."""
    return await repository.refunds_in_flight_or_done(session, payment_id)


TRANSITIONS: dict[str, frozenset[str]] = {
    "pending": frozenset({"succeeded", "failed"}),
    "succeeded": frozenset(),
    "failed": frozenset(),
    "canceled": frozenset(),  # a discard before final means final (migration 0033) canceled a refund
}
# A processor's own fault, not its answer about the refund: another try (under the refund's next key,
# after a dead letter) may well succeed.
RETRYABLE_REFUSALS = frozenset({"processor_error"})


class RefundRefused(TransientFailure):
    """A retryable refusal: every attempt replays it under the same key until the operation dead-letters
    for an operator to decide; a retry then asks under the refund's next key."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"refund refused: {code}: {message}")
        self.code = code


def _move(refund: Refund, status: str) -> None:
    if status not in TRANSITIONS[refund.status]:
        raise Conflict(f"A refund cannot go from {refund.status} to {status}.")
    refund.status = status
    refund.updated_at = utcnow()


async def _announce(session: AsyncSession, tenant: Tenant, refund: Refund, event_type: str) -> None:
    await record_event(session, tenant, event_type, render_refund(refund).model_dump(mode="json"))


async def create_refund(session: AsyncSession, tenant: Tenant, command: RefundCreate) -> Refund:
    await provider.require_processor(session, tenant)
    payment = await repository.get_payment(session, tenant, command.payment_intent, for_update=True)
    if payment is None:
        raise ReferencedResourceMissing(
            f"No such payment_intent: {command.payment_intent!r}", param="payment_intent"
        )
    if payment.status != "succeeded":
        raise Conflict(f"A refund applies to a succeeded payment; this one is {payment.status}.")
    holds = [hold for holder in _refund_holders if (hold := await holder(session, payment)) is not None]
    held_back = sum(hold.amount for hold in holds)
    remaining = (
        payment.amount_received - await repository.refunds_in_flight_or_done(session, payment.id) - held_back
    )
    if remaining <= 0:
        if holds:
            raise Conflict(" ".join(hold.reason for hold in holds))
        raise Conflict("This payment has been refunded in full already (counting refunds still pending).")
    amount = command.amount if command.amount is not None else remaining
    if amount > remaining:
        raise AmountInvalid(
            f"The refund ({amount}) is more than what is left to refund ({remaining}) of the "
            f"{payment.amount_received} captured." + "".join(f" {hold.reason}" for hold in holds),
            param="amount",
        )
    now = utcnow()
    refund = Refund(
        id=new_id("re"),
        installation_id=tenant.installation_id,
        livemode=tenant.livemode,
        payment_intent_id=payment.id,
        amount=amount,
        currency=payment.currency,
        status="pending",
        reason=command.reason,
        metadata_=command.metadata,
        created_at=now,
        updated_at=now,
    )
    session.add(refund)
    await session.flush()
    for accept in _refund_acceptors:
        await accept(session, tenant, payment, refund)
    operation = await create_operation(
        session,
        tenant,
        operation_type=REFUND_TYPE,
        actor_name=REFUND_ACTOR,
        resource=refund.id,
        payload={"refund": refund.id, "payment_intent": payment.id},
    )
    refund.operation_id = operation.id
    await session.flush()
    await _announce(session, tenant, refund, "refund.created")
    logger.info("refund_created", refund=refund.id, payment_intent=payment.id, amount=amount)
    return refund


async def refund_in_progress(session: AsyncSession, payment_id: str, *, before: Refund | None = None) -> bool:
    """Whether a refund of the payment (accepted before `before`, when given) is still being made, its
    operation not waiting on an operator in `dead_letter`. What takes back from a distributed payment's
    recipients plans on what was taken back before it (a refund, a dispute's withdrawal): one at a time."""
    pending = await repository.pending_refunds(session, payment_id, before=before)
    statuses = await statuses_of(session, [r.operation_id for r in pending if r.operation_id])
    return any(statuses.get(r.operation_id or "") != "dead_letter" for r in pending)


async def prepare_refund(session: AsyncSession, operation: Operation, processor: Processor) -> Call | None:
    """The `refund` operation's handler in phases (engine `PhasedHandler`): the refund and its payment
    read (the payment locked briefly), then the processor's refund keyed by the operation (after what
    a preparer takes back from recipients), with nothing locked, then the books with the success.

    A crash after the processor's answer leaves the operation running until its lease runs out; the
    next attempt asks again under the same keys, and the processor answers as before: one refund."""
    refund = await repository.get_refund_by_operation(session, operation.id)
    if refund is None or refund.status != "pending":
        return None  # done already, or withdrawn
    tenant = Tenant(refund.installation_id, refund.livemode)
    payment = await repository.get_payment(session, tenant, refund.payment_intent_id, for_update=True)
    assert payment is not None and payment.processor_authorization is not None
    sides = [
        side
        for prepare in _refund_preparers
        if (side := await prepare(session, processor, operation, payment, refund)) is not None
    ]
    step = "refund" if refund.key_generation == 0 else f"refund:{refund.key_generation}"
    key, authorization_id, amount = (
        operation_key(operation.id, step),
        payment.processor_authorization,
        refund.amount,
    )

    async def call() -> Recording:
        recordings = [await side() for side in sides]  # taken back from recipients first, as before
        try:
            result = await processor.refund(
                tenant, idempotency_key=key, authorization_id=authorization_id, amount=amount
            )
        except ProcessorRefused as refused:
            if refused.code in RETRYABLE_REFUSALS:
                raise RefundRefused(refused.code, refused.message) from refused
            raise PermanentFailure(refused.code, refused.message) from refused

        async def record(session: AsyncSession) -> None:
            refund = await repository.get_refund_by_operation(session, operation.id)
            # only this operation's own end moves a pending refund: another attempt took over meanwhile
            if refund is None or refund.status != "pending":
                raise TransientFailure("the refund changed while the processor was asked")
            payment = await repository.get_payment(session, tenant, refund.payment_intent_id, for_update=True)
            assert payment is not None
            for recording in recordings:
                await recording(session, payment)
            _move(refund, "succeeded")
            refund.processor_refund = result.processor_id
            payment.amount_refunded += refund.amount
            payment.updated_at = utcnow()
            await fees.post_refund(session, tenant, payment, refund)
            await session.flush()
            await _announce(session, tenant, refund, "refund.updated")
            logger.info("refund_succeeded", refund=refund.id, payment_intent=payment.id, amount=refund.amount)

        return record

    return call


async def _on_refund_attempt_failed(session: AsyncSession, operation: Operation, error: AttemptError) -> None:
    """An attempt failed: the refund stays `pending` (its amount held), showing the error. A dead letter
    after a refusal moves it to its next key, so that an operator's retry asks the processor anew."""
    if operation.type != REFUND_TYPE:
        return
    refund = await repository.get_refund_by_operation(session, operation.id)
    if refund is None or refund.status != "pending":
        return
    refund.last_operation_error = error.as_json()
    if operation.status == "dead_letter" and error.code in RETRYABLE_REFUSALS:
        refund.key_generation += 1
    refund.updated_at = utcnow()
    await session.flush()


async def _on_refund_outcome(session: AsyncSession, operation: Operation) -> None:
    """A refund whose operation ended for good without refunding (a refusal for good, or an operator's
    discard of its dead letter) is `failed`, with `refund.failed` once: its amount is free to refund
    again. In the outcome's own transaction: the handler's rolled back, so no money moved."""
    if operation.type != REFUND_TYPE or operation.status not in {"failed", "canceled"}:
        return
    refund = await repository.get_refund_by_operation(session, operation.id)
    if refund is None or refund.status != "pending":
        return
    _move(refund, "failed")
    ended = final_failure(operation, refund.last_operation_error)
    refund.failure_reason = f"{ended.code}: {ended.message}"
    await session.flush()
    await _announce(session, Tenant(refund.installation_id, refund.livemode), refund, "refund.failed")


register_attempt_failure_listener(_on_refund_attempt_failed)
register_outcome_listener(_on_refund_outcome)


async def get_refund(session: AsyncSession, tenant: Tenant, refund_id: str) -> Refund:
    refund = await repository.get_refund(session, tenant, refund_id)
    if refund is None:
        raise ResourceMissing(f"No such refund: {refund_id!r}", param="refund")
    return refund


async def list_refunds(
    session: AsyncSession, tenant: Tenant, *, limit: int, after: Position | None, payment_intent: str | None
) -> Sequence[Refund]:
    return await repository.list_refunds(
        session, tenant, limit=limit, after=after, payment_intent=payment_intent
    )
