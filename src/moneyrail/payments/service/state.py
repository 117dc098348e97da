"""A payment's state machine (the package's docstring draws it), its events, and reading and locking
payments."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.db.raw import AnsweringClaim, WriteAt
from moneyrail.errors import Conflict, ResourceMissing
from moneyrail.events.service import record_event
from moneyrail.installations import service as installations
from moneyrail.kit.clock import utcnow
from moneyrail.kit.pagination import Position
from moneyrail.kit.tenant import Tenant
from moneyrail.models import PaymentIntent
from moneyrail.payments import distribution as distributions
from moneyrail.payments import phases, repository
from moneyrail.payments.schemas import PaymentIntentOut, render_payment_intent

TRANSITIONS: dict[str, frozenset[str]] = {
    "requires_payment_method": frozenset(
        {"requires_confirmation", "requires_action", "requires_capture", "succeeded", "canceled"}
    ),
    "requires_confirmation": frozenset(
        {"requires_payment_method", "requires_action", "requires_capture", "succeeded", "canceled"}
    ),
    "requires_action": frozenset({"requires_payment_method", "requires_capture", "succeeded", "canceled"}),
    "requires_capture": frozenset({"succeeded", "canceled"}),
    "processing": frozenset({"succeeded", "requires_payment_method", "canceled"}),
    "succeeded": frozenset(),
    "canceled": frozenset(),
}
CONFIRMABLE = frozenset({"requires_payment_method", "requires_confirmation"})
CANCELABLE = frozenset(s for s, targets in TRANSITIONS.items() if "canceled" in targets)


def _move(payment: PaymentIntent, status: str) -> None:
    if status not in TRANSITIONS[payment.status]:
        raise Conflict(f"A payment cannot go from {payment.status} to {status}.")
    payment.status = status
    payment.updated_at = utcnow()


# A step's answer written with its last statement (confirm, capture; api/idempotency.py
# `AnswerWithEffect.write`): given the payment as the caller sees it, the write of the request's stored
# answer for the event's statement, or None (no key sent).
StepAnswer = Callable[[PaymentIntentOut], WriteAt | None]


async def announce(
    session: AsyncSession,
    tenant: Tenant,
    payment: PaymentIntent,
    event_type: str,
    answer: StepAnswer | None = None,
    also: Sequence[WriteAt] = (),
) -> None:
    """The payment's event; its changes not flushed yet go in the event's statement (one round trip for
    both), and so does a step's stored answer when `answer` is given, and the writes `also` (a
    capture's postings)."""
    publishable_key = await installations.publishable_key(session, tenant)
    distribution = (await distributions.describe(session, [payment])).get(payment.id)
    # events are stored in the clear and sent to receivers: no bank authentication link
    shown = render_payment_intent(
        payment, publishable_key=publishable_key, with_authentication_link=False, distribution=distribution
    )
    writes: list[WriteAt] = []
    if answer is not None:
        # the caller sees the bank authentication link; without one, the same object
        answered = (
            shown
            if payment.next_action is None
            else render_payment_intent(payment, publishable_key=publishable_key, distribution=distribution)
        )
        stored = answer(answered)
        if stored is not None:
            writes.append(stored)
    writes.extend(also)
    phases.ending_claim(payment)  # a step in phases: its claim ends with this write (not in the answer)
    await record_event(
        session, tenant, event_type, shown.model_dump(mode="json"), changed=payment, also=writes
    )


# --- reading ------------------------------------------------------------------------------------
async def get_payment_intent(session: AsyncSession, tenant: Tenant, payment_id: str) -> PaymentIntent:
    payment = await repository.get_payment(session, tenant, payment_id)
    if payment is None:
        raise ResourceMissing(f"No such payment_intent: {payment_id!r}", param="payment_intent")
    return payment


async def _locked(session: AsyncSession, tenant: Tenant, payment_id: str) -> PaymentIntent:
    if phases.claims_with_its_lock(session, payment_id):
        payment = await phases.claim_for_call(session, tenant, payment_id, None)
    else:
        payment = await repository.get_payment(session, tenant, payment_id, for_update=True)
    if payment is None:
        raise ResourceMissing(f"No such payment_intent: {payment_id!r}", param="payment_intent")
    phases.check_claim(payment)
    return payment


async def _locked_claiming(
    session: AsyncSession,
    tenant: Tenant,
    payment_id: str,
    claim: AnsweringClaim | None,
    facts: Mapping[str, repository.PaymentCondition] | None = None,
) -> PaymentIntent:
    """`_locked` for a step that runs its Idempotency-Key's claim (the tenant's) in the same statement
    (`scoped(..., claim_in_statement=True)`): the claim settled first, so a replay or a key in flight
    answers before anything else, as when the gate claimed it. No claim: no key was sent. A phased
    step's first lock is its claim for the processor call instead (payments/phases.py), which also asks
    `facts` of the payment in its statement where given (`phases.facts_read_with_claim`)."""
    if phases.claims_with_its_lock(session, payment_id):
        payment = await phases.claim_for_call(session, tenant, payment_id, claim, facts)
    elif claim is None:
        payment = await repository.lock_payment_on_driver(session, tenant, payment_id)
    else:
        claim_row, payment = await repository.lock_payment_claiming(session, payment_id, claim)
        claim.settle(claim_row)
    if payment is None:
        raise ResourceMissing(f"No such payment_intent: {payment_id!r}", param="payment_intent")
    phases.check_claim(payment)
    return payment


async def list_payment_intents(
    session: AsyncSession, tenant: Tenant, *, limit: int, after: Position | None, customer: str | None
) -> Sequence[PaymentIntent]:
    return await repository.list_payments(session, tenant, limit=limit, after=after, customer=customer)


async def lock_payment_intent(session: AsyncSession, tenant: Tenant, payment_id: str) -> PaymentIntent:
    """For a hosted page that confirms on the payer's behalf: the payment, locked for this request."""
    return await _locked(session, tenant, payment_id)


async def lock_payment_intents(
    session: AsyncSession, tenant: Tenant, payment_ids: Sequence[str]
) -> dict[str, PaymentIntent]:
    """`lock_payment_intent` for several, in one statement (in id order), by id."""
    if not payment_ids:
        return {}
    found = await repository.lock_payments(session, tenant, payment_ids)
    missing = set(payment_ids) - set(found)
    if missing:
        raise ResourceMissing(f"No such payment_intent: {sorted(missing)[0]!r}", param="payment_intent")
    for payment in found.values():
        phases.check_claim(payment)
    return found
