"""Subscriptions (spec 2, 3, 4.M; CONVENTIONS.md §14): the records, their state machines, creating, reading,
cancelling and resuming; the invoice of each cycle opened with its distribution snapshot.

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
from datetime import datetime, timedelta
from typing import Any, cast

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.billing import calendar, catalog, repository
from moneyrail.billing.schemas import PriceCreate, SubscriptionCreate, SubscriptionInvoiceOut, SubscriptionOut
from moneyrail.customers import service as customers
from moneyrail.engine.clock import tenant_now
from moneyrail.engine.policy import RetryPolicy, register_policy
from moneyrail.engine.service import statuses_of
from moneyrail.errors import (
    Conflict,
    DistributionInvalid,
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
from moneyrail.kit.schemas import operation_error_out
from moneyrail.kit.tenant import Tenant
from moneyrail.merchants import service as merchants
from moneyrail.models import Price, Subscription, SubscriptionInvoice
from moneyrail.payments import service as payments
from moneyrail.payments.schemas import AllocationIn, DistributionIn, PaymentIntentCreate
from moneyrail.processor.interface import Processor

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
        merchant=subscription.merchant_id,
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
        operation=invoice.operation_id,
        last_operation_error=(
            operation_error_out(invoice.last_operation_error)
            if invoice.status in ("open", "failed")
            else None
        ),
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


def cycle_boundary(subscription: Subscription, price: Price, cycle: int) -> datetime:
    """The start of a cycle on the subscription's calendar: counted from its anchor, which a
    monthly/yearly switch moved to the renewal it took effect at (`anchor_cycle`)."""
    interval = cast(calendar.Interval, price.interval)
    return calendar.boundary(
        subscription.anchor_at, interval, price.interval_count, cycle - subscription.anchor_cycle
    )


def cycle_invoice(
    tenant: Tenant,
    subscription: Subscription,
    price: Price,
    cycle: int,
    amount: int,
    payment_id: str,
    now: datetime,
    *,
    distribution: dict[str, Any] | None = None,
) -> SubscriptionInvoice:
    """A cycle's open invoice, unsaved: its period from the calendar, charged by `payment_id`; with
    the distribution snapshot it settles by, if the subscription distributes."""
    return SubscriptionInvoice(
        id=new_id("subinv"),
        installation_id=tenant.installation_id,
        livemode=tenant.livemode,
        subscription_id=subscription.id,
        billing_kind="cycle",
        cycle=cycle,
        status="open",
        amount=amount,
        currency=subscription.currency,
        period_start=cycle_boundary(subscription, price, cycle),
        period_end=cycle_boundary(subscription, price, cycle + 1),
        payment_intent_id=payment_id,
        terms_version=subscription.terms_version,
        distribution_version=subscription.distribution_version if distribution is not None else None,
        distribution=distribution,
        settlement_status="not_applicable",
        created_at=now,
        updated_at=now,
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
    invoice = cycle_invoice(
        tenant, subscription, price, cycle, amount, created.payment.id, now, distribution=snapshot
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
    # the merchant it sells for: active and able to take payments now; each renewal checks it again
    merchant = (
        await merchants.merchant_for_payment(session, tenant, command.merchant)
        if command.merchant is not None
        else None
    )
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
        merchant_id=merchant.id if merchant is not None else None,
        price_id=price.id,
        quantity=command.quantity,
        currency=price.currency,
        status="incomplete",
        anchor_at=now,
        anchor_cycle=0,
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


async def get_subscription_invoice(
    session: AsyncSession, tenant: Tenant, invoice_id: str
) -> SubscriptionInvoice:
    invoice = await repository.get_invoice(session, tenant, invoice_id)
    if invoice is None:
        raise ResourceMissing(f"No such subscription_invoice: {invoice_id!r}", param="subscription_invoice")
    return invoice


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
    """Invoices not collected are void, their payments cancelled: nothing is charged after a cancel. Not
    while a renewal is charging one: its charge is at the network with no lock held (the renewal's
    operation is running), and would be taken with its payment cancelled."""
    unsettled = await repository.unsettled_invoices(session, subscription.id)
    operations = await statuses_of(session, [i.operation_id for i in unsettled if i.operation_id])
    if "running" in operations.values():
        raise Conflict("A renewal of this subscription is being charged right now: cancel again in a moment.")
    for invoice in unsettled:
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
