"""Billing (spec 2, 3, 4.M; CONVENTIONS.md §14): the catalog, subscriptions and their collection.

A subscription's state machine is data:

    incomplete      -> active            its first invoice is paid (a subscription checkout)
    incomplete      -> canceled          unpaid after 23 hours, or cancelled
    active          -> past_due          a renewal was declined (no background retry)
    active          -> review_required   a safety check stopped automation (the reason is kept)
    active          -> canceled          cancelled now, or its period ended with cancel_at_period_end
    past_due        -> active            the failed invoice is paid (a recovery checkout, same payment)
    past_due        -> canceled          cancelled
    review_required -> active            a sync after the repair (the open invoice is charged once)
    review_required -> canceled          cancelled

A collection record (`subscription_invoice`): open -> paid | failed | void; failed -> paid | void.
Each cycle has exactly one (a unique index on subscription and cycle), and its payment is charged with a
processor key derived from the invoice, so retries, duplicate messages and scheduler fail-overs charge
a cycle once at most.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.connect import service as connect
from moneyrail.customers import service as customers
from moneyrail.engine.policy import RetryPolicy, register_policy
from moneyrail.engine.schedule import register_periodic
from moneyrail.engine.service import create_operation, register_outcome_listener
from moneyrail.errors import (
    Conflict,
    DistributionInvalid,
    MoneyrailError,
    ParameterInvalid,
    ParameterMissing,
    ParametersExclusive,
    RecurringNotEnabled,
    ReferencedResourceMissing,
    ResourceMissing,
)
from moneyrail.events.service import record_event
from moneyrail.installations import service as installations
from moneyrail.kit import states
from moneyrail.kit.clock import to_unix, utcnow
from moneyrail.kit.ids import new_id
from moneyrail.kit.money import split_largest_remainder
from moneyrail.kit.pagination import Position
from moneyrail.kit.tenant import Tenant
from moneyrail.models import Operation, PaymentIntent, Price, Subscription, SubscriptionInvoice
from moneyrail.payment_methods import service as methods
from moneyrail.payments import service as payments
from moneyrail.payments.schemas import AllocationIn, DistributionIn, PaymentIntentCreate
from moneyrail.processor import provider
from moneyrail.processor.interface import Processor
from moneyrail.sandbox.service import register_due_work, tenant_now
from moneyrail.transfers import service as transfers

from . import calendar, catalog, repository
from .schemas import (
    PriceCreate,
    SubscriptionCreate,
    SubscriptionInvoiceOut,
    SubscriptionOut,
)

logger = structlog.get_logger("moneyrail.billing")

UNPAID_LIFETIME = timedelta(hours=23)  # an incomplete subscription unpaid this long is canceled
MAX_QUANTITY = 10_000
FULL_SHARE = 10_000  # basis points
RENEWAL_TYPE, RENEWAL_ACTOR = "renewal", "billing.renewal"
SYNC_TYPE, SYNC_ACTOR = "subscription_sync", "billing.sync"
SWEEP_BATCH = 500
SWEEP_ROUNDS = 200  # batches per run: a run opens at most 100,000 renewals, the rest wait for the next
SWEEP_SANDBOXES = 500
register_policy(
    RENEWAL_TYPE,
    RetryPolicy(
        max_attempts=8, base_delay=timedelta(seconds=2), max_delay=timedelta(minutes=10), queue_name="money"
    ),
)
register_policy(SYNC_TYPE, RetryPolicy(max_attempts=8, queue_name="money"))

TRANSITIONS: dict[str, frozenset[str]] = {
    "incomplete": frozenset({"active", "canceled"}),
    "active": frozenset({"past_due", "review_required", "canceled"}),
    "past_due": frozenset({"active", "canceled"}),
    "review_required": frozenset({"active", "canceled"}),
    "canceled": frozenset(),
}
INVOICE_TRANSITIONS: dict[str, frozenset[str]] = {
    "open": frozenset({"paid", "failed", "void"}),
    "failed": frozenset({"paid", "void"}),
    "paid": frozenset(),
    "void": frozenset(),
}


# Other billing modules (changes) act at a subscription's turning points without this module importing
# them: a renewal about to open its next cycle, a subscription ending.
SubscriptionHook = Callable[[AsyncSession, Tenant, Subscription], Awaitable[None]]
_before_renewal: list[SubscriptionHook] = []
_on_end: list[SubscriptionHook] = []


def register_before_renewal(hook: SubscriptionHook) -> None:
    if hook not in _before_renewal:
        _before_renewal.append(hook)


def register_on_end(hook: SubscriptionHook) -> None:
    if hook not in _on_end:
        _on_end.append(hook)


def _move(subscription: Subscription, status: str) -> None:
    states.move(subscription, status, TRANSITIONS, "A subscription")


def _move_invoice(invoice: SubscriptionInvoice, status: str) -> None:
    states.move(invoice, status, INVOICE_TRANSITIONS, "A subscription invoice")


# --- rendering ----------------------------------------------------------------------------------
def render_subscription(subscription: Subscription, price: Price, now: datetime) -> SubscriptionOut:
    access_until = subscription.access_until
    return SubscriptionOut(
        id=subscription.id,
        livemode=subscription.livemode,
        created=to_unix(subscription.created_at),
        customer=subscription.customer_id,
        price=subscription.price_id,
        quantity=subscription.quantity,
        currency=subscription.currency,
        amount=catalog.cycle_amount(price, subscription.quantity),
        interval=cast(Any, price.interval),
        interval_count=price.interval_count,
        status=cast(Any, subscription.status),
        review_reason=subscription.review_reason,
        entitled=access_until is not None and now < access_until,
        access_until=to_unix(access_until) if access_until is not None else None,
        current_period_start=to_unix(subscription.current_period_start),
        current_period_end=to_unix(subscription.current_period_end),
        cancel_at_period_end=subscription.cancel_at_period_end,
        canceled_at=to_unix(subscription.canceled_at) if subscription.canceled_at is not None else None,
        terms_version=subscription.terms_version,
        distribution_version=subscription.distribution_version,
        distribution=subscription.distribution,
        latest_invoice=subscription.latest_invoice_id,
        metadata=subscription.metadata_,
    )


def render_invoice(
    invoice: SubscriptionInvoice, allocation_group: str | None = None
) -> SubscriptionInvoiceOut:
    return SubscriptionInvoiceOut(
        id=invoice.id,
        livemode=invoice.livemode,
        created=to_unix(invoice.created_at),
        subscription=invoice.subscription_id,
        billing_kind=cast(Any, invoice.billing_kind),
        status=cast(Any, invoice.status),
        amount=invoice.amount,
        currency=invoice.currency,
        period_start=to_unix(invoice.period_start),
        period_end=to_unix(invoice.period_end),
        payment_intent=invoice.payment_intent_id,
        terms_version=invoice.terms_version,
        distribution_version=invoice.distribution_version,
        allocation_group=invoice.allocation_group_id,
        settlement_status=invoice.settlement_status,
        failure_code=invoice.failure_code,
        paid_at=to_unix(invoice.paid_at) if invoice.paid_at is not None else None,
    )


async def subscription_view(
    session: AsyncSession, tenant: Tenant, subscription: Subscription
) -> SubscriptionOut:
    """The authoritative read: `entitled` on the environment's clock (the sandbox clock)."""
    price = await repository.get_price(session, tenant, subscription.price_id)
    assert price is not None  # prices are never deleted
    return render_subscription(subscription, price, await tenant_now(session, tenant))


