"""Collection of subscription invoices: a payment captured (paid: the period and access follow), a
renewal declined (failed, past_due), a paid cycle's distribution settled, and a refund of a subscription
payment stopping what of its distribution was not sent yet."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.billing import repository
from moneyrail.engine.clock import tenant_now
from moneyrail.engine.service import register_outcome_listener
from moneyrail.events.service import record_events
from moneyrail.kit.clock import utcnow
from moneyrail.kit.tenant import Tenant
from moneyrail.models import (
    Operation,
    PaymentIntent,
    PaymentMethod,
    Refund,
    Subscription,
    SubscriptionInvoice,
)
from moneyrail.payment_methods import service as methods
from moneyrail.payments import refunds as payment_refunds
from moneyrail.payments import service as payments
from moneyrail.transfers import reversals
from moneyrail.transfers import service as transfers

from .subscriptions import (
    _announce,
    _announce_invoice,
    _move,
    _move_invoice,
    get_subscription,
    render_invoice,
    render_subscription,
)

logger = structlog.get_logger("moneyrail.billing")


# --- collection: paid, failed --------------------------------------------------------------------------
def _paid(invoice: SubscriptionInvoice, subscription: Subscription, now: datetime) -> None:
    """The invoice paid at `now`; the subscription's period and access follow it."""
    _move_invoice(invoice, "paid")
    invoice.paid_at = now
    invoice.failure_code = None
    # an upgrade difference pays for the rest of the current period: the calendar stays (its change
    # applies the new terms, billing/service/changes.py)
    if invoice.billing_kind == "cycle" and invoice.cycle >= subscription.cycle:
        subscription.cycle = invoice.cycle
        subscription.current_period_start = invoice.period_start
        subscription.current_period_end = invoice.period_end
    if subscription.access_until is None or invoice.period_end > subscription.access_until:
        subscription.access_until = invoice.period_end
    if subscription.status in ("incomplete", "past_due"):
        _move(subscription, "active")
    subscription.updated_at = utcnow()


def _keeps_its_card(payment: PaymentIntent, method: PaymentMethod | None, subscription: Subscription) -> bool:
    """Whether the capture leaves the subscription's card as it is (`_on_payment_captured` keeps or
    prefers a card only when the payer just consented to one that is not the preferred already): a
    renewal charged the customer's preferred card."""
    if method is None or method.detached_at is not None:
        return True
    if method.customer_id == subscription.customer_id:
        return method.preferred
    return not (method.customer_id is None and payment.save_payment_method)


async def _on_payments_captured(
    session: AsyncSession, tenant: Tenant, captured: Sequence[PaymentIntent]
) -> None:
    """`_on_payment_captured` for payments captured together (a batch of renewals): invoices and
    subscriptions locked in one statement each, written in one flush, their events in one statement.
    An invoice with a distribution to settle, or a card to keep or prefer, takes the single path."""
    invoices = await repository.invoices_for_payments(session, [payment.id for payment in captured])
    collecting = [
        (payment, invoices[payment.id])
        for payment in captured
        if payment.id in invoices and invoices[payment.id].status in ("open", "failed")
    ]
    if not collecting:
        return
    subscriptions = await repository.lock_subscriptions(
        session, tenant, [invoice.subscription_id for _, invoice in collecting]
    )
    cards = await methods.methods_by_id(
        session, tenant, [payment.payment_method_id for payment, _ in collecting if payment.payment_method_id]
    )
    now = await tenant_now(session, tenant)
    paid: list[tuple[SubscriptionInvoice, Subscription]] = []
    for payment, invoice in collecting:
        subscription = subscriptions[invoice.subscription_id]
        card = cards.get(payment.payment_method_id) if payment.payment_method_id is not None else None
        if invoice.distribution is not None or not _keeps_its_card(payment, card, subscription):
            await _on_payment_captured(session, tenant, payment)
            continue
        _paid(invoice, subscription, now)
        paid.append((invoice, subscription))
    if not paid:
        return
    await session.flush()
    prices = await repository.prices_by_id(
        session, tenant, [subscription.price_id for _, subscription in paid]
    )
    events: list[tuple[str, dict[str, Any]]] = []
    for invoice, subscription in paid:
        events.append(("subscription.invoice.paid", render_invoice(invoice).model_dump(mode="json")))
        shown = render_subscription(subscription, prices[subscription.price_id], now)
        events.append(("subscription.updated", shown.model_dump(mode="json")))
    await record_events(session, tenant, events)
    logger.info("subscription_invoices_paid", count=len(paid))


