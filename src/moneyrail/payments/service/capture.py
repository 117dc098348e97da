"""Capturing (alone or several together), cancelling and incrementing an authorization."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.customers import service as customers
from moneyrail.db.raw import AnsweringClaim
from moneyrail.deliveries import service as deliveries
from moneyrail.engine.clock import tenant_now
from moneyrail.errors import AmountInvalid, CardDeclined, Conflict, FeeAmountImmutable
from moneyrail.events.service import record_events
from moneyrail.installations import service as installations
from moneyrail.kit.clock import utcnow
from moneyrail.kit.tenant import Tenant
from moneyrail.ledger.service import AccountsOutlook
from moneyrail.models import PaymentIntent
from moneyrail.payments import distribution as distributions
from moneyrail.payments import fees, phases, repository
from moneyrail.payments.schemas import render_payment_intent
from moneyrail.processor.interface import Processor

from .answers import DECLINE_MESSAGES, _network_answers
from .hooks import (
    HELD_FOR_REVIEW,
    _capture_listeners,
    _facts_of,
    _listeners_for,
    _payment_facts,
    _refuse_if_owned,
)
from .state import CANCELABLE, StepAnswer, _locked_claiming, _move, announce

logger = structlog.get_logger("moneyrail.payments")


# --- capturing, cancelling, incrementing ---------------------------------------------------------------
async def _capture(
    session: AsyncSession,
    tenant: Tenant,
    processor: Processor,
    payment: PaymentIntent,
    amount: int,
    facts: frozenset[str],
    *,
    answer: StepAnswer | None = None,
    outlook: AccountsOutlook | None = None,
) -> None:
    """`facts`: the payment's (`_facts_of`), asked after it was locked. `answer`: the request's, written
    with the capture's last statement. `outlook`: the ledger's, read with the facts
    (`fees.capture_outlook`): the postings then ride in the last statement too, unless a listener runs
    (it may read the ledger, so it finds them written)."""
    assert payment.processor_authorization is not None
    with _network_answers("capture"):
        capture = await processor.capture(
            tenant,
            idempotency_key=_capture_key_of(payment)(payment.processor_authorization),
            authorization_id=payment.processor_authorization,
            amount=amount,
        )
    # the network's own time of capture when it gives one (the sandbox does, on the tenant's clock)
    _mark_captured(payment, capture.amount_captured, capture.captured_at or await tenant_now(session, tenant))
    listeners = _listeners_for(payment, facts)
    postings = await fees.post_capture(session, tenant, payment, None if listeners else outlook)
    # not flushed here: the row goes with its event (announce), unless a listener's flush writes it first
    for listener in listeners:
        await listener(session, tenant, payment)
    await _send_receipts(session, tenant, payment)
    await announce(session, tenant, payment, "payment_intent.succeeded", answer, also=postings)
    logger.info(
        "payment_succeeded",
        payment_intent=payment.id,
        amount=payment.amount_received,
        currency=payment.currency,
    )


async def _send_receipts(session: AsyncSession, tenant: Tenant, payment: PaymentIntent) -> None:
    email = payment.receipt_email
    if email is None and payment.customer_id is not None:
        email = (await customers.get_customer(session, tenant, payment.customer_id)).email
    if email is not None or payment.receipt_phone is not None:
        await deliveries.schedule_receipts(session, tenant, payment, email=email, phone=payment.receipt_phone)


def _capture_key_of(payment: PaymentIntent) -> Callable[[str], str]:
    # per authorization: a retry with another card captures its own, never the lost one's key
    return lambda authorization_id: f"{payment.id}:capture:{authorization_id}"


def _mark_captured(payment: PaymentIntent, amount_captured: int, captured_at: datetime) -> None:
    """A payment the network captured, alone or with others (`record_off_session_charges`)."""
    payment.amount_received = amount_captured
    payment.amount_capturable = 0
    payment.captured_at = captured_at
    _move(payment, "succeeded")


async def _captured_together(
    session: AsyncSession, tenant: Tenant, captured: Sequence[PaymentIntent]
) -> None:
    """`_capture`'s writing for several payments captured at once."""
    await fees.post_captures(session, tenant, captured)
    await session.flush()
    for listener, together in _capture_listeners.items():
        if together is not None:
            await together(session, tenant, captured)
        else:
            for payment in captured:
                await listener(session, tenant, payment)
    emails = await customers.emails_of(
        session, tenant, [p.customer_id for p in captured if p.receipt_email is None and p.customer_id]
    )
    for payment in captured:
        email = payment.receipt_email or emails.get(payment.customer_id or "")
        if email is not None or payment.receipt_phone is not None:
            await deliveries.schedule_receipts(
                session, tenant, payment, email=email, phone=payment.receipt_phone
            )
    key = await installations.publishable_key(session, tenant)
    described = await distributions.describe(session, captured)
    await record_events(
        session,
        tenant,
        [
            (
                "payment_intent.succeeded",
                render_payment_intent(
                    payment,
                    publishable_key=key,
                    with_authentication_link=False,
                    distribution=described.get(payment.id),
                ).model_dump(mode="json"),
            )
            for payment in captured
        ],
    )
    logger.info("payments_succeeded", count=len(captured), currency=captured[0].currency)