async def _announce(
    session: AsyncSession, tenant: Tenant, subscription: Subscription, event_type: str
) -> None:
    shown = await subscription_view(session, tenant, subscription)
    await record_event(session, tenant, event_type, shown.model_dump(mode="json"))


async def announce_subscription(session: AsyncSession, tenant: Tenant, subscription: Subscription) -> None:
    await _announce(session, tenant, subscription, "subscription.updated")


def void_invoice(invoice: SubscriptionInvoice) -> None:
    _move_invoice(invoice, "void")


async def _announce_invoice(
    session: AsyncSession, tenant: Tenant, invoice: SubscriptionInvoice, event_type: str
) -> None:
    await record_event(session, tenant, event_type, render_invoice(invoice).model_dump(mode="json"))


# --- subscriptions: creating ------------------------------------------------------------------------
def checked_distribution(distribution: DistributionIn) -> dict[str, Any]:
    """A subscription's distribution is in basis points summing to 10000 (CONVENTIONS.md §8); whom it
    names is checked with the first invoice's payment (recipients of this tenant, merchant of record)."""
    for index, allocation in enumerate(distribution.allocations):
        if allocation.amount is not None or allocation.basis_points is None:
            raise DistributionInvalid(
                "A subscription's allocations carry basis_points (not amount).",
                param=f"distribution.allocations[{index}].basis_points",
            )
        if allocation.basis_points < 0:
            raise DistributionInvalid(
                "basis_points must not be negative.", param=f"distribution.allocations[{index}].basis_points"
            )
    total = sum(allocation.basis_points or 0 for allocation in distribution.allocations)
    if total != FULL_SHARE:
        raise DistributionInvalid(
            f"The allocations' basis_points sum to {total}; a subscription distributes exactly {FULL_SHARE}.",
            param="distribution.allocations",
        )
    return distribution.model_dump(mode="json", exclude_none=True)


