"""Subscription changes (spec 2, 3, 4.M rules 1, 4, 5; CONVENTIONS.md §14): immutable proposals of new
terms, consented through a subscription checkout.

A change's state machine is data:

    open             -> awaiting_payment   immediate: its checkout opened the difference's invoice
    open             -> accepted           next_cycle: the payer confirmed it on the hosted page
    open             -> expired            not accepted within 15 minutes (on the environment's clock)
    open             -> canceled           withdrawn, or its subscription was cancelled
    awaiting_payment -> applied            the difference was paid in full: the new terms are in force
    awaiting_payment -> canceled           withdrawn (its unpaid payment cancelled; never a refund)
    accepted         -> applied            the renewal that opens the next cycle applies it first
    accepted         -> canceled           withdrawn, or its subscription was cancelled

`expected_version` is the subscription's `terms_version`; applying a change makes it one more, so a
proposal quoted against older terms can never be applied.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.billing import catalog, repository
from moneyrail.billing.schemas import ChangeCreate, SubscriptionChangeOut
from moneyrail.disputes import service as disputes
from moneyrail.engine.clock import tenant_now
from moneyrail.engine.schedule import register_periodic
from moneyrail.errors import (
    AmountTooSmall,
    ChangeExpired,
    Conflict,
    CurrencyInvalid,
    ParameterInvalid,
    ReferencedResourceMissing,
    ResourceMissing,
    SubscriptionChangePending,
    SubscriptionVersionConflict,
)
from moneyrail.events.service import record_event
from moneyrail.kit import states
from moneyrail.kit.clock import to_unix, utcnow
from moneyrail.kit.ids import new_id
from moneyrail.kit.pagination import Position
from moneyrail.kit.tenant import Tenant
from moneyrail.models import PaymentIntent, Price, Subscription, SubscriptionChange, SubscriptionInvoice
from moneyrail.payments import refunds as payment_refunds
from moneyrail.payments import service as payments
from moneyrail.payments.schemas import PaymentIntentCreate
from moneyrail.processor import provider
from moneyrail.processor.interface import Processor
from moneyrail.sandbox.service import register_due_work

from . import checkout, collection, subscriptions

logger = structlog.get_logger("moneyrail.billing.changes")

CHANGE_LIFETIME = timedelta(minutes=15)  # an open proposal not accepted this long expires
EXPIRY_BATCH = 500
CHANGE_TRANSITIONS: dict[str, frozenset[str]] = {
    "open": frozenset({"awaiting_payment", "accepted", "expired", "canceled"}),
    "awaiting_payment": frozenset({"applied", "canceled"}),
    "accepted": frozenset({"applied", "canceled"}),
    "applied": frozenset(),
    "canceled": frozenset(),
    "expired": frozenset(),
}


def _move(change: SubscriptionChange, status: str, now: datetime) -> None:
    states.move(change, status, CHANGE_TRANSITIONS, "A subscription change")
    if status == "accepted":
        change.accepted_at = now
    elif status == "applied":
        change.applied_at = now
    elif status == "canceled":
        change.canceled_at = now


# --- the arithmetic ------------------------------------------------------------------------------------
def prorated_difference(difference: int, period_start: datetime, period_end: datetime, now: datetime) -> int:
    """The difference payable now for the rest of the period: ceil(difference x remaining seconds /
    period seconds) (spec 4.M rule 4)."""
    if difference <= 0:
        return 0
    period_seconds = int((period_end - period_start).total_seconds())
    remaining_seconds = min(period_seconds, max(0, int((period_end - now).total_seconds())))
    if period_seconds <= 0:
        return 0
    return -(-difference * remaining_seconds // period_seconds)  # rounded up to the minor unit


async def _why_period_excluded(
    session: AsyncSession, tenant: Tenant, subscription: Subscription
) -> str | None:
    """Spec 4.M rule 4: the difference "is not computed over refunded or disputed periods". Whether the
    current period's collection was refunded (in part or whole, a refund pending included) or
    disputed (a dispute opened, whatever its outcome), and which.

    Read literally, no difference exists for such a period: an immediate change there is refused (not
    charged as if the period's current total were zero, nor applied for free), and the payer schedules
    it for the renewal instead (next_cycle), as with a difference too small for the commission."""
    invoice = await repository.cycle_invoice(session, subscription.id, subscription.cycle)
    if invoice is None or invoice.status != "paid":
        return None
    payment = await payments.get_payment_intent(session, tenant, invoice.payment_intent_id)
    if await disputes.is_disputed(session, payment.id):
        return "disputed"
    if payment.amount_refunded > 0 or await payment_refunds.promised_back(session, payment.id) > 0:
        return "refunded"
    return None


# --- rendering ---------------------------------------------------------------------------------------
def shown_status(change: SubscriptionChange, now: datetime) -> str:
    """An open proposal past its lifetime reads `expired` even before the sweep records it."""
    if change.status == "open" and now >= change.expires_at:
        return "expired"
    return change.status


def render_change(change: SubscriptionChange, now: datetime) -> SubscriptionChangeOut:
    def stamp(moment: datetime | None) -> int | None:
        return to_unix(moment) if moment is not None else None

    return SubscriptionChangeOut(
        id=change.id,
        livemode=change.livemode,
        created=to_unix(change.created_at),
        subscription=change.subscription_id,
        price=change.price_id,
        quantity=change.quantity,
        currency=change.currency,
        effective=cast(Any, change.effective),
        status=cast(Any, shown_status(change, now)),
        expected_version=change.terms_version,
        current_amount=change.current_amount,
        amount=change.amount,
        amount_due=change.amount_due,
        expires_at=to_unix(change.expires_at),
        subscription_invoice=change.invoice_id,
        accepted_at=stamp(change.accepted_at),
        applied_at=stamp(change.applied_at),
        canceled_at=stamp(change.canceled_at),
    )


async def change_view(
    session: AsyncSession, tenant: Tenant, change: SubscriptionChange
) -> SubscriptionChangeOut:
    return render_change(change, await tenant_now(session, tenant))


async def _announce(
    session: AsyncSession, tenant: Tenant, change: SubscriptionChange, event_type: str
) -> None:
    shown = await change_view(session, tenant, change)
    await record_event(session, tenant, event_type, shown.model_dump(mode="json"))


# --- quoting --------------------------------------------------------------------------------------------
async def _new_price(
    session: AsyncSession, tenant: Tenant, subscription: Subscription, current: Price, price_id: str | None
) -> Price:
    if price_id is None or price_id == current.id:
        return current
    price = await repository.get_price(session, tenant, price_id)
    if price is None:
        raise ReferencedResourceMissing(f"No such price: {price_id!r}", param="price")
    if not price.active:
        raise Conflict("This price is archived: it takes no new terms.", param="price")
    await catalog.active_product(session, tenant, price.product_id, "price")
    if price.currency != subscription.currency:
        raise CurrencyInvalid(
            f"This subscription is billed in {subscription.currency}; a change keeps the currency (a new "
            "currency needs a new subscription and new consent).",
            param="price",
        )
    return price


def switches_frequency(current: Price, new: Price) -> bool:
    """A monthly/yearly switch (or another interval_count): it can only start a new period."""
    return (new.interval, new.interval_count) != (current.interval, current.interval_count)


async def create_change(
    session: AsyncSession, tenant: Tenant, subscription_id: str, command: ChangeCreate
) -> SubscriptionChange:
    """Quote an immutable proposal against the current `terms_version`; nothing changes or is charged."""
    subscription = await subscriptions.get_subscription(session, tenant, subscription_id, lock=True)
    if subscription.terms_version != command.expected_version:
        raise SubscriptionVersionConflict(
            f"expected_version {command.expected_version} is not this subscription's terms_version "
            f"({subscription.terms_version}): read it again and quote anew.",
            param="expected_version",
        )
    if subscription.status != "active" or subscription.cancel_at_period_end:
        raise Conflict(
            f"This subscription is {subscription.status}"
            f"{' and ends at the period end' if subscription.cancel_at_period_end else ''}: "
            "only an active, renewing subscription takes a change.",
            param="subscription",
        )
    now = await tenant_now(session, tenant)
    pending = await repository.unapplied_change(session, subscription.id)
    if pending is not None and shown_status(pending, now) != "expired":
        raise SubscriptionChangePending(
            f"Change {pending.id} of this subscription is {pending.status}: finish or withdraw it first.",
            param="subscription",
        )
    if pending is not None:  # lapsed but not swept yet: record its expiry before the new one takes its place
        await _expire(session, tenant, pending, now)
    current_price = await catalog.get_price(session, tenant, subscription.price_id)
    price = await _new_price(session, tenant, subscription, current_price, command.price)
    quantity = command.quantity if command.quantity is not None else subscription.quantity
    if not 1 <= quantity <= subscriptions.MAX_QUANTITY:
        raise ParameterInvalid(f"quantity must be 1 to {subscriptions.MAX_QUANTITY}.", param="quantity")
    if price.id == subscription.price_id and quantity == subscription.quantity:
        raise ParameterInvalid("This change names the current price and quantity: it changes nothing.")
    amount = await catalog.checked_total(session, tenant, price, quantity)
    current_amount = catalog.cycle_amount(current_price, subscription.quantity)
    amount_due = 0
    if command.effective == "immediate" and switches_frequency(current_price, price):
        raise ParameterInvalid(
            f"This price renews {checkout.frequency_of(price)}, the subscription "
            f"{checkout.frequency_of(current_price)}: a change of billing frequency takes effect at the "
            "renewal, where the new period starts; schedule it with effective next_cycle.",
            param="effective",
        )
    if command.effective == "immediate":
        if amount <= current_amount:
            raise ParameterInvalid(
                f"The new total ({amount}) is not above the current one ({current_amount}): a reduction "
                "takes effect at renewal (effective next_cycle), no credit is created.",
                param="effective",
            )
        excluded = await _why_period_excluded(session, tenant, subscription)
        if excluded is not None:
            raise ParameterInvalid(
                f"The payment of the current period was {excluded}: no prorated difference is computed "
                "over a refunded or disputed period (spec 4.M rule 4), so nothing can be charged now for "
                "an immediate change. Schedule it for the renewal instead (effective next_cycle).",
                param="effective",
            )
        amount_due = prorated_difference(
            amount - current_amount, subscription.current_period_start, subscription.current_period_end, now
        )
        reserve = (await payments.commission_policy(session, tenant)).reserve(amount_due)
        if amount_due == 0 or (reserve is not None and amount_due <= reserve):
            raise AmountTooSmall(
                f"The difference payable now ({amount_due}) does not cover the commission it carries"
                f"{f' ({reserve})' if reserve is not None else ''}: schedule the change for the renewal "
                "instead (effective next_cycle).",
                param="effective",
            )
    change = SubscriptionChange(
        id=new_id("subchg"),
        installation_id=tenant.installation_id,
        livemode=tenant.livemode,
        subscription_id=subscription.id,
        price_id=price.id,
        quantity=quantity,
        currency=subscription.currency,
        effective=command.effective,
        status="open",
        terms_version=subscription.terms_version,
        current_amount=current_amount,
        amount=amount,
        amount_due=amount_due,
        expires_at=now + CHANGE_LIFETIME,
        created_at=utcnow(),
        updated_at=utcnow(),
    )
    await repository.add(session, change)
    logger.info(
        "subscription_change_quoted",
        subscription=subscription.id,
        change=change.id,
        effective=change.effective,
        amount_due=amount_due,
        currency=change.currency,
    )
    return change


# --- reading -------------------------------------------------------------------------------------------
async def get_change(
    session: AsyncSession, tenant: Tenant, subscription_id: str, change_id: str, *, lock: bool = False
) -> SubscriptionChange:
    subscription = await subscriptions.get_subscription(session, tenant, subscription_id)
    change = await repository.get_change(session, tenant, change_id, for_update=lock)
    if change is None or change.subscription_id != subscription.id:
        raise ResourceMissing(f"No such change: {change_id!r}", param="change")
    return change


async def list_changes(
    session: AsyncSession, tenant: Tenant, subscription_id: str, *, limit: int, after: Position | None
) -> Sequence[SubscriptionChange]:
    subscription = await subscriptions.get_subscription(session, tenant, subscription_id)
    return await repository.list_changes(session, subscription.id, limit=limit, after=after)


# --- withdrawing, expiring ----------------------------------------------------------------------------
async def _void_difference(
    session: AsyncSession, tenant: Tenant, processor: Processor, change: SubscriptionChange
) -> None:
    """An immediate change's unpaid difference goes with it: its payment cancelled, its invoice void.
    A payment still processing must be clarified first (a sync), and a paid one was applied already:
    a withdrawal never refunds."""
    if change.invoice_id is None:
        return
    invoice = await repository.get_invoice(session, tenant, change.invoice_id, for_update=True)
    assert invoice is not None
    if invoice.status not in ("open", "failed"):
        return
    payment = await payments.lock_payment_intent(session, tenant, invoice.payment_intent_id)
    if payment.status not in payments.CONFIRMABLE and payment.status != "canceled":
        raise Conflict(
            f"The difference's payment is {payment.status}: it must be clarified before the change can be "
            "withdrawn (request a sync of the subscription).",
            param="change",
        )
    if payment.status != "canceled":
        await payments.cancel_payment_intent(session, tenant, processor, payment.id, "abandoned")
    subscriptions.void_invoice(invoice)
    await session.flush()


async def cancel_change(
    session: AsyncSession, tenant: Tenant, processor: Processor, subscription_id: str, change_id: str
) -> SubscriptionChange:
    """Withdraw an unapplied change (not a refund)."""
    await subscriptions.get_subscription(session, tenant, subscription_id, lock=True)
    change = await get_change(session, tenant, subscription_id, change_id, lock=True)
    now = await tenant_now(session, tenant)
    if shown_status(change, now) == "expired":
        raise ChangeExpired("This proposal expired unaccepted: there is nothing to withdraw.", param="change")
    if change.status not in ("open", "accepted", "awaiting_payment"):
        raise Conflict(f"This change is {change.status}: only an unapplied change can be withdrawn.")
    await _void_difference(session, tenant, processor, change)
    _move(change, "canceled", now)
    await session.flush()
    await _announce(session, tenant, change, "subscription.change.canceled")
    return change


async def _expire(session: AsyncSession, tenant: Tenant, change: SubscriptionChange, now: datetime) -> None:
    _move(change, "expired", now)
    await session.flush()
    await _announce(session, tenant, change, "subscription.change.expired")


async def expire_due(session: AsyncSession, tenant: Tenant, now: datetime) -> int:
    """Due work of a sandbox clock advance: this tenant's proposals that lapsed at `now`."""
    lapsed = await repository.lapsed_changes(
        session, tenant=tenant, livemode=None, now=now, limit=EXPIRY_BATCH
    )
    for change in lapsed:
        await _expire(session, tenant, change, now)
    return len(lapsed)


async def sweep(session: AsyncSession) -> int:
    """The leading scheduler's expiry of proposals: live on real time, each sandbox on its own clock."""
    done = 0
    for change in await repository.lapsed_changes(
        session, tenant=None, livemode=True, now=utcnow(), limit=EXPIRY_BATCH
    ):
        await _expire(session, Tenant(change.installation_id, True), change, utcnow())
        done += 1
    for installation_id in await repository.sandboxes_with_open_changes(session, EXPIRY_BATCH):
        sandbox = Tenant(installation_id, False)
        done += await expire_due(session, sandbox, await tenant_now(session, sandbox))
    return done


register_periodic("billing.change_expiry", timedelta(seconds=30), sweep)
register_due_work("billing.change_expiry", expire_due)


async def _cancel_with_subscription(
    session: AsyncSession, tenant: Tenant, subscription: Subscription
) -> None:
    """A subscription withdrawn takes its unapplied change with it (its open invoice is voided with the
    subscription's other unsettled ones)."""
    change = await repository.unapplied_change(session, subscription.id, for_update=True)
    if change is None:
        return
    now = await tenant_now(session, tenant)
    if shown_status(change, now) == "expired":
        await _expire(session, tenant, change, now)
        return
    _move(change, "canceled", now)
    await session.flush()
    await _announce(session, tenant, change, "subscription.change.canceled")


subscriptions.register_on_end(_cancel_with_subscription)


# --- consent and application ---------------------------------------------------------------------------
async def _apply(
    session: AsyncSession, tenant: Tenant, subscription: Subscription, change: SubscriptionChange
) -> None:
    now = await tenant_now(session, tenant)
    subscription.price_id = change.price_id
    subscription.quantity = change.quantity
    subscription.terms_version = change.terms_version + 1
    subscription.updated_at = utcnow()
    _move(change, "applied", now)
    await session.flush()
    await _announce(session, tenant, change, "subscription.change.applied")
    await subscriptions.announce_subscription(session, tenant, subscription)
    logger.info("subscription_change_applied", subscription=subscription.id, change=change.id)


async def _apply_scheduled(session: AsyncSession, tenant: Tenant, subscription: Subscription) -> None:
    """Before a renewal opens the next cycle: an accepted next_cycle change takes effect. An immediate
    change whose difference is still unpaid priced a period that is now over: it is withdrawn (its
    payment cancelled, never charged later for a period gone), unless that payment is processing."""
    change = await repository.unapplied_change(session, subscription.id, for_update=True)
    if change is not None and change.status == "awaiting_payment":
        try:
            async with session.begin_nested():
                await _void_difference(session, tenant, provider.routed(), change)
        except Conflict:
            return  # a payment in processing: its outcome decides (the capture applies the change)
        _move(change, "canceled", await tenant_now(session, tenant))
        await session.flush()
        await _announce(session, tenant, change, "subscription.change.canceled")
        return
    if change is None or change.status != "accepted" or change.effective != "next_cycle":
        return
    if change.terms_version != subscription.terms_version:  # cannot happen while one change is unapplied
        _move(change, "canceled", await tenant_now(session, tenant))
        await _announce(session, tenant, change, "subscription.change.canceled")
        return
    current = await catalog.get_price(session, tenant, subscription.price_id)
    if switches_frequency(current, await catalog.get_price(session, tenant, change.price_id)):
        # a monthly/yearly switch (spec 4.M rule 5): the new frequency's calendar starts at this
        # renewal, the period the renewal opens is its first
        subscription.anchor_at = subscription.current_period_end
        subscription.anchor_cycle = subscription.cycle + 1
    await _apply(session, tenant, subscription, change)


subscriptions.register_before_renewal(_apply_scheduled)


async def _on_difference_paid(session: AsyncSession, tenant: Tenant, payment: PaymentIntent) -> None:
    """The difference of an immediate change was captured in full: its terms apply now, in the capture's
    transaction. The period and `access_until` stay as they are."""
    invoice = await repository.invoice_for_payment(session, payment.id)
    if invoice is None or invoice.billing_kind != "upgrade":
        return
    change = await repository.change_for_invoice(session, invoice.id)
    if change is None or change.status != "awaiting_payment":
        return
    subscription = await subscriptions.get_subscription(session, tenant, change.subscription_id, lock=True)
    await _apply(session, tenant, subscription, change)


async def _on_differences_paid(
    session: AsyncSession, tenant: Tenant, captured: Sequence[PaymentIntent]
) -> None:
    """`_on_difference_paid` for payments captured together: one statement finds the upgrade invoices."""
    invoices = await repository.invoices_for_payments(session, [payment.id for payment in captured])
    for payment in captured:
        invoice = invoices.get(payment.id)
        if invoice is not None and invoice.billing_kind == "upgrade":
            await _on_difference_paid(session, tenant, payment)


payments.register_capture_listener(
    _on_difference_paid, together=_on_differences_paid, when=collection.PAYS_SUBSCRIPTION_INVOICE
)


async def _open_difference(
    session: AsyncSession, tenant: Tenant, subscription: Subscription, change: SubscriptionChange
) -> SubscriptionInvoice:
    """The `upgrade` collection record of an immediate change and its payment, with the distribution
    snapshot of the moment (a positive difference takes its own, spec 4.M rule 2)."""
    snapshot = subscription.distribution
    created = await payments.create_payment_intent(
        session,
        tenant,
        PaymentIntentCreate(
            amount=change.amount_due,
            currency=subscription.currency,
            customer=subscription.customer_id,
            distribution=subscriptions.cycle_distribution(snapshot, change.amount_due)
            if snapshot is not None
            else None,
            description=f"Subscription {subscription.id}, change {change.id}",
            metadata={"subscription": subscription.id, "change": change.id},
        ),
    )
    now = await tenant_now(session, tenant)
    invoice = SubscriptionInvoice(
        id=new_id("subinv"),
        installation_id=tenant.installation_id,
        livemode=tenant.livemode,
        subscription_id=subscription.id,
        billing_kind="upgrade",
        cycle=subscription.cycle,
        status="open",
        amount=change.amount_due,
        currency=subscription.currency,
        period_start=min(now, subscription.current_period_end),
        period_end=subscription.current_period_end,
        payment_intent_id=created.payment.id,
        terms_version=change.terms_version + 1,
        distribution_version=subscription.distribution_version if snapshot is not None else None,
        distribution=snapshot,
        settlement_status="not_applicable",
        created_at=utcnow(),
        updated_at=utcnow(),
    )
    await repository.add(session, invoice)
    return invoice


async def checkout_terms(
    session: AsyncSession, tenant: Tenant, subscription_id: str, change_id: str
) -> checkout.CheckoutTerms:
    """What a checkout for a change takes: an immediate change's difference (its `upgrade` invoice and
    payment, opened here once), or nothing for a next_cycle change (the page confirms the change)."""
    subscription = await repository.get_subscription(session, tenant, subscription_id, for_update=True)
    if subscription is None:
        raise ReferencedResourceMissing(f"No such subscription: {subscription_id!r}", param="subscription")
    change = await repository.get_change(session, tenant, change_id, for_update=True)
    if change is None or change.subscription_id != subscription.id:
        raise ReferencedResourceMissing(f"No such change: {change_id!r}", param="change")
    now = await tenant_now(session, tenant)
    if shown_status(change, now) == "expired":
        raise ChangeExpired("This proposal expired unaccepted; quote a new one.", param="change")
    if change.status not in ("open", "awaiting_payment"):
        raise Conflict(f"This change is {change.status}: there is nothing to consent to.", param="change")
    if subscription.status != "active" or subscription.terms_version != change.terms_version:
        raise SubscriptionVersionConflict(
            "The subscription changed since this proposal was quoted; quote a new one.", param="change"
        )
    price = await catalog.get_price(session, tenant, change.price_id)
    invoice_id: str | None = None
    payment_id: str | None = None
    if change.effective == "immediate":
        if change.invoice_id is None:
            invoice = await _open_difference(session, tenant, subscription, change)
            change.invoice_id = invoice.id
            _move(change, "awaiting_payment", now)
            await session.flush()
            await _announce(session, tenant, change, "subscription.change.awaiting_payment")
        else:
            found = await repository.get_invoice(session, tenant, change.invoice_id)
            assert found is not None
            invoice = found
        invoice_id, payment_id = invoice.id, invoice.payment_intent_id
    return checkout.CheckoutTerms(
        subscription_id=subscription.id,
        invoice_id=invoice_id,
        payment_intent_id=payment_id,
        frequency=checkout.frequency_of(price),
        seller=await checkout.seller_of(session, tenant, subscription),
        change_id=change.id,
    )


async def accept_change(session: AsyncSession, tenant: Tenant, change_id: str) -> SubscriptionChange:
    """The payer confirmed a next_cycle change on the hosted page: it is scheduled for the renewal, and
    stays so whatever becomes of the checkout's link."""
    change = await repository.get_change(session, tenant, change_id, for_update=True)
    if change is None:
        raise ResourceMissing(f"No such change: {change_id!r}", param="change")
    now = await tenant_now(session, tenant)
    if shown_status(change, now) == "expired":
        raise ChangeExpired("This proposal expired unaccepted; quote a new one.", param="change")
    if change.status == "accepted":
        return change  # a reload of the confirmation
    _move(change, "accepted", now)
    await session.flush()
    await _announce(session, tenant, change, "subscription.change.accepted")
    return change


@dataclass(frozen=True)
class ConfirmationTerms:
    """What a change's hosted page shows: who sells, the new cycle total and when it applies."""

    seller: str
    amount: int
    currency: str
    frequency: str
    applies_at: datetime


async def confirmation_terms(
    session: AsyncSession, tenant: Tenant, subscription_id: str, change_id: str
) -> ConfirmationTerms:
    subscription = await subscriptions.get_subscription(session, tenant, subscription_id)
    change = await get_change(session, tenant, subscription_id, change_id)
    price = await catalog.get_price(session, tenant, change.price_id)
    return ConfirmationTerms(
        seller=await checkout.seller_of(session, tenant, subscription),
        amount=change.amount,
        currency=change.currency,
        frequency=checkout.frequency_of(price),
        applies_at=subscription.current_period_end,
    )