async def _on_payment_captured(session: AsyncSession, tenant: Tenant, payment: PaymentIntent) -> None:
    """A subscription invoice's payment was captured (a checkout, a renewal, a recovery): the invoice
    is paid and the subscription's period and access follow it, in the capture's transaction."""
    invoice = await repository.invoice_for_payment(session, payment.id)
    if invoice is None or invoice.status not in ("open", "failed"):
        return
    subscription = await get_subscription(session, tenant, invoice.subscription_id, lock=True)
    _paid(invoice, subscription, await tenant_now(session, tenant))
    if invoice.distribution is not None:
        # paid is not distributed (spec 4.M rule 6): `pending` until the payment's allocation group
        # exists, `distributing` while its commit runs (transfers' capture listener ran first), then the
        # commit's outcome settles it
        group_id = await transfers.distribution_group_id(session, payment.id)
        invoice.allocation_group_id = group_id
        invoice.settlement_status = "distributing" if group_id is not None else "pending"
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


PAYS_SUBSCRIPTION_INVOICE = "pays_subscription_invoice"
payments.register_payment_fact(PAYS_SUBSCRIPTION_INVOICE, repository.collected_by_payment)
payments.register_capture_listener(
    _on_payment_captured, together=_on_payments_captured, when=PAYS_SUBSCRIPTION_INVOICE
)


async def _on_distribution_outcome(session: AsyncSession, operation: Operation) -> None:
    """A paid cycle's distribution: its allocation commit's end is the invoice's settlement (`pending`
    until then; a collected payment is not a finished distribution, spec 4.M rule 6). A commit that
    retries or waits in `dead_letter` leaves it `distributing` (final means final): an operator's retry
    that then succeeds settles it, a discard fails it."""
    await _on_distribution_outcomes(session, [operation])


async def _on_distribution_outcomes(session: AsyncSession, operations: Sequence[Operation]) -> None:
    """`_on_distribution_outcome` for one commit, or a batch of them that succeeded together: one
    statement finds the invoices their groups distribute, with each group's status."""
    finished = {
        str(operation.payload["allocation_group"]): operation
        for operation in operations
        if operation.type == transfers.COMMIT_TYPE and operation.status in ("succeeded", "failed", "canceled")
    }
    if not finished:
        return
    found = await repository.invoices_of_groups(session, list(finished))
    for group_id, group_status, invoice in found:
        operation = finished[group_id]
        if invoice.distribution is None or (invoice.installation_id, invoice.livemode) != (
            operation.installation_id,
            operation.livemode,
        ):
            continue
        invoice.allocation_group_id = group_id
        if group_status == "canceled":  # a refund stopped it before it went out: its commit sent nothing
            invoice.settlement_status = "canceled"
        else:
            invoice.settlement_status = "settled" if operation.status == "succeeded" else "failed"
        invoice.updated_at = utcnow()
    if found:
        await session.flush()


register_outcome_listener(_on_distribution_outcome, together=_on_distribution_outcomes)


async def _stop_distribution_on_refund(
    session: AsyncSession, tenant: Tenant, payment: PaymentIntent, refund: Refund
) -> None:
    """A refund of a subscription payment (spec 4.C) stops the distribution not executed yet, in the
    transaction that accepts it; the refund's operation then reverses what was sent and refunds."""
    invoice = await repository.invoice_for_payment(session, payment.id)
    if invoice is None or invoice.distribution is None:
        return
    if await reversals.stop_unsent_distribution(session, tenant, payment):
        invoice.settlement_status = "canceled"
        invoice.updated_at = utcnow()
        await session.flush()
        logger.info("subscription_distribution_stopped", subscription_invoice=invoice.id, refund=refund.id)


payment_refunds.register_refund_acceptor(_stop_distribution_on_refund)


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