def cycle_distribution(snapshot: dict[str, Any], amount: int) -> DistributionIn:
    """One cycle's shares in minor units: amount x bp / 10000, every unit kept (largest remainder)."""
    allocations = snapshot["allocations"]
    shares = split_largest_remainder(amount, [int(a["basis_points"]) for a in allocations])
    return DistributionIn(
        merchant_of_record=snapshot.get("merchant_of_record"),
        allocations=[
            AllocationIn(
                recipient=a["recipient"], role=a["role"], amount=share, metadata=a.get("metadata", {})
            )
            for a, share in zip(allocations, shares, strict=True)
        ],
    )


async def _open_invoice(
    session: AsyncSession,
    tenant: Tenant,
    subscription: Subscription,
    price: Price,
    cycle: int,
) -> SubscriptionInvoice:
    """The cycle's collection record and its payment (with the cycle's distribution snapshot),
    prepared, not charged."""
    amount = await catalog.checked_total(session, tenant, price, subscription.quantity)
    snapshot = subscription.distribution
    interval = cast(calendar.Interval, price.interval)
    created = await payments.create_payment_intent(
        session,
        tenant,
        PaymentIntentCreate(
            amount=amount,
            currency=subscription.currency,
            customer=subscription.customer_id,
            distribution=cycle_distribution(snapshot, amount) if snapshot is not None else None,
            description=f"Subscription {subscription.id}, cycle {cycle}",
            metadata={"subscription": subscription.id},
        ),
    )
    now = utcnow()
    invoice = SubscriptionInvoice(
        id=new_id("subinv"),
        installation_id=tenant.installation_id,
        livemode=tenant.livemode,
        subscription_id=subscription.id,
        billing_kind="cycle",
        cycle=cycle,
        status="open",
        amount=amount,
        currency=subscription.currency,
        period_start=calendar.boundary(subscription.anchor_at, interval, price.interval_count, cycle),
        period_end=calendar.boundary(subscription.anchor_at, interval, price.interval_count, cycle + 1),
        payment_intent_id=created.payment.id,
        terms_version=subscription.terms_version,
        distribution_version=subscription.distribution_version if snapshot is not None else None,
        distribution=snapshot,
        settlement_status="not_applicable",
        created_at=now,
        updated_at=now,
    )
    await repository.add(session, invoice)
    subscription.latest_invoice_id = invoice.id
    subscription.updated_at = now
    await session.flush()
    return invoice


