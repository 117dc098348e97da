"""Renewals by the engine and the safety checks that stop them: the leading scheduler's billing
calendar opens each due cycle's invoice and its `renewal` operation, which charges the saved method
off-session once; `sync` resumes a subscription stopped for review after the repair.

Final means final (CONVENTIONS.md §9): a declined charge fails the invoice at once (the renewal itself
succeeded: the network answered). A fault that keeps the charge from being asked at all is retried;
while the renewal retries or waits in `dead_letter` the invoice stays `open`, showing the error in
`last_operation_error`, and an operator's retry charges it as before. Only the renewal's end for good
(an operator's discard, or a permanent refusal) fails the invoice (`subscription.invoice.failed`, the
subscription `past_due`), as a decline does."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.billing import calendar, catalog, repository
from moneyrail.engine.clock import tenant_now
from moneyrail.engine.outcomes import AttemptError, TransientFailure
from moneyrail.engine.schedule import CommitChunk, commit_at_the_end, register_periodic_in_chunks
from moneyrail.engine.service import (
    Call,
    Recording,
    create_operation,
    create_operations,
    final_failure,
    register_attempt_failure_listener,
    register_outcome_listener,
    together,
)
from moneyrail.errors import (
    MoneyrailError,
)
from moneyrail.kit.clock import utcnow
from moneyrail.kit.money import MAX_AMOUNT
from moneyrail.kit.tenant import Tenant
from moneyrail.merchants import service as merchants
from moneyrail.merchants.schemas import capabilities_of
from moneyrail.models import (
    Operation,
    PaymentIntent,
    PaymentMethod,
    Price,
    Subscription,
    SubscriptionInvoice,
)
from moneyrail.payment_methods import service as methods
from moneyrail.payments import service as payments
from moneyrail.processor import provider
from moneyrail.processor.interface import ChargeAnswer, Processor
from moneyrail.sandbox.service import register_due_work_in_chunks

from .collection import _fail, _on_payment_captured
from .subscriptions import (
    RENEWAL_ACTOR,
    RENEWAL_TYPE,
    SWEEP_BATCH,
    SWEEP_ROUNDS,
    SWEEP_SANDBOXES,
    SYNC_ACTOR,
    SYNC_TYPE,
    UNPAID_LIFETIME,
    _announce,
    _announce_invoice,
    _before_renewal,
    _end,
    _move,
    _move_invoice,
    _open_invoice,
    cycle_invoice,
    get_subscription,
)

logger = structlog.get_logger("moneyrail.billing")


# --- safety checks --------------------------------------------------------------------------------
async def _merchant_problem(session: AsyncSession, tenant: Tenant, subscription: Subscription) -> str | None:
    """The merchant a subscription sells for must keep its grant (spec 4.M rule 3): revoked, or no
    longer able to take payments, automation stops before anything is charged."""
    if subscription.merchant_id is None:
        return None
    merchant = await merchants.get_merchant(session, tenant, subscription.merchant_id)
    if merchant.connection_status == "revoked":
        return "merchant_grant_revoked"
    if merchant.connection_status != "active":
        return "merchant_not_active"
    if capabilities_of(merchant).payments != "active":
        return "merchant_cannot_take_payments"
    return None


async def _renewal_method_or_problem(
    session: AsyncSession, tenant: Tenant, subscription: Subscription, invoice: SubscriptionInvoice
) -> tuple[Any, str | None]:
    """The saved method renewals charge (the customer's preferred card, consented at the subscription
    checkout), or why automation must stop."""
    if subscription.renewal_consented_at is None:
        return None, "renewal_consent_missing"
    price = await catalog.get_price(session, tenant, subscription.price_id)
    if price.currency != subscription.currency or invoice.currency != subscription.currency:
        return None, "currency_mismatch"
    merchant_problem = await _merchant_problem(session, tenant, subscription)
    if merchant_problem is not None:
        return None, merchant_problem
    method_id = await methods.preferred_method_id(session, tenant, subscription.customer_id)
    method = await methods.get_method(session, tenant, method_id) if method_id is not None else None
    if method is None or method.detached_at is not None:
        return None, "payment_method_missing"
    return method, None


async def _stop_for_review(
    session: AsyncSession, tenant: Tenant, subscription: Subscription, reason: str
) -> None:
    _move(subscription, "review_required")
    subscription.review_reason = reason
    await session.flush()
    await _announce(session, tenant, subscription, "subscription.updated")
    logger.warning("subscription_review_required", subscription=subscription.id, reason=reason)


# --- renewals ---------------------------------------------------------------------------------------
def _charge_key(invoice: SubscriptionInvoice, payment: PaymentIntent) -> str:
    """The processor key of the invoice's charge, derived before this attempt counts itself (the
    payment's attempt count as committed). A retried or re-driven renewal asks the network the same
    question and gets the same answer: one charge per cycle. A charge whose payment never recorded it
    and which the orphan sweep released (voided or refunded) moved the count on first
    (payments/orphans.py): the next attempt is a new question, not the released answer replayed, so an
    invoice is paid only by a charge that stands. Until then the key is the invoice's alone, as it
    always was."""
    if payment.confirmations == 0:
        return f"{invoice.id}:charge"
    return f"{invoice.id}:charge:{payment.confirmations}"


# Where the processor charges many in one exchange (`Processor.batches_calls`: the sandbox, whose books are
# in the database), up to RENEWAL_BATCH renewals share a message, a claim, one processor call and a commit,
# each still its own operation (engine policy batch_size), run set-based by `prepare_renewals`. Elsewhere
# (Stripe) each renewal runs alone. A whole batch must finish well within one operation lease on a loaded
# machine (a superseded batch is redone whole): set-based, the usual batch is some 20 statements whatever
# its size, so a batch of 128 takes a few seconds at most, and each renewal pays a 128th of the batch's
# fixed statements (claim, commit, outcomes).
RENEWAL_BATCH = 128


async def _charge_later(session: AsyncSession, tenant: Tenant, invoice: SubscriptionInvoice) -> None:
    """The invoice's `renewal` operation: batched where the processor has batch calls, else alone."""
    operation = await create_operation(
        session,
        tenant,
        operation_type=RENEWAL_TYPE,
        actor_name=RENEWAL_ACTOR,
        resource=invoice.id,
        payload={"subscription_invoice": invoice.id},
        batch_size=RENEWAL_BATCH if await provider.batches_calls(session, tenant) else 1,
    )
    invoice.operation_id = operation.id
    await session.flush()