async def capture_payment_intent(
    session: AsyncSession,
    tenant: Tenant,
    processor: Processor,
    payment_id: str,
    amount_to_capture: int | None,
    *,
    by_owner: bool = False,
    claim: AnsweringClaim | None = None,
    answer: StepAnswer | None = None,
) -> PaymentIntent:
    """`claim`: the request's Idempotency-Key claim, run with the payment's lock (`_locked_claiming`);
    `answer`: the request's answer, written with the capture's last statement."""
    payment = await _locked_claiming(session, tenant, payment_id, claim, facts=_payment_facts)
    if payment.status != "requires_capture":
        raise Conflict(f"Capture applies to an authorized payment; this one is {payment.status}.")
    facts = phases.facts_read_with_claim(payment.id)
    ledger_columns: Mapping[str, Any] = {}
    if facts is None:
        facts, ledger_columns = await repository.facts_and_more_of(
            session, payment.id, _payment_facts, fees.capture_outlook(tenant, payment.currency)
        )
    if not by_owner:
        await _refuse_if_owned(session, tenant, payment, "capture", facts)
    if HELD_FOR_REVIEW in facts:
        raise Conflict("This payment is held for a risk review: approve the review before capturing.")
    amount = amount_to_capture if amount_to_capture is not None else payment.amount_capturable
    if amount > payment.amount_capturable:
        raise AmountInvalid(
            f"amount_to_capture ({amount}) is more than the authorized {payment.amount_capturable}.",
            param="amount_to_capture",
        )
    if payment.fee_reserve is not None and amount != payment.amount:
        raise FeeAmountImmutable(
            "This payment carries a fee reserve, so it is captured in full or cancelled.",
            param="amount_to_capture",
        )
    # none before the step's transaction began (a phased step's first run): its postings are not written
    outlook = fees.read_capture_outlook(ledger_columns) if ledger_columns else None
    await _capture(session, tenant, processor, payment, amount, facts, answer=answer, outlook=outlook)
    return payment


async def cancel_payment_intent(
    session: AsyncSession,
    tenant: Tenant,
    processor: Processor,
    payment_id: str,
    reason: str | None,
    *,
    by_owner: bool = False,
    claim: AnsweringClaim | None = None,
) -> PaymentIntent:
    """`claim`: the request's Idempotency-Key claim, run with the payment's lock (`_locked_claiming`)."""
    payment = await _locked_claiming(session, tenant, payment_id, claim)
    if payment.status not in CANCELABLE:
        raise Conflict(f"Cancel applies before capture; this payment is {payment.status}.")
    if not by_owner:
        await _refuse_if_owned(session, tenant, payment, "cancel", await _facts_of(session, payment))
    if payment.processor_authorization is not None:
        with _network_answers("cancellation"):
            await processor.cancel(
                tenant,
                idempotency_key=f"{payment.id}:cancel",
                authorization_id=payment.processor_authorization,
            )
    _move(payment, "canceled")
    payment.amount_capturable = 0
    payment.canceled_at = utcnow()
    payment.cancellation_reason = reason
    payment.next_action = None
    payment.authentication_token_hash = None
    await session.flush()
    await announce(session, tenant, payment, "payment_intent.canceled")
    return payment


async def increment_authorization(
    session: AsyncSession,
    tenant: Tenant,
    processor: Processor,
    payment_id: str,
    amount: int,
    *,
    claim: AnsweringClaim | None = None,
) -> PaymentIntent:
    """`claim`: as for `cancel_payment_intent`."""
    payment = await _locked_claiming(session, tenant, payment_id, claim)
    if payment.status != "requires_capture" or payment.capture_method != "manual":
        raise Conflict(
            f"Increment applies to an uncaptured manual authorization; this payment is {payment.status}."
        )
    await _refuse_if_owned(session, tenant, payment, "increment", await _facts_of(session, payment))
    if payment.fee_reserve is not None:
        raise FeeAmountImmutable(
            "This payment carries a fee reserve, so its amount is fixed: cancel it and create a new payment "
            "for the final amount.",
            param="amount",
        )
    if amount <= payment.amount:
        raise AmountInvalid(f"The new amount must be more than the current {payment.amount}.", param="amount")
    assert payment.processor_authorization is not None
    with _network_answers("increment"):
        authorization = await processor.increment_authorization(
            tenant,
            idempotency_key=f"{payment.id}:increment:{amount}",
            authorization_id=payment.processor_authorization,
            amount=amount,
        )
    if authorization.status != "authorized":
        code = authorization.decline_code or "generic_decline"
        raise CardDeclined(
            f"The bank declined the increment: {DECLINE_MESSAGES.get(code, code)} The authorization of "
            f"{payment.amount} still stands.",
            decline_code=code,
        )
    payment.amount = authorization.amount
    payment.amount_capturable = authorization.amount
    payment.updated_at = utcnow()
    await session.flush()
    await announce(session, tenant, payment, "payment_intent.amount_capturable_updated")
    return payment