async def _price_for(session: AsyncSession, tenant: Tenant, command: SubscriptionCreate) -> Price:
    if command.price is not None and command.price_data is not None:
        raise ParametersExclusive("Send either price or price_data, not both.", param="price_data")
    if command.price_data is not None:
        data = command.price_data
        return await catalog.create_price(
            session, tenant, PriceCreate.model_validate(data.model_dump()), param_prefix="price_data."
        )
    if command.price is None:
        raise ParameterMissing("A subscription needs its price (or price_data).", param="price")
    price = await repository.get_price(session, tenant, command.price)
    if price is None:
        raise ReferencedResourceMissing(f"No such price: {command.price!r}", param="price")
    if not price.active:
        raise Conflict("This price is archived: it takes no new subscriptions.", param="price")
    await catalog.active_product(session, tenant, price.product_id, "price")
    return price


async def create_subscription(
    session: AsyncSession, tenant: Tenant, command: SubscriptionCreate
) -> Subscription:
    """Prepare a subscription without charging: `incomplete`, with its first invoice and payment, paid
    later through a subscription checkout with the customer's consent."""
    settings = await installations.environment_settings_of(session, tenant)
    if not settings.recurring_enabled:
        raise RecurringNotEnabled(
            f"Subscriptions are not enabled for this installation's {tenant.environment}; the operator "
            "enables them (moneyrail settings set --recurring)."
        )
    if not 1 <= command.quantity <= MAX_QUANTITY:
        raise ParameterInvalid(f"quantity must be 1 to {MAX_QUANTITY}.", param="quantity")
    installation = await installations.require_installation(session, tenant.installation_id)
    if installation.kind == "platform" and command.distribution is None:
        raise ParameterMissing(
            "A platform installation's subscription needs its distribution (spec 4.M rule 3).",
            param="distribution",
        )
    snapshot = checked_distribution(command.distribution) if command.distribution is not None else None
    price = await _price_for(session, tenant, command)
    try:
        customer = await customers.get_customer(session, tenant, command.customer)
    except ResourceMissing:
        raise ReferencedResourceMissing(f"No such customer: {command.customer!r}", param="customer") from None
    now = await tenant_now(session, tenant)
    interval = cast(calendar.Interval, price.interval)
    subscription = Subscription(
        id=new_id("sub"),
        installation_id=tenant.installation_id,
        livemode=tenant.livemode,
        customer_id=customer.id,
        price_id=price.id,
        quantity=command.quantity,
        currency=price.currency,
        status="incomplete",
        anchor_at=now,
        cycle=0,
        current_period_start=now,
        current_period_end=calendar.boundary(now, interval, price.interval_count, 1),
        cancel_at_period_end=False,
        terms_version=1,
        distribution_version=1,
        distribution=snapshot,
        metadata_=command.metadata,
        created_at=utcnow(),
        updated_at=utcnow(),
    )
    await repository.add(session, subscription)
    await _open_invoice(session, tenant, subscription, price, 0)
    await _announce(session, tenant, subscription, "subscription.created")
    logger.info("subscription_created", subscription=subscription.id, price=price.id)
    return subscription


# --- subscriptions: reading -------------------------------------------------------------------------
async def get_subscription(
    session: AsyncSession, tenant: Tenant, subscription_id: str, *, lock: bool = False
) -> Subscription:
    subscription = await repository.get_subscription(session, tenant, subscription_id, for_update=lock)
    if subscription is None:
        raise ResourceMissing(f"No such subscription: {subscription_id!r}", param="subscription")
    return subscription


async def list_subscriptions(
    session: AsyncSession, tenant: Tenant, *, limit: int, after: Position | None
) -> Sequence[Subscription]:
    return await repository.list_subscriptions(session, tenant, limit=limit, after=after)


async def list_invoices(
    session: AsyncSession, tenant: Tenant, subscription_id: str, *, limit: int, after: Position | None
) -> Sequence[SubscriptionInvoice]:
    subscription = await get_subscription(session, tenant, subscription_id)
    return await repository.list_invoices(session, subscription.id, limit=limit, after=after)