def _cycle_due(subscription: Subscription, price: Price, now: datetime) -> int:
    """The cycle a renewal at `now` opens: only the one that contains `now` (periods that passed during
    an outage are not charged retroactively), never one already opened."""
    return max(
        subscription.cycle + 1,
        subscription.anchor_cycle
        + calendar.cycle_at(
            subscription.anchor_at, cast(calendar.Interval, price.interval), price.interval_count, now
        ),
    )


async def _renew(session: AsyncSession, tenant: Tenant, subscription: Subscription, now: datetime) -> None:
    """The next cycle's invoice and its renewal operation. A change accepted for the next cycle takes
    effect first, so this cycle is billed at its terms."""
    merchant_problem = await _merchant_problem(session, tenant, subscription)
    if merchant_problem is not None:  # no invoice, no payment: a sync after the repair renews it
        await _stop_for_review(session, tenant, subscription, merchant_problem)
        return
    for hook in _before_renewal:
        await hook(session, tenant, subscription)
    price = await catalog.get_price(session, tenant, subscription.price_id)
    cycle = _cycle_due(subscription, price, now)
    invoice = await _open_invoice(session, tenant, subscription, price, cycle)
    await _charge_later(session, tenant, invoice)
    logger.info("subscription_renewal_opened", subscription=subscription.id, cycle=cycle)