# --- cancelling, resuming -----------------------------------------------------------------------------
async def _void_unsettled(
    session: AsyncSession, tenant: Tenant, processor: Processor, subscription: Subscription
) -> None:
    """Invoices not collected are void, their payments cancelled: nothing is charged after a cancel."""
    for invoice in await repository.unsettled_invoices(session, subscription.id):
        payment = await payments.lock_payment_intent(session, tenant, invoice.payment_intent_id)
        if payment.status in payments.CANCELABLE and payment.status != "requires_capture":
            await payments.cancel_payment_intent(session, tenant, processor, payment.id, "abandoned")
        _move_invoice(invoice, "void")
    await session.flush()


async def _end(
    session: AsyncSession, tenant: Tenant, processor: Processor, subscription: Subscription, at: datetime
) -> None:
    _move(subscription, "canceled")
    subscription.canceled_at = at
    subscription.cancel_at_period_end = False
    for hook in _on_end:  # its unapplied change is cancelled with it
        await hook(session, tenant, subscription)
    await _void_unsettled(session, tenant, processor, subscription)
    await _announce(session, tenant, subscription, "subscription.updated")
    logger.info("subscription_canceled", subscription=subscription.id)


async def cancel_subscription(
    session: AsyncSession, tenant: Tenant, processor: Processor, subscription_id: str, *, at_period_end: bool
) -> Subscription:
    """Now: canceled at once, no refund (paid access stays until `access_until`). At period end:
    still `active` with `cancel_at_period_end`, renewals stop."""
    subscription = await get_subscription(session, tenant, subscription_id, lock=True)
    if subscription.status == "canceled":
        raise Conflict("This subscription is canceled already.")
    now = await tenant_now(session, tenant)
    if not at_period_end:
        await _end(session, tenant, processor, subscription, now)
        return subscription
    if (
        subscription.status != "active"
        or subscription.access_until is None
        or now >= subscription.access_until
    ):
        raise Conflict(
            f"A cancellation at period end needs paid time left; this subscription is {subscription.status}. "
            "Cancel it now instead (at_period_end false)."
        )
    if not subscription.cancel_at_period_end:
        subscription.cancel_at_period_end = True
        subscription.updated_at = utcnow()
        await session.flush()
        await _announce(session, tenant, subscription, "subscription.updated")
    return subscription


async def resume_subscription(session: AsyncSession, tenant: Tenant, subscription_id: str) -> Subscription:
    subscription = await get_subscription(session, tenant, subscription_id, lock=True)
    now = await tenant_now(session, tenant)
    if not subscription.cancel_at_period_end or subscription.status != "active":
        raise Conflict("Only a scheduled cancellation (cancel_at_period_end) can be withdrawn.")
    if now >= subscription.current_period_end:
        raise Conflict("The paid period has ended: the cancellation has taken effect.")
    subscription.cancel_at_period_end = False
    subscription.updated_at = utcnow()
    await session.flush()
    await _announce(session, tenant, subscription, "subscription.updated")
    return subscription


# --- collection: paid, failed --------------------------------------------------------------------------
async def _on_payment_captured(session: AsyncSession, tenant: Tenant, payment: PaymentIntent) -> None:
    """A subscription invoice's payment was captured (a checkout, a renewal, a recovery): the invoice
    is paid and the subscription's period and access follow it, in the capture's transaction."""
    invoice = await repository.invoice_for_payment(session, payment.id)
    if invoice is None or invoice.status not in ("open", "failed"):
        return
    subscription = await get_subscription(session, tenant, invoice.subscription_id, lock=True)
    now = await tenant_now(session, tenant)
    _move_invoice(invoice, "paid")
    invoice.paid_at = now
    invoice.failure_code = None
    if invoice.distribution is not None:
        # paid is not distributed (spec 4.M rule 6): `pending` until the payment's allocation group
        # exists, `distributing` while its commit runs (transfers' capture listener ran first), then the
        # commit's outcome settles it
        group_id = await transfers.distribution_group_id(session, payment.id)
        invoice.allocation_group_id = group_id
        invoice.settlement_status = "distributing" if group_id is not None else "pending"
    # an upgrade difference pays for the rest of the current period: the calendar stays (its change
    # applies the new terms, billing/changes.py)
    if invoice.billing_kind == "cycle" and invoice.cycle >= subscription.cycle:
        subscription.cycle = invoice.cycle
        subscription.current_period_start = invoice.period_start
        subscription.current_period_end = invoice.period_end
    if subscription.access_until is None or invoice.period_end > subscription.access_until:
        subscription.access_until = invoice.period_end
    if subscription.status in ("incomplete", "past_due"):
        _move(subscription, "active")
    subscription.updated_at = utcnow()
    if payment.payment_method_id is not None:
        method = await methods.get_method(session, tenant, payment.payment_method_id)
        usable = method is not None and method.detached_at is None
        # the card the payer just consented to renew with (the saved row, if the same card was saved
        # before) is the one renewals charge
        if (
            method is not None
            and usable
            and (
                method.customer_id == subscription.customer_id
                or (method.customer_id is None and payment.save_payment_method)
            )
        ):
            kept = await methods.attach_to_customer(session, tenant, method, subscription.customer_id)
            if not kept.preferred:  # a renewal charged the preferred card already: no customer lock
                await methods.set_preferred(session, tenant, subscription.customer_id, kept.id)
    await session.flush()
    await _announce_invoice(session, tenant, invoice, "subscription.invoice.paid")
    await _announce(session, tenant, subscription, "subscription.updated")
    logger.info("subscription_invoice_paid", subscription_invoice=invoice.id, amount=invoice.amount)


payments.register_capture_listener(_on_payment_captured)


async def _on_distribution_outcome(session: AsyncSession, operation: Operation) -> None:
    """A paid cycle's distribution: its allocation commit's outcome is the invoice's settlement
    (`pending` until then; a collected payment is not a finished distribution, spec 4.M rule 6). An
    operator's retry of a failed commit that then succeeds settles it."""
    if operation.type != transfers.COMMIT_TYPE or operation.status not in (
        "succeeded",
        "failed",
        "dead_letter",
    ):
        return
    tenant = Tenant(operation.installation_id, operation.livemode)
    group_id = str(operation.payload["allocation_group"])
    invoice = await repository.invoice_for_allocation_group(session, tenant, group_id)
    if invoice is None or invoice.distribution is None:
        return
    invoice.allocation_group_id = group_id
    invoice.settlement_status = "settled" if operation.status == "succeeded" else "failed"
    invoice.updated_at = utcnow()
    await session.flush()


register_outcome_listener(_on_distribution_outcome)


async def _fail(
    session: AsyncSession,
    tenant: Tenant,
    subscription: Subscription,
    invoice: SubscriptionInvoice,
    decline_code: str,
) -> None:
    """Declined: the invoice is failed, the subscription past_due; no background retry. The payer
    pays the same payment through a recovery checkout ({subscription, invoice})."""
    _move_invoice(invoice, "failed")
    invoice.failure_code = decline_code
    invoice.failed_at = await tenant_now(session, tenant)
    _move(subscription, "past_due")
    await session.flush()
    await _announce_invoice(session, tenant, invoice, "subscription.invoice.failed")
    await _announce(session, tenant, subscription, "subscription.updated")
    logger.info("subscription_renewal_declined", subscription_invoice=invoice.id, decline_code=decline_code)


# --- safety checks --------------------------------------------------------------------------------
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
def _charge_key(invoice: SubscriptionInvoice) -> str:
    return f"{invoice.id}:charge"