# --- renewals opened set-based ----------------------------------------------------------------------
def _renews_plainly(subscription: Subscription, changing: set[str]) -> bool:
    """The common renewal: an active subscription the tenant sells itself (no merchant whose grant to
    check, no distribution to snapshot and plan) with no change waiting to apply at this renewal (the
    before-renewal hooks act only on such a change). Its customer is the tenant's own (checked at
    creation; customers are never deleted). Any other takes the single path, `_settle_due`."""
    return (
        subscription.status == "active"
        and not subscription.cancel_at_period_end
        and subscription.merchant_id is None
        and subscription.distribution is None
        and subscription.id not in changing
    )


async def _open_renewals_together(
    session: AsyncSession, tenant: Tenant, subscriptions: Sequence[Subscription], now: datetime
) -> list[Subscription]:
    """`_renew` for many plain renewals of one tenant: their payments in one INSERT (and their events
    in one statement), their invoices in one, their `renewal` operations in one. Each row is what the
    single path writes. Returns the subscriptions left for the single path: a total out of bounds or
    not above its commission, which the single path refuses (and so stops for review)."""
    prices = await repository.prices_by_id(session, tenant, [s.price_id for s in subscriptions])
    policy = await payments.commission_policy(session, tenant)
    opening: list[tuple[Subscription, Price, int, int]] = []
    left: list[Subscription] = []
    for subscription in subscriptions:
        price = prices[subscription.price_id]
        amount = catalog.cycle_amount(price, subscription.quantity)
        reserve = policy.reserve(amount)
        if not 1 <= amount <= MAX_AMOUNT or (reserve is not None and amount <= reserve):
            left.append(subscription)
            continue
        opening.append((subscription, price, amount, _cycle_due(subscription, price, now)))
    if not opening:
        return left
    created = await payments.create_payment_intents(
        session,
        tenant,
        [
            payments.PlainPayment(
                amount=amount,
                currency=subscription.currency,
                customer_id=subscription.customer_id,
                description=f"Subscription {subscription.id}, cycle {cycle}",
                metadata={"subscription": subscription.id},
            )
            for subscription, _, amount, cycle in opening
        ],
    )
    written = utcnow()
    invoices = [
        cycle_invoice(tenant, subscription, price, cycle, amount, payment.id, written)
        for (subscription, price, amount, cycle), payment in zip(opening, created, strict=True)
    ]
    operation_ids = await create_operations(
        session,
        tenant,
        operation_type=RENEWAL_TYPE,
        actor_name=RENEWAL_ACTOR,
        work=[(invoice.id, {"subscription_invoice": invoice.id}) for invoice in invoices],
        batch_size=RENEWAL_BATCH if await provider.batches_calls(session, tenant) else 1,
    )
    for invoice, operation_id in zip(invoices, operation_ids, strict=True):
        invoice.operation_id = operation_id
    # the invoices and the subscriptions' latest invoice in one statement each, straight on the driver:
    # flushed and read back as ORM rows (with the operations) they would be a large share of what the
    # clock advance spends per renewal
    await repository.insert_cycle_invoices(session, tenant, invoices)
    latest = [(s.id, invoice.id) for (s, *_), invoice in zip(opening, invoices, strict=True)]
    await repository.point_latest_invoices(session, latest, written)
    # written and not needed again in this (clock advance's) transaction: keep its session small (the
    # subscriptions' loaded rows no longer match theirs)
    for row in [*created, *(subscription for subscription, *_ in opening)]:
        session.expunge(row)
    logger.info("subscription_renewals_opened", installation=tenant.installation_id, count=len(opening))
    return left


async def _settle_due(
    session: AsyncSession, tenant: Tenant, processor: Processor, subscription: Subscription, now: datetime
) -> None:
    if subscription.status == "incomplete":
        await _end(session, tenant, processor, subscription, now)  # unpaid for 23 hours
    elif subscription.cancel_at_period_end:
        await _end(session, tenant, processor, subscription, subscription.current_period_end)
    else:
        await _renew(session, tenant, subscription, now)