async def _renew(session: AsyncSession, tenant: Tenant, subscription: Subscription, now: datetime) -> None:
    """The next cycle's invoice and its renewal operation. Only the cycle that contains `now` is
    collected: periods that passed during an outage are not charged retroactively. A change accepted
    for the next cycle takes effect first, so this cycle is billed at its terms."""
    for hook in _before_renewal:
        await hook(session, tenant, subscription)
    price = await catalog.get_price(session, tenant, subscription.price_id)
    cycle = max(
        subscription.cycle + 1,
        calendar.cycle_at(
            subscription.anchor_at, cast(calendar.Interval, price.interval), price.interval_count, now
        ),
    )
    invoice = await _open_invoice(session, tenant, subscription, price, cycle)
    operation = await create_operation(
        session,
        tenant,
        operation_type=RENEWAL_TYPE,
        actor_name=RENEWAL_ACTOR,
        resource=invoice.id,
        payload={"subscription_invoice": invoice.id},
    )
    invoice.operation_id = operation.id
    await session.flush()
    logger.info("subscription_renewal_opened", subscription=subscription.id, cycle=cycle)


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
    session: AsyncSession, *, tenant: Tenant | None, livemode: bool | None, now: datetime, rounds: int
) -> int:
    """Up to `rounds` batches of due subscriptions; what is left waits for the next run."""
    done = 0
    for _ in range(rounds):
        due = await repository.due_subscriptions(
            session,
            tenant=tenant,
            livemode=livemode,
            now=now,
            unpaid_after=UNPAID_LIFETIME,
            limit=SWEEP_BATCH,
        )
        if not due:
            break
        network = provider.processor()
        for subscription in due:
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
        done += len(due)
        if len(due) < SWEEP_BATCH:
            break
    return done


async def renew_due(session: AsyncSession, tenant: Tenant, now: datetime) -> int:
    """Due work of a sandbox clock advance: this tenant's subscriptions due at `now`."""
    return await _settle_due_subscriptions(
        session, tenant=tenant, livemode=None, now=now, rounds=SWEEP_ROUNDS
    )


async def sweep(session: AsyncSession) -> int:
    """The leading scheduler's billing calendar: found by query, live on real time, each sandbox on
    its own clock. A sweep is safe to run late, twice, or on two schedulers at once (SKIP LOCKED,
    and the unique cycle index)."""
    done = await _settle_due_subscriptions(
        session, tenant=None, livemode=True, now=utcnow(), rounds=SWEEP_ROUNDS
    )
    for installation_id in await repository.sandboxes_with_subscriptions(session, SWEEP_SANDBOXES):
        sandbox = Tenant(installation_id, False)
        done += await renew_due(session, sandbox, await tenant_now(session, sandbox))
    return done


register_periodic("billing.renewals", timedelta(seconds=20), sweep)
register_due_work("billing.renewals", renew_due)


async def process_renewal(session: AsyncSession, operation: Operation, processor: Processor) -> None:
    """The `renewal` operation's handler: charge the cycle's payment off-session, once."""
    invoice_id = str(operation.payload["subscription_invoice"])
    tenant = Tenant(operation.installation_id, operation.livemode)
    found = await repository.get_invoice(session, tenant, invoice_id)
    if found is None:
        return
    subscription = await get_subscription(session, tenant, found.subscription_id, lock=True)
    invoice = await repository.get_invoice(session, tenant, invoice_id, for_update=True)
    assert invoice is not None
    if invoice.status != "open" or subscription.status != "active":
        return  # collected already, cancelled, or stopped for review (a sync resumes it)
    method, problem = await _renewal_method_or_problem(session, tenant, subscription, invoice)
    if problem is not None:
        await _stop_for_review(session, tenant, subscription, problem)
        return
    payment = await payments.lock_payment_intent(session, tenant, invoice.payment_intent_id)
    if payment.status not in payments.CONFIRMABLE:
        return  # paid meanwhile: the capture listener recorded it
    await payments.charge_off_session(
        session, tenant, processor, payment, method, idempotency_key=_charge_key(invoice)
    )
    if payment.status == "requires_payment_method":
        decline = (payment.last_payment_error or {}).get("decline_code") or "generic_decline"
        await _fail(session, tenant, subscription, invoice, str(decline))


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
        renewal = await create_operation(
            session,
            tenant,
            operation_type=RENEWAL_TYPE,
            actor_name=RENEWAL_ACTOR,
            resource=invoice.id,
            payload={"subscription_invoice": invoice.id},
        )
        invoice.operation_id = renewal.id
        await session.flush()