async def _settle_due_subscriptions(
    session: AsyncSession,
    *,
    tenant: Tenant | None,
    livemode: bool | None,
    now: datetime,
    rounds: int,
    commit_chunk: CommitChunk,
) -> int:
    """Up to `rounds` batches of due subscriptions, each committed whole by `commit_chunk`; what is
    left waits for the next run.

    Why a batch may commit on its own: a due subscription is found by its latest invoice being paid
    (or by ending), and locked (SKIP LOCKED). Within the batch's transaction its next cycle's invoice,
    payment and `renewal` operation are written and `latest_invoice` points at the new, open invoice.
    Committed, the subscription is no longer due to any sweep (and the unique cycle index would refuse
    a second invoice anyway); rolled back or never reached (a crash), it is still due, with nothing
    written, and the next advance or sweep opens it. So each subscription is opened once or not yet,
    never twice, whichever batch a crash interrupts; the committed batches' renewals are published by
    the relay at their commit (NOTIFY) and charged while the next batch opens."""
    done = 0
    after: tuple[datetime, str] | None = None
    for _ in range(rounds):
        due = await repository.due_subscriptions(
            session,
            tenant=tenant,
            livemode=livemode,
            now=now,
            unpaid_after=UNPAID_LIFETIME,
            limit=SWEEP_BATCH,
            after=after,
        )
        if not due:
            break
        # a row skipped as locked (another sweep has it) is the next run's, as is one settled late
        after = (due[-1].current_period_end, due[-1].id)
        network = provider.routed()
        changing = await repository.with_unapplied_change(session, [s.id for s in due])
        plain: dict[Tenant, list[Subscription]] = {}
        single: list[Subscription] = []
        for subscription in due:
            if _renews_plainly(subscription, changing):
                plain.setdefault(Tenant(subscription.installation_id, subscription.livemode), []).append(
                    subscription
                )
            else:
                single.append(subscription)
        for owner, subscriptions in plain.items():
            single.extend(await _open_renewals_together(session, owner, subscriptions, now))
        for subscription in single:
            owner = Tenant(subscription.installation_id, subscription.livemode)
            try:
                async with session.begin_nested():  # one subscription's refusal leaves the others renewed
                    await _settle_due(session, owner, network, subscription, now)
            except MoneyrailError as refused:
                # the next cycle cannot be opened as agreed (a recipient no longer valid, a total the
                # commission now exceeds): automation stops until the configuration is repaired and synced
                await session.refresh(subscription)
                if subscription.status != "active":
                    raise
                await _stop_for_review(session, owner, subscription, refused.code)
        await commit_chunk()
        done += len(due)
        if len(due) < SWEEP_BATCH:
            break
    return done


async def renew_due(
    session: AsyncSession, tenant: Tenant, now: datetime, commit_chunk: CommitChunk = commit_at_the_end
) -> int:
    """Due work of a sandbox clock advance: this tenant's subscriptions due at `now`."""
    return await _settle_due_subscriptions(
        session, tenant=tenant, livemode=None, now=now, rounds=SWEEP_ROUNDS, commit_chunk=commit_chunk
    )


async def sweep(session: AsyncSession, commit_chunk: CommitChunk = commit_at_the_end) -> int:
    """The leading scheduler's billing calendar: found by query, live on real time, each sandbox on
    its own clock. A sweep is safe to run late, twice, or on two schedulers at once (SKIP LOCKED,
    and the unique cycle index), and beside a clock advance opening the same sandbox's renewals."""
    done = await _settle_due_subscriptions(
        session, tenant=None, livemode=True, now=utcnow(), rounds=SWEEP_ROUNDS, commit_chunk=commit_chunk
    )
    for installation_id in await repository.sandboxes_with_subscriptions(session, SWEEP_SANDBOXES):
        sandbox = Tenant(installation_id, False)
        done += await renew_due(session, sandbox, await tenant_now(session, sandbox), commit_chunk)
    return done


register_periodic_in_chunks("billing.renewals", timedelta(seconds=20), sweep)
register_due_work_in_chunks("billing.renewals", renew_due)


@dataclass(frozen=True)
class _Charging:
    """A renewal's charge as its first phase read it: what to ask, and what to find again to record it."""

    operation: Operation
    invoice_id: str
    payment_id: str
    method: PaymentMethod
    key: str
    confirmations: int  # the payment's, when asked: a charge recorded since is another question


async def prepare_renewal(session: AsyncSession, operation: Operation, processor: Processor) -> Call | None:
    """The `renewal` operation's handler in phases (engine `PhasedHandler`): charge the cycle's payment
    off-session, once. The subscription, its invoice and its payment are read under their locks and the
    safety checks made (a problem stops it for review at once, with no call); the charge is asked with
    nothing locked, under the invoice's key; the answer is recorded with the success. A crash after
    the answer: the next attempt asks the same question under the same key and records the answer
    once."""
    invoice_id = str(operation.payload["subscription_invoice"])
    tenant = Tenant(operation.installation_id, operation.livemode)
    found = await repository.get_invoice(session, tenant, invoice_id)
    if found is None:
        return None
    subscription = await get_subscription(session, tenant, found.subscription_id, lock=True)
    invoice = await repository.get_invoice(session, tenant, invoice_id, for_update=True)
    assert invoice is not None
    if invoice.status != "open" or subscription.status != "active":
        return None  # collected already, cancelled, or stopped for review (a sync resumes it)
    method, problem = await _renewal_method_or_problem(session, tenant, subscription, invoice)
    if problem is not None:
        await _stop_for_review(session, tenant, subscription, problem)
        return None
    payment = await payments.lock_payment_intent(session, tenant, invoice.payment_intent_id)
    if payment.status not in payments.CONFIRMABLE:
        return None  # paid meanwhile: the capture listener recorded it
    charging = _Charging(
        operation, invoice.id, payment.id, method, _charge_key(invoice, payment), payment.confirmations
    )
    return await _charge(session, tenant, processor, [(charging, payment)])


async def _charge(
    session: AsyncSession,
    tenant: Tenant,
    processor: Processor,
    charges: Sequence[tuple[_Charging, PaymentIntent]],
) -> Call:
    asked = await payments.off_session_charges(
        session, [(payment, charging.method, charging.key) for charging, payment in charges]
    )
    charged = [charging for charging, _ in charges]

    async def call() -> Recording:
        answers = await payments.ask_off_session(processor, tenant, asked)

        async def record(session: AsyncSession) -> None:
            await _record_charges(session, tenant, processor, charged, answers)

        return record

    return call


async def _record_charges(
    session: AsyncSession,
    tenant: Tenant,
    processor: Processor,
    charged: Sequence[_Charging],
    answers: Sequence[ChargeAnswer],
) -> None:
    """The network's answers on the renewals' payments, locked again in the first phase's order (the
    subscriptions, their invoices, the payments); a decline fails its invoice as alone.

    What the network answered is recorded on a payment still waiting to be charged, whatever else
    changed. A payment collected or cancelled meanwhile takes no second charge: the network's charge is
    an orphan, which the orphan sweep releases (payments/orphans.py). A payment whose attempt count moved
    on (the orphan sweep released this very charge) is asked again, under its next key."""
    invoice_ids = [charging.invoice_id for charging in charged]
    subscriptions = await repository.lock_subscriptions_of_invoices(session, tenant, invoice_ids)
    invoices = await repository.invoices_by_id(session, tenant, invoice_ids, for_update=True)
    locked = await payments.lock_payment_intents(session, tenant, [c.payment_id for c in charged])
    recording: list[tuple[_Charging, PaymentIntent, ChargeAnswer]] = []
    for charging, answer in zip(charged, answers, strict=True):
        payment = locked[charging.payment_id]
        if payment.status not in payments.CONFIRMABLE:
            logger.warning("renewal_charge_not_recorded", payment_intent=payment.id, status=payment.status)
            continue
        if payment.confirmations != charging.confirmations:
            raise TransientFailure("the renewal's payment was released while the network was asked")
        recording.append((charging, payment, answer))
    await payments.record_off_session_charges(
        session,
        tenant,
        processor,
        [(payment, charging.method, charging.key) for charging, payment, _ in recording],
        [answer for _, _, answer in recording],
    )
    for charging, payment, _ in recording:
        invoice = invoices[charging.invoice_id]
        subscription = subscriptions[invoice.subscription_id]
        declined = payment.status == "requires_payment_method"
        if declined and invoice.status == "open" and subscription.status == "active":
            decline = (payment.last_payment_error or {}).get("decline_code") or "generic_decline"
            await _fail(session, tenant, subscription, invoice, str(decline))