# --- subscription checkout -------------------------------------------------------------------------------
@dataclass(frozen=True)
class CheckoutTerms:
    """What a subscription checkout takes and shows: decided here, never by the form."""

    subscription_id: str
    invoice_id: str | None
    payment_intent_id: str | None  # none for a change with nothing due now (the page confirms it)
    frequency: str
    seller: str
    change_id: str | None = None


def frequency_of(price: Price) -> str:
    unit = price.interval
    return f"every {unit}" if price.interval_count == 1 else f"every {price.interval_count} {unit}s"


async def seller_of(session: AsyncSession, tenant: Tenant, subscription: Subscription) -> str:
    """The selling party: the merchant of record's name on a platform, else the installation's (never
    the developer firm, spec 4.M rule 7)."""
    snapshot = subscription.distribution or {}
    merchant_of_record = snapshot.get("merchant_of_record")
    if isinstance(merchant_of_record, str):
        try:
            account = await connect.get_connected_account(session, tenant, merchant_of_record)
        except ResourceMissing:
            account = None
        if account is not None and account.display_name:
            return str(account.display_name)
    installation = await installations.require_installation(session, tenant.installation_id)
    return installation.name


async def checkout_terms(
    session: AsyncSession, tenant: Tenant, subscription_id: str, invoice_id: str | None
) -> CheckoutTerms:
    """The invoice a subscription checkout collects: the first one of an incomplete subscription, or a
    failed one named by `invoice` (a recovery, on the same payment)."""
    subscription = await repository.get_subscription(session, tenant, subscription_id)
    if subscription is None:
        raise ReferencedResourceMissing(f"No such subscription: {subscription_id!r}", param="subscription")
    if invoice_id is None:
        if subscription.status != "incomplete" or subscription.latest_invoice_id is None:
            raise Conflict(
                f"This subscription is {subscription.status}: a checkout without `invoice` collects the "
                "first payment of an incomplete subscription; name a failed invoice to recover it.",
                param="subscription",
            )
        invoice_id = subscription.latest_invoice_id
        wanted = ("open",)
    else:
        wanted = ("failed",)
    invoice = await repository.get_invoice(session, tenant, invoice_id)
    if invoice is None or invoice.subscription_id != subscription.id:
        raise ReferencedResourceMissing(f"No such invoice: {invoice_id!r}", param="invoice")
    if invoice.status not in wanted or subscription.status == "canceled":
        raise Conflict(
            f"This invoice is {invoice.status} and the subscription {subscription.status}: there is "
            "nothing to collect through a checkout.",
            param="invoice",
        )
    price = await catalog.get_price(session, tenant, subscription.price_id)
    return CheckoutTerms(
        subscription_id=subscription.id,
        invoice_id=invoice.id,
        payment_intent_id=invoice.payment_intent_id,
        frequency=frequency_of(price),
        seller=await seller_of(session, tenant, subscription),
    )


@dataclass(frozen=True)
class CheckoutDisplay:
    seller: str
    frequency: str


async def checkout_display(session: AsyncSession, tenant: Tenant, subscription_id: str) -> CheckoutDisplay:
    """What the hosted page shows beside the amount: who sells, and how often it renews."""
    subscription = await get_subscription(session, tenant, subscription_id)
    price = await catalog.get_price(session, tenant, subscription.price_id)
    return CheckoutDisplay(
        seller=await seller_of(session, tenant, subscription), frequency=frequency_of(price)
    )


async def record_renewal_consent(session: AsyncSession, tenant: Tenant, subscription_id: str) -> None:
    """The payer ticked the consent to save the card and to renew, on the hosted page."""
    subscription = await get_subscription(session, tenant, subscription_id, lock=True)
    subscription.renewal_consented_at = await tenant_now(session, tenant)
    await session.flush()