async def _renewal_invoice(
    session: AsyncSession, operation: Operation
) -> tuple[Tenant, Subscription, SubscriptionInvoice] | None:
    """The open invoice this renewal still charges, locked as `prepare_renewal` locks it; None for any
    other operation, or an invoice collected, failed or charged by a later renewal (after a sync)."""
    if operation.type != RENEWAL_TYPE:
        return None
    tenant = Tenant(operation.installation_id, operation.livemode)
    found = await repository.get_invoice(session, tenant, str(operation.payload["subscription_invoice"]))
    if found is None or found.status != "open" or found.operation_id != operation.id:
        return None
    subscription = await get_subscription(session, tenant, found.subscription_id, lock=True)
    invoice = await repository.get_invoice(session, tenant, found.id, for_update=True)
    if invoice is None or invoice.status != "open":
        return None
    return tenant, subscription, invoice


async def _on_renewal_attempt_failed(
    session: AsyncSession, operation: Operation, error: AttemptError
) -> None:
    """The charge could not be asked: the invoice stays `open`, showing the error."""
    waiting = await _renewal_invoice(session, operation)
    if waiting is None:
        return
    _, _, invoice = waiting
    invoice.last_operation_error = error.as_json()
    invoice.updated_at = utcnow()
    await session.flush()


async def _on_renewal_outcome(session: AsyncSession, operation: Operation) -> None:
    """A renewal that ended for good without charging (an operator's discard, a permanent refusal) fails
    its invoice as a decline does: `subscription.invoice.failed` once, the subscription `past_due`; the
    payer recovers it with the same payment (a recovery checkout)."""
    if operation.status not in ("failed", "canceled"):
        return
    waiting = await _renewal_invoice(session, operation)
    if waiting is None:
        return
    tenant, subscription, invoice = waiting
    ended = final_failure(operation, invoice.last_operation_error)
    if subscription.status == "active":
        await _fail(session, tenant, subscription, invoice, ended.code)
        return
    _move_invoice(invoice, "failed")  # a subscription canceled or in review meanwhile stays as it is
    invoice.failure_code = ended.code
    invoice.failed_at = await tenant_now(session, tenant)
    await session.flush()
    await _announce_invoice(session, tenant, invoice, "subscription.invoice.failed")


register_attempt_failure_listener(_on_renewal_attempt_failed)
register_outcome_listener(_on_renewal_outcome)


# A batch of renewals (the engine's phased handler for a message of them): read, locked and checked in a
# few statements, charged in one exchange with the network, recorded together.
async def prepare_renewals(
    session: AsyncSession, operations: Sequence[Operation], processor: Processor
) -> Call | None:
    """`prepare_renewal` for each of `operations`, set-based for the common renewal: one statement
    each locks the subscriptions, the invoices and the payments; one exchange with the network
    charges them (each under its invoice's key, as alone); the captures are written together
    (payments). A renewal that stops for review, or is live, runs `prepare_renewal` itself; a decline
    ends as alone (failed, past_due)."""
    by_tenant: dict[Tenant, list[Operation]] = {}
    for operation in operations:
        by_tenant.setdefault(Tenant(operation.installation_id, operation.livemode), []).append(operation)
    calls: list[Call] = []
    for tenant, owned in by_tenant.items():
        if tenant.livemode:  # a real network's charges are asked one renewal at a time
            for operation in owned:
                if (call := await prepare_renewal(session, operation, processor)) is not None:
                    calls.append(call)
            continue
        calls.extend(await _prepare_together(session, tenant, owned, processor))
    return together(calls) if calls else None


async def _prepare_together(
    session: AsyncSession, tenant: Tenant, operations: Sequence[Operation], processor: Processor
) -> list[Call]:
    invoice_ids = [str(operation.payload["subscription_invoice"]) for operation in operations]
    # locked in prepare_renewal's order (the subscription, then its invoice, then the payment), each
    # set in id order; the invoices read only once locked, so their status is the one that holds
    subscriptions = await repository.lock_subscriptions_of_invoices(session, tenant, invoice_ids)
    invoices = await repository.invoices_by_id(session, tenant, invoice_ids, for_update=True)
    prices = await repository.prices_by_id(session, tenant, [s.price_id for s in subscriptions.values()])
    cards = await methods.preferred_methods(session, tenant, [s.customer_id for s in subscriptions.values()])
    due: list[tuple[Operation, Subscription, SubscriptionInvoice]] = []
    charged: set[str] = set()
    calls: list[Call] = []
    for operation, invoice_id in zip(operations, invoice_ids, strict=True):
        invoice = invoices.get(invoice_id)
        if invoice is None or invoice_id in charged:
            continue  # (a second operation for one invoice, after a sync: the first one collects it)
        charged.add(invoice_id)
        subscription = subscriptions[invoice.subscription_id]
        if invoice.status != "open" or subscription.status != "active":
            continue  # collected already, cancelled, or stopped for review (a sync resumes it)
        card = cards.get(subscription.customer_id)
        if (
            subscription.renewal_consented_at is None
            or prices[subscription.price_id].currency != subscription.currency
            or invoice.currency != subscription.currency
            or subscription.merchant_id is not None
            or card is None
        ):  # a safety check to make, or a merchant's grant to check: alone
            if (call := await prepare_renewal(session, operation, processor)) is not None:
                calls.append(call)
            continue
        due.append((operation, subscription, invoice))
    locked = await payments.lock_payment_intents(
        session, tenant, [invoice.payment_intent_id for _, _, invoice in due]
    )
    charging = [
        (
            _Charging(
                operation,
                invoice.id,
                payment.id,
                cards[subscription.customer_id],
                _charge_key(invoice, payment),
                payment.confirmations,
            ),
            payment,
        )
        for operation, subscription, invoice in due
        if (payment := locked[invoice.payment_intent_id]).status in payments.CONFIRMABLE
    ]  # the others were paid meanwhile: the capture listener recorded it
    if charging:
        calls.append(await _charge(session, tenant, processor, charging))
    return calls


# --- sync ---------------------------------------------------------------------------------------------
async def request_sync(session: AsyncSession, tenant: Tenant, subscription_id: str) -> Operation:
    subscription = await get_subscription(session, tenant, subscription_id)
    return await create_operation(
        session,
        tenant,
        operation_type=SYNC_TYPE,
        actor_name=SYNC_ACTOR,
        resource=subscription.id,
        payload={"subscription": subscription.id},
    )


async def process_sync(session: AsyncSession, operation: Operation, processor: Processor) -> None:
    """A durable status check. A payment that succeeded is recorded; a subscription stopped for review
    resumes once its safety checks pass, its open invoice charged under the same invoice-derived key
    (never a duplicate payment). It bypasses no check: a problem still there keeps it in review."""
    tenant = Tenant(operation.installation_id, operation.livemode)
    subscription = await get_subscription(session, tenant, str(operation.payload["subscription"]), lock=True)
    if subscription.latest_invoice_id is None:
        return
    invoice = await repository.get_invoice(session, tenant, subscription.latest_invoice_id, for_update=True)
    assert invoice is not None
    payment = await payments.lock_payment_intent(session, tenant, invoice.payment_intent_id)
    if invoice.status in ("open", "failed") and payment.status == "succeeded":
        await _on_payment_captured(session, tenant, payment)
        return
    if subscription.status != "review_required":
        return
    _, problem = await _renewal_method_or_problem(session, tenant, subscription, invoice)
    if problem is not None:
        if problem != subscription.review_reason:
            subscription.review_reason = problem
            await session.flush()
            await _announce(session, tenant, subscription, "subscription.updated")
        return
    _move(subscription, "active")
    subscription.review_reason = None
    await session.flush()
    await _announce(session, tenant, subscription, "subscription.updated")
    if invoice.status == "open" and payment.status in payments.CONFIRMABLE:
        await _charge_later(session, tenant, invoice)
