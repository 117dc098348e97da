"""Payment intents, in Stripe's lifecycle (CONVENTIONS.md §6). State machines are data:

    requires_payment_method -> requires_confirmation   a saved card is set (create or update)
    requires_payment_method
    | requires_confirmation -> requires_action         the bank wants the payer to authenticate
                            -> requires_capture        authorized, manual capture
                            -> succeeded               authorized and captured at once (automatic)
                            -> requires_payment_method declined: try another card
    requires_action         -> requires_capture | succeeded | requires_payment_method
    requires_capture        -> succeeded               captured (all, or part without a fee reserve)
    any but succeeded       -> canceled

Confirming, capturing, cancelling and incrementing talk to the processor during the request, as a
payer at a checkout expects an answer at once. Each processor call carries a key derived from the
payment and its step, so a request retried after a crash repeats the call harmlessly. On an outside
processor the /v1 steps and the bank's authentication page run in atomic phases (phases.py): no
transaction, row lock or connection is held while a call is on the network, and a payment with a call
in flight refuses other steps (409) while reading as before. Refunds go through a worker (refunds.py).

The processor commits on its own: a confirmation whose transaction is lost after the network charged
the card (a database restart) leaves a charge no payment recorded. A retried confirmation with the same
card finds it again: the authorization key is the payment's committed attempt count and the card's
fingerprint (never the token, new at each tokenization), and the capture key names the authorization.
A charge nobody retries is released by the orphan sweep (orphans.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal, NamedTuple
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.config import API_VERSIONS
from moneyrail.customers import service as customers
from moneyrail.db.raw import AnsweringClaim, StatementClaim, WriteAt, from_row, transaction_open
from moneyrail.db.uow import UnitOfWork
from moneyrail.deliveries import service as deliveries
from moneyrail.engine.clock import tenant_now
from moneyrail.errors import (
    AmountInvalid,
    CardDeclined,
    ClientSecretInvalid,
    Conflict,
    FeeAmountImmutable,
    MoneyrailError,
    ParameterInvalid,
    ParameterMissing,
    ParametersExclusive,
    PaymentDeclined,
    ReferencedResourceMissing,
    ResourceMissing,
)
from moneyrail.events.repository import NewEvent
from moneyrail.events.service import planned_deliveries, record_event, record_events
from moneyrail.installations import service as installations
from moneyrail.kit import crypto
from moneyrail.kit.clock import utcnow
from moneyrail.kit.crypto import hash_secret
from moneyrail.kit.ids import new_id, random_base62
from moneyrail.kit.pagination import Position
from moneyrail.kit.tenant import Tenant
from moneyrail.ledger.service import AccountsOutlook
from moneyrail.merchants import service as merchants
from moneyrail.models import PaymentIntent, PaymentMethod
from moneyrail.payment_methods import service as methods
from moneyrail.payment_methods.schemas import card_input
from moneyrail.payments import distribution as distributions
from moneyrail.payments.distribution import DistributionPlan
from moneyrail.processor import provider
from moneyrail.processor.interface import (
    Authorization,
    AuthorizationRequest,
    CardInput,
    ChargeAnswer,
    OffSessionCharge,
    Processor,
    ProcessorRefused,
    ProcessorUnavailable,
    authorize_as_asked,
)

from . import fees, phases, repository
from .schemas import (
    DistributionIn,
    PaymentIntentConfirm,
    PaymentIntentCreate,
    PaymentIntentOut,
    PaymentIntentUpdate,
    render_payment_intent,
)

logger = structlog.get_logger("moneyrail.payments")

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
    payment = await repository.get_payment(session, tenant, payment_id, for_update=True)
    if payment is None:
        raise ResourceMissing(f"No such payment_intent: {payment_id!r}", param="payment_intent")
    phases.check_claim(payment)
    return payment


async def _locked_claiming(
    session: AsyncSession, tenant: Tenant, payment_id: str, claim: AnsweringClaim | None
) -> PaymentIntent:
    """`_locked` for a step that runs its Idempotency-Key's claim (the tenant's) in the same statement
    (`scoped(..., claim_in_statement=True)`): the claim settled first, so a replay or a key in flight
    answers before anything else, as when the gate claimed it. No claim: no key was sent."""
    if claim is None:
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


# --- creating -----------------------------------------------------------------------------------
# Called in the capture's transaction once the payment's money is in the ledger: the transfers domain
# creates and commits the allocation group of a payment declared with a distribution.
CaptureListener = Callable[[AsyncSession, Tenant, PaymentIntent], Awaitable[None]]
# The same for several payments captured together (`charge_off_session_many`), written set-based.
CapturesListener = Callable[[AsyncSession, Tenant, Sequence[PaymentIntent]], Awaitable[None]]
_capture_listeners: dict[CaptureListener, CapturesListener | None] = {}
_listener_conditions: dict[CaptureListener, str] = {}
_listener_payments: dict[CaptureListener, Callable[[PaymentIntent], bool]] = {}


def register_capture_listener(
    listener: CaptureListener,
    *,
    together: CapturesListener | None = None,
    when: str | None = None,
    for_payment: Callable[[PaymentIntent], bool] | None = None,
) -> None:
    """`together`, when given, replaces `listener` for payments captured together. `when`: a fact
    (`register_payment_fact`) without which the listener has nothing to do, so a single capture skips
    it; `for_payment`: the same, told by the payment's own columns. The listener still checks for
    itself (payments captured together call it regardless)."""
    _capture_listeners[listener] = together
    if when is not None:
        _listener_conditions[listener] = _registered_fact(when)
    if for_payment is not None:
        _listener_payments[listener] = for_payment


def _listeners_for(payment: PaymentIntent, facts: frozenset[str]) -> list[CaptureListener]:
    """The capture listeners with something to do for this payment (single capture)."""
    running = []
    for listener in _capture_listeners:
        condition, applies = _listener_conditions.get(listener), _listener_payments.get(listener)
        if (condition is None or condition in facts) and (applies is None or applies(payment)):
            running.append(listener)
    return running


# --- what other domains know of a payment -------------------------------------------------------------
# A capture asks other domains about its payment: whether an open risk review holds it, whether a
# commerce order, a payment invoice or a subscription invoice owns it (their refusals and capture
# listeners). Each domain registers its question as a named fact, a SQL condition on the payment's id
# built in its own repository; payments asks them all in one statement (repository.facts_of) and calls a
# domain's refusal or listener only when its fact holds. Asked after the payment is locked, in a
# statement of its own, so an owner bound by a transaction that held the lock is seen.
_payment_facts: dict[str, repository.PaymentCondition] = {}


def register_payment_fact(name: str, condition: repository.PaymentCondition) -> None:
    _payment_facts[name] = condition


def _registered_fact(name: str) -> str:
    # a listener or refusal waiting on a fact nobody asks would never run
    if name not in _payment_facts:
        raise ValueError(f"register the payment fact {name!r} before what depends on it")
    return name


async def _facts_of(session: AsyncSession, payment: PaymentIntent) -> frozenset[str]:
    return await repository.facts_of(session, payment.id, _payment_facts)


class FundsFlow(NamedTuple):
    merchant_id: str | None
    plan: DistributionPlan | None


async def resolve_funds_flow(
    session: AsyncSession,
    tenant: Tenant,
    merchant: str | None,
    distribution: DistributionIn | None,
    *,
    amount: int,
    commission: int,
) -> FundsFlow:
    """Marketplace recipients: the merchant the payment is for and the distribution's plan.

    `merchant`: an active merchant of this installation and environment that can take payments (else
    400 naming `merchant`). A distribution is checked whole (payments/distribution.py) and answers the
    allocations with the commission each merchant allocation carries.
    """
    merchant_id = (
        (await merchants.merchant_for_payment(session, tenant, merchant)).id if merchant is not None else None
    )
    if distribution is None:
        return FundsFlow(merchant_id, None)
    installation = await installations.require_installation(session, tenant.installation_id)
    plan = await distributions.plan_distribution(
        session,
        tenant,
        distribution,
        installation_kind=installation.kind,
        amount=amount,
        commission=commission,
    )
    return FundsFlow(merchant_id, plan)


async def _customer_for(session: AsyncSession, tenant: Tenant, customer_id: str | None) -> str | None:
    if customer_id is None:
        return None
    try:
        return (await customers.get_customer(session, tenant, customer_id)).id
    except ResourceMissing:
        raise ReferencedResourceMissing(f"No such customer: {customer_id!r}", param="customer") from None


@dataclass(frozen=True)
class CommissionPolicy:
    basis_points: int
    fixed_amount: int

    @property
    def is_set(self) -> bool:
        return self.basis_points != 0 or self.fixed_amount != 0

    def reserve(self, amount: int) -> int | None:
        return fees.commission_reserve(amount, self.basis_points, self.fixed_amount) if self.is_set else None


async def commission_policy(work: AsyncSession | UnitOfWork, tenant: Tenant) -> CommissionPolicy:
    terms = await installations.commission_terms(work, tenant)
    return CommissionPolicy(terms.basis_points, terms.fixed_amount)


def check_amount_covers(amount: int, reserve: int | None, param: str) -> None:
    if reserve is not None and amount <= reserve:
        raise AmountInvalid(
            f"The amount ({amount}) must be more than the commission it carries ({reserve}).", param=param
        )


@dataclass(frozen=True)
class CreatedPayment:
    payment: PaymentIntent
    client_secret: str
    # the route's answer (`create_payment_intent_answered`'s `answer`) rendered once with `created` still
    # to come, where the one statement wrote the payment; None on the transactional path
    answer_awaiting_created: bytes | None = None


async def create_payment_intent(
    session: AsyncSession, tenant: Tenant, command: PaymentIntentCreate
) -> CreatedPayment:
    await provider.require_processor(session, tenant)  # a live payment that no processor could take: 403
    policy = await commission_policy(session, tenant)
    reserve = policy.reserve(command.amount)
    merchant_id, plan = await resolve_funds_flow(
        session,
        tenant,
        command.merchant,
        command.distribution,
        amount=command.amount,
        commission=reserve or 0,
    )
    customer_id = await _customer_for(session, tenant, command.customer)
    method: PaymentMethod | None = None
    if command.payment_method is not None:
        method = await methods.usable_method(
            session,
            tenant,
            command.payment_method,
            customer_id=customer_id,
            account=await methods.payment_account(session, tenant, merchant_id),
        )
    check_amount_covers(command.amount, reserve, "amount")

    payment_id = new_id("pi")
    client_secret = f"{payment_id}_secret_{random_base62(24)}"
    now = utcnow()
    payment = PaymentIntent(
        id=payment_id,
        installation_id=tenant.installation_id,
        livemode=tenant.livemode,
        amount=command.amount,
        currency=command.currency,
        status="requires_confirmation" if method is not None else "requires_payment_method",
        capture_method=command.capture_method,
        amount_capturable=0,
        amount_received=0,
        amount_refunded=0,
        customer_id=customer_id,
        payment_method_id=method.id if method is not None else None,
        merchant_id=merchant_id,
        has_distribution=plan is not None,
        external_reference=command.external_reference,
        description=command.description,
        metadata_=command.metadata,
        receipt_email=command.receipt_email,
        receipt_phone=command.receipt_phone,
        client_secret_hash=hash_secret(client_secret),
        commission_basis_points=policy.basis_points,
        commission_fixed_amount=policy.fixed_amount,
        fee_reserve=reserve,
        fee_status="pending",
        fee_prior_recovery=0,
        amount_pending_settlement=0,
        confirmations=0,
        save_payment_method=False,
        created_at=now,
        updated_at=now,
    )
    session.add(payment)
    await session.flush()
    if plan is not None:
        await distributions.record_distribution(session, tenant, payment.id, plan)
    await announce(session, tenant, payment, "payment_intent.created")
    logger.info(
        "payment_intent_created", payment_intent=payment.id, amount=payment.amount, currency=payment.currency
    )
    return CreatedPayment(payment, client_secret)


# Operation ids the one-statement create makes for the deliveries of its event: an environment with more
# endpoints listening for `payment_intent.created` takes the transactional path (most have one or two).
DELIVERIES_IN_ONE_STATEMENT = 4


def _is_plain(command: PaymentIntentCreate) -> bool:
    """Nothing to resolve or write beyond the payment's own row and its event: no customer to check, no
    saved card, no merchant, no distribution (its rows reference the payment's)."""
    return (
        command.customer is None
        and command.payment_method is None
        and command.merchant is None
        and command.distribution is None
    )


# Every column of a payment the create leaves unset, as the row read back holds them: a payment made
# without a flush renders from these (no attribute of it is ever loaded, so none can lazy-load).
_UNSET_AT_CREATION: dict[str, Any] = {}


def _unset_at_creation() -> dict[str, Any]:
    if not _UNSET_AT_CREATION:
        attributes = PaymentIntent.__mapper__.column_attrs
        _UNSET_AT_CREATION.update(
            {
                attribute.key: None
                for attribute in attributes
                if attribute.key not in repository.NEW_PAYMENT_ATTRIBUTES
            }
        )
    return _UNSET_AT_CREATION


async def create_payment_intent_answered(
    uow: UnitOfWork,
    tenant: Tenant,
    command: PaymentIntentCreate,
    claim: StatementClaim | None,
    answer: Callable[[PaymentIntentOut], bytes],
) -> CreatedPayment:
    """`create_payment_intent` for the create route: a plain payment (`_is_plain`) in one statement that
    commits by itself, with its event, a delivery to each endpoint listening for it and, given a claim,
    the Idempotency-Key's claim and stored answer.

    `claim`: the request's key, not claimed yet (`scoped(..., claim_in_statement=True)`); its replay or
    refusal is raised. `answer`: the route's answer bytes, given the payment rendered once with its
    client secret, with its `created` still to come (api/idempotency.py, `awaiting_created`); kept as
    `answer_awaiting_created` where the one statement wrote the payment. Anything else, and whatever the one
    statement could not settle alone (it then kept nothing), takes the transactional path, which claims
    the key first as the gate would: a refusal there (an amount below its commission, an unknown
    customer) is stored under the key as before.
    """
    await provider.require_processor(uow, tenant)  # before anything, the key's claim included
    created = await _create_in_one_statement(uow, tenant, command, claim, answer)
    if created is not None:
        return created
    session = uow.session
    if claim is not None:
        await repository.claim_in_transaction(session, claim)
    return await create_payment_intent(session, tenant, command)


async def _create_in_one_statement(
    uow: UnitOfWork,
    tenant: Tenant,
    command: PaymentIntentCreate,
    claim: StatementClaim | None,
    answer: Callable[[PaymentIntentOut], bytes],
) -> CreatedPayment | None:
    if not _is_plain(command) or transaction_open(uow):
        return None
    # remembered lookups: on a miss a lone statement, no session
    policy = await commission_policy(uow, tenant)
    publishable_key = await installations.publishable_key(uow, tenant)
    reserve = policy.reserve(command.amount)
    if reserve is not None and command.amount <= reserve:
        return None  # a refusal to store under the key: the transactional path

    payment_id = new_id("pi")
    client_secret = f"{payment_id}_secret_{random_base62(24)}"
    now = utcnow()
    # what create_payment_intent writes for a plain command
    row: dict[str, Any] = {
        "id": payment_id,
        "installation_id": tenant.installation_id,
        "livemode": tenant.livemode,
        "amount": command.amount,
        "currency": command.currency,
        "status": "requires_payment_method",
        "capture_method": command.capture_method,
        "amount_capturable": 0,
        "amount_received": 0,
        "amount_refunded": 0,
        "customer_id": None,
        "payment_method_id": None,
        "merchant_id": None,
        "has_distribution": False,
        "external_reference": command.external_reference,
        "description": command.description,
        "metadata_": command.metadata,
        "receipt_email": command.receipt_email,
        "receipt_phone": command.receipt_phone,
        "client_secret_hash": hash_secret(client_secret),
        "commission_basis_points": policy.basis_points,
        "commission_fixed_amount": policy.fixed_amount,
        "fee_reserve": reserve,
        "fee_status": "pending",
        "fee_prior_recovery": 0,
        "amount_pending_settlement": 0,
        "confirmations": 0,
        "save_payment_method": False,
        "created_at": now,  # a sandbox payment's is stamped by the database (its tenant's clock)
        "updated_at": now,
    }
    payment = from_row(PaymentIntent, {**_unset_at_creation(), **row})  # for rendering: never flushed
    # rendered once: the answer, and the object `announce` records (no client secret; a new payment has
    # no authentication link to leave out); the statement sets the event object's `created`
    shown = render_payment_intent(payment, publishable_key=publishable_key, client_secret=client_secret)
    template = answer(shown)
    announced = shown.model_dump(mode="json")
    announced["client_secret"] = None
    event = NewEvent(
        new_id("evt"), "payment_intent.created", API_VERSIONS["payments"][0], {"object": announced}, utcnow()
    )
    at_once = await repository.insert_created(
        uow,
        tenant,
        row,
        event,
        planned_deliveries(DELIVERIES_IN_ONE_STATEMENT),
        claim,
        template if claim is not None else None,
    )
    if at_once.created_at is None:
        return None
    payment.created_at = at_once.created_at
    logger.info(
        "payment_intent_created", payment_intent=payment.id, amount=payment.amount, currency=payment.currency
    )
    return CreatedPayment(payment, client_secret, answer_awaiting_created=template)


@dataclass(frozen=True)
class PlainPayment:
    """A payment of the tenant's own (no merchant, no distribution, no card yet) for one of its customers,
    whose existence the caller has checked: what `create_payment_intents` writes set-based."""

    amount: int
    currency: str
    customer_id: str
    description: str
    metadata: dict[str, Any]


async def create_payment_intents(
    session: AsyncSession, tenant: Tenant, commands: Sequence[PlainPayment]
) -> list[PaymentIntent]:
    """`create_payment_intent` for many plain payments of one tenant at once (a clock advance opening
    its renewals): the rows in one INSERT, their `payment_intent.created` events in one statement. Each
    payment is exactly what the single path writes for the same command; the caller sends a payment
    whose amount does not cover its commission (AmountInvalid there) the single way."""
    if not commands:
        return []
    policy = await commission_policy(session, tenant)
    now = utcnow()
    created: list[PaymentIntent] = []
    for command in commands:
        reserve = policy.reserve(command.amount)
        check_amount_covers(command.amount, reserve, "amount")
        payment_id = new_id("pi")
        created.append(
            PaymentIntent(
                id=payment_id,
                installation_id=tenant.installation_id,
                livemode=tenant.livemode,
                amount=command.amount,
                currency=command.currency,
                status="requires_payment_method",
                capture_method="automatic",
                amount_capturable=0,
                amount_received=0,
                amount_refunded=0,
                customer_id=command.customer_id,
                payment_method_id=None,
                merchant_id=None,
                has_distribution=False,
                external_reference=None,
                description=command.description,
                metadata_=command.metadata,
                receipt_email=None,
                receipt_phone=None,
                # nobody confirms these with a client secret: it exists (hashed) as for every payment
                client_secret_hash=hash_secret(f"{payment_id}_secret_{random_base62(24)}"),
                commission_basis_points=policy.basis_points,
                commission_fixed_amount=policy.fixed_amount,
                fee_reserve=reserve,
                fee_status="pending",
                fee_prior_recovery=0,
                amount_pending_settlement=0,
                confirmations=0,
                save_payment_method=False,
                created_at=now,
                updated_at=now,
            )
        )
    session.add_all(created)
    await session.flush()  # one INSERT (insertmanyvalues), the sandbox clock's created_at read back
    key = await installations.publishable_key(session, tenant)
    await record_events(
        session,
        tenant,
        [
            (
                "payment_intent.created",
                render_payment_intent(
                    payment, publishable_key=key, with_authentication_link=False
                ).model_dump(mode="json"),
            )
            for payment in created
        ],
    )
    logger.info("payment_intents_created", count=len(created))
    return created


# --- updating -----------------------------------------------------------------------------------
async def update_payment_intent(
    session: AsyncSession, tenant: Tenant, payment_id: str, command: PaymentIntentUpdate
) -> PaymentIntent:
    payment = await _locked(session, tenant, payment_id)
    if payment.status in {"succeeded", "canceled"}:
        raise Conflict(f"This payment is {payment.status}: it can no longer be updated.")
    changes_terms = command.amount is not None or command.payment_method is not None
    if changes_terms and payment.status not in CONFIRMABLE:
        raise Conflict(
            f"The amount and payment method can change only before confirmation; this payment is "
            f"{payment.status}. Cancel it and create a new one, or increment an authorization."
        )
    if command.amount is not None and command.amount != payment.amount:
        await _refuse_if_owned(session, tenant, payment, "update", await _facts_of(session, payment))
        if payment.fee_reserve is not None:
            raise FeeAmountImmutable(
                "This payment carries a fee reserve, so its amount is fixed: cancel it and create a new "
                "payment for the new amount.",
                param="amount",
            )
        payment.amount = command.amount
    if command.payment_method is not None:
        method = await methods.usable_method(
            session,
            tenant,
            command.payment_method,
            customer_id=payment.customer_id,
            account=await methods.payment_account(session, tenant, payment.merchant_id),
        )
        payment.payment_method_id = method.id
        if payment.status == "requires_payment_method":
            _move(payment, "requires_confirmation")
    if command.description is not None:
        payment.description = command.description
    if command.receipt_email is not None:
        payment.receipt_email = command.receipt_email
    if command.metadata is not None:
        merged = {**payment.metadata_, **command.metadata}
        payment.metadata_ = {key: value for key, value in merged.items() if value != ""}
    payment.updated_at = utcnow()
    await session.flush()
    return payment


# --- risk (risk/) -------------------------------------------------------------------------------------
# Screens run before the network is asked: "block" declines the payment (decline_code fraudulent, nothing
# charged), "review" lets it be authorized but holds its capture until a review approves it.
@dataclass(frozen=True)
class RiskVerdict:
    """A screen's verdict (`allow`, `review`, `block`), given before the card is known to be saved and
    writing nothing, and what follows from it once it is (`then`: a review opened, a block logged)."""

    verdict: Literal["allow", "review", "block"]
    then: Callable[[], Awaitable[None]] | None = None


RiskScreen = Callable[
    [AsyncSession, Tenant, Processor, PaymentIntent, PaymentMethod, "Confirmation"], Awaitable[RiskVerdict]
]
# A payment under an open review: the fact HELD_FOR_REVIEW (`register_payment_fact`), and for several
# payments in one statement the ids of those held.
HELD_FOR_REVIEW = "held_for_review"
ReviewHolds = Callable[[AsyncSession, Sequence[str]], Awaitable[set[str]]]
_risk_screens: list[RiskScreen] = []
_review_holds: list[ReviewHolds] = []


def register_risk_screen(screen: RiskScreen, *, held_among: ReviewHolds) -> None:
    if screen not in _risk_screens:
        _risk_screens.append(screen)
        _review_holds.append(held_among)


async def _risk_verdicts(
    session: AsyncSession,
    tenant: Tenant,
    processor: Processor,
    payment: PaymentIntent,
    method: PaymentMethod,
    confirmation: Confirmation,
) -> list[RiskVerdict]:
    return [
        await screen(session, tenant, processor, payment, method, confirmation) for screen in _risk_screens
    ]


async def _follow(verdicts: Sequence[RiskVerdict]) -> None:
    """Write the screens' effects (a review opened, a block logged), in the screens' order."""
    for verdict in verdicts:
        if verdict.then is not None:
            await verdict.then()


async def held_among(session: AsyncSession, payment_ids: Sequence[str]) -> set[str]:
    held: set[str] = set()
    for holds in _review_holds:
        held |= await holds(session, payment_ids)
    return held


# --- confirming ---------------------------------------------------------------------------------
def _check_client_secret(payment: PaymentIntent, client_secret: str) -> None:
    if hash_secret(client_secret) != payment.client_secret_hash:
        raise ClientSecretInvalid("The client_secret does not belong to this payment.", param="client_secret")


@dataclass(frozen=True)
class Confirmation:
    """What the payer chose: a new card, or a saved one of the payment's customer."""

    card: CardInput | None = None
    payment_method: str | None = None
    save_payment_method: bool = False
    return_url: str | None = None
    ip_address: str | None = None  # where the payer confirmed from, for the risk lists


async def _saved_method_for_confirmation(
    session: AsyncSession,
    tenant: Tenant,
    payment: PaymentIntent,
    confirmation: Confirmation,
    account: str | None,
) -> PaymentMethod:
    """The saved card the payer chose, or the one the payment was given."""
    if confirmation.payment_method is not None:
        return await methods.usable_method(
            session, tenant, confirmation.payment_method, customer_id=payment.customer_id, account=account
        )
    if payment.payment_method_id is not None:
        method = await methods.get_method(session, tenant, payment.payment_method_id)
        if method is not None and method.detached_at is None:
            return method
    raise ParameterMissing("Confirming needs a card or a saved payment_method.", param="payment_method")


async def confirm_payment_intent(
    session: AsyncSession,
    tenant: Tenant,
    processor: Processor,
    payment_id: str,
    command: PaymentIntentConfirm,
    *,
    base_url: str,
    ip_address: str | None = None,
    claim: AnsweringClaim | None = None,
    answer: StepAnswer | None = None,
) -> PaymentIntent:
    """The client-side confirmation: the payment's client_secret authorizes it. `claim`: the request's
    Idempotency-Key claim, run with the payment's lock (`_locked_claiming`); `answer`: the request's
    answer, written with the confirmation's last statement unless it is a decline."""
    payment = await _locked_claiming(session, tenant, payment_id, claim)
    _check_client_secret(payment, command.client_secret)
    confirmation = Confirmation(
        card=card_input(command.card, command.card_token),
        payment_method=command.payment_method,
        save_payment_method=command.save_payment_method,
        return_url=command.return_url,
        ip_address=ip_address,
    )
    return await confirm_locked_payment(
        session, tenant, processor, payment, confirmation, base_url=base_url, answer=answer
    )


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


async def confirm_locked_payment(
    session: AsyncSession,
    tenant: Tenant,
    processor: Processor,
    payment: PaymentIntent,
    confirmation: Confirmation,
    *,
    base_url: str,
    answer: StepAnswer | None = None,
) -> PaymentIntent:
    """Authorize with the card (and capture, for automatic capture). A decline is recorded on the
    payment and raised as PaymentDeclined (402, its effect kept); the payer may try another card.

    The caller has locked the payment and established who may confirm it (a client_secret, or a
    hosted checkout's own credential).
    """
    if payment.status not in CONFIRMABLE:
        raise Conflict(
            f"This payment is {payment.status}: only a payment that requires a payment method or "
            "confirmation can be confirmed."
        )
    if confirmation.save_payment_method and payment.customer_id is None:
        raise ParameterInvalid(
            "save_payment_method needs a payment created with a customer.", param="save_payment_method"
        )
    if confirmation.card is not None and confirmation.payment_method is not None:
        raise ParametersExclusive("Send either card or payment_method, not both.", param="card")
    # cards are saved on, and found on, the payment account the payment runs on (spec 4.N rule 7)
    account = await methods.payment_account(session, tenant, payment.merchant_id)
    verdicts: list[RiskVerdict] = []

    async def screened(method: PaymentMethod) -> AuthorizationRequest | None:
        """The authorization to ask for the card, unless a risk screen blocks it (before anything is
        authorized; the screens' effects are written once the card is known to be saved)."""
        verdicts[:] = await _risk_verdicts(session, tenant, processor, payment, method, confirmation)
        if any(verdict.verdict == "block" for verdict in verdicts):
            return None
        return AuthorizationRequest(
            idempotency_key=authorization_key(payment, method, attempt=payment.confirmations + 1),
            amount=payment.amount,
            currency=payment.currency,
            off_session=False,
            reference=payment.id,
            # a card typed now and kept for later charges: this is the charge made while saving it
            saves_card=confirmation.card is not None and confirmation.save_payment_method,
        )

    unsaved: methods.UnsavedCard | None = None
    # the network's answer, asked or already given; None: a risk screen blocked the card, nothing authorized
    authorize: Callable[[], Coroutine[Any, Any, Authorization]] | None
    if confirmation.card is not None:
        # a one-off method; with the payer's consent it is attached to the customer once the payment works.
        # Tokenized and authorized in one exchange; its row is written later (`UnsavedCard`).
        try:
            unsaved, answered = await methods.tokenize_and_authorize(
                tenant, processor, confirmation.card, account=account, choose=screened
            )
        except CardDeclined as declined:
            await _decline(session, tenant, payment, declined.decline_code, declined.message, None)
            raise _declined_error(payment) from None
        method = unsaved.method
        authorize = None if answered is None else partial(_answered, answered)
    else:
        method = await _saved_method_for_confirmation(session, tenant, payment, confirmation, account)
        asked = await screened(method)
        authorize = (
            None
            if asked is None
            else partial(
                authorize_as_asked,
                processor,
                tenant,
                card_token=method.processor_token,
                card_fingerprint=method.fingerprint,
                asked=asked,
            )
        )
    await _follow(verdicts)
    if authorize is None:  # blocked: declined as fraudulent, the new card kept as the decline's method
        if unsaved is not None:
            await unsaved.save(session)
        await _decline(session, tenant, payment, "fraudulent", None, method.id)
        raise _declined_error(payment)
    payment.payment_method_id = method.id
    payment.confirmations += 1
    payment.save_payment_method = confirmation.save_payment_method
    payment.return_url = confirmation.return_url
    authorization = await _authorization_or_decline(payment, authorize())
    await _apply_authorization(
        session,
        tenant,
        processor,
        payment,
        authorization,
        method,
        base_url=base_url,
        answer=answer,
        unsaved=unsaved,
    )
    if payment.status == "requires_payment_method":
        raise _declined_error(payment)
    return payment


def authorization_key(payment: PaymentIntent, method: PaymentMethod, *, attempt: int | None = None) -> str:
    """The same for a retry of a lost confirmation (its attempt count was never committed) with the same
    card and amount; another card or amount is another question to the network, under another key.
    `attempt`: the payment's attempt count once this one is counted (by default, as it stands)."""
    count = payment.confirmations if attempt is None else attempt
    return f"{payment.id}:authorize:{count}:{method.fingerprint}:{payment.amount}"


async def _answered(outcome: Authorization | ProcessorRefused | ProcessorUnavailable) -> Authorization:
    """An authorization the processor answered already, as a call to `authorize` would end."""
    if isinstance(outcome, Exception):
        raise outcome
    return outcome


OffSessionCharging = tuple[PaymentIntent, PaymentMethod, str]  # the locked payment, the card, the key


async def off_session_charges(
    session: AsyncSession, charges: Sequence[OffSessionCharging]
) -> list[OffSessionCharge]:
    """What to ask the network for these charges of saved, consented cards with no payer present
    (renewals), each under the key its caller derives from what it collects (so a retried or re-driven
    attempt asks the same question and gets the same answer: one charge at most). The caller has locked
    the payments; nothing is written (`record_off_session_charges` does, with the answers)."""
    for payment, _, _ in charges:
        if payment.status not in CONFIRMABLE:
            raise Conflict(f"This payment is {payment.status}: it cannot be charged now.")
    held = await held_among(session, [payment.id for payment, _, _ in charges])
    return [
        OffSessionCharge(
            idempotency_key=key,
            card_token=method.processor_token,
            card_fingerprint=method.fingerprint,
            amount=payment.amount,
            currency=payment.currency,
            reference=payment.id,
            capture_key=_capture_key_of(payment)
            if payment.capture_method == "automatic" and payment.id not in held
            else None,
        )
        for payment, method, key in charges
    ]


async def ask_off_session(
    processor: Processor, tenant: Tenant, asked: Sequence[OffSessionCharge]
) -> list[ChargeAnswer]:
    """The network asked once for all of them (with no transaction open): `authorize` then `capture`
    of each, as alone. An outage raises, as alone; asking again replays what the network answered."""
    try:
        return await processor.charge_off_session_many(tenant, asked)
    except ProcessorUnavailable as fault:
        raise _unavailable(fault) from fault


async def record_off_session_charges(
    session: AsyncSession,
    tenant: Tenant,
    processor: Processor,
    charges: Sequence[OffSessionCharging],
    answers: Sequence[ChargeAnswer],
) -> None:
    """The network's answers to `off_session_charges` on the payments, locked again by the caller: the
    captured ones written together: their rows, ledger postings, capture listeners (set-based where
    they register a `together` version) and `payment_intent.succeeded` events. A charge that did not end
    captured (declined, authentication asked for, held for review) is applied as a confirmation's
    authorization is: a decline is recorded on the payment (status `requires_payment_method`,
    `last_payment_error`), not raised."""
    if not charges:
        return
    for payment, method, _ in charges:
        if payment.status not in CONFIRMABLE:
            raise Conflict(f"This payment is {payment.status}: it cannot be charged now.")
        payment.payment_method_id = method.id
        payment.confirmations += 1
        payment.save_payment_method = False
        payment.return_url = None
    captured: list[PaymentIntent] = []
    now = await tenant_now(session, tenant)
    for (payment, method, _), answer in zip(charges, answers, strict=True):
        authorization = answer.authorization
        if isinstance(authorization, ProcessorRefused):
            logger.warning(
                "payment_authorization_refused", payment_intent=payment.id, error=str(authorization)
            )
            authorization = Authorization(
                "", "declined", payment.amount, payment.currency, "processing_error"
            )
        if answer.capture is None:  # not authorized, or authorized and not to be captured now
            await _apply_authorization(
                session, tenant, processor, payment, authorization, method, base_url=""
            )
            continue
        if isinstance(answer.capture, ProcessorRefused):
            raise CardDeclined(
                f"The capture was refused: {answer.capture.message}", decline_code=answer.capture.code
            )
        payment.processor_authorization = authorization.id
        payment.next_action = None
        payment.authentication_token_hash = None
        payment.last_payment_error = None
        payment.amount_received = answer.capture.amount_captured
        payment.amount_capturable = 0
        payment.captured_at = now
        _move(payment, "succeeded")
        captured.append(payment)
    if captured:
        await _captured_together(session, tenant, captured)


def _capture_key_of(payment: PaymentIntent) -> Callable[[str], str]:
    # as `_capture`: per authorization
    return lambda authorization_id: f"{payment.id}:capture:{authorization_id}"


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


async def _authorization_or_decline(
    payment: PaymentIntent, answer: Coroutine[Any, Any, Authorization]
) -> Authorization:
    """An authorization step's answer; the network refusing the call itself is a decline the payer
    can act on (another card), not an error of the API."""
    try:
        return await answer
    except ProcessorUnavailable as fault:
        raise _unavailable(fault) from fault
    except ProcessorRefused as refused:
        logger.warning("payment_authorization_refused", payment_intent=payment.id, error=str(refused))
        return Authorization("", "declined", payment.amount, payment.currency, "processing_error")


@contextmanager
def _network_answers(step: str) -> Iterator[None]:
    """The processor's faults as the API's errors: an outage decided nothing (503, the same request may
    be retried); a refusal of this step is a card error, and the payment stays as it was."""
    try:
        yield
    except ProcessorUnavailable as fault:
        raise _unavailable(fault) from fault
    except ProcessorRefused as refused:
        raise CardDeclined(f"The {step} was refused: {refused.message}", decline_code=refused.code) from None


def _unavailable(fault: ProcessorUnavailable) -> MoneyrailError:
    """503 processor_unavailable (with Retry-After); 403 for an environment with no processor."""
    return provider.api_error(fault)


def _declined_error(payment: PaymentIntent) -> PaymentDeclined:
    error = payment.last_payment_error or {}
    declined = PaymentDeclined(
        str(error.get("message", "The card was declined.")),
        decline_code=str(error.get("decline_code") or "generic_decline"),
    )
    declined.extra["payment_intent"] = payment.id
    return declined


DECLINE_MESSAGES = {
    "generic_decline": "The card was declined.",
    "insufficient_funds": "The card has insufficient funds.",
    "authentication_failed": "The bank could not authenticate the payer.",
    "authentication_required": "The bank requires the payer to authenticate this payment.",
    "processing_error": "The card could not be processed. Try again or use another card.",
    "fraudulent": "The payment was blocked as likely fraudulent.",
}


async def _decline(
    session: AsyncSession,
    tenant: Tenant,
    payment: PaymentIntent,
    decline_code: str,
    message: str | None,
    method_id: str | None,
) -> None:
    if payment.status != "requires_payment_method":
        _move(payment, "requires_payment_method")
    payment.last_payment_error = {
        "type": "card_error",
        "code": "card_declined",
        "decline_code": decline_code,
        "message": message or DECLINE_MESSAGES.get(decline_code, "The card was declined."),
        "payment_method": method_id,
    }
    payment.next_action = None
    payment.authentication_token_hash = None
    payment.processor_authorization = None
    await session.flush()
    await announce(session, tenant, payment, "payment_intent.payment_failed")
    logger.info("payment_declined", payment_intent=payment.id, decline_code=decline_code)


async def _apply_authorization(
    session: AsyncSession,
    tenant: Tenant,
    processor: Processor,
    payment: PaymentIntent,
    authorization: Authorization,
    method: PaymentMethod,
    *,
    base_url: str,
    answer: StepAnswer | None = None,
    unsaved: methods.UnsavedCard | None = None,
) -> None:
    """`answer`: the request's, written with the last statement where the payment is not declined.
    `unsaved`: the new card's row, not written yet: the last statement carries it where the payment is
    authorized for a manual capture and the card not kept; elsewhere it is written first, as the
    payment's row refers to it before that (a flush) or other rows do (the customer's cards)."""
    rides = (
        authorization.status == "authorized"
        and payment.capture_method != "automatic"
        and not (payment.save_payment_method and payment.customer_id is not None)
    )
    if unsaved is not None and not rides:
        await unsaved.save(session)
    if authorization.status == "requires_action":
        token = random_base62(32)
        payment.processor_authorization = authorization.id
        payment.authentication_token_hash = hash_secret(token)
        payment.next_action = {
            "type": "redirect_to_url",
            # the link is a credential: sealed at rest, opened when shown (schemas.authentication_url)
            "redirect_to_url": {
                "url": crypto.seal_text(f"{base_url}/authenticate/{token}"),
                "return_url": payment.return_url,
            },
        }
        payment.last_payment_error = None
        _move(payment, "requires_action")
        await session.flush()
        await announce(session, tenant, payment, "payment_intent.requires_action", answer)
        return
    if authorization.status != "authorized":
        await _decline(
            session, tenant, payment, authorization.decline_code or "generic_decline", None, method.id
        )
        return
    payment.processor_authorization = authorization.id
    payment.amount_capturable = authorization.amount
    payment.next_action = None
    payment.authentication_token_hash = None
    payment.last_payment_error = None
    if payment.save_payment_method and payment.customer_id is not None:
        await methods.attach_to_customer(session, tenant, method, payment.customer_id)
    if payment.capture_method == "automatic":
        facts = await _facts_of(session, payment)
        if HELD_FOR_REVIEW not in facts:
            await _capture(session, tenant, processor, payment, payment.amount, facts, answer=answer)
            return
    _move(payment, "requires_capture")
    await announce(  # writes it, and the new card's row
        session,
        tenant,
        payment,
        "payment_intent.amount_capturable_updated",
        answer,
        also=[unsaved.insert()] if unsaved is not None and not unsaved.written else (),
    )


# --- bank authentication (the sandbox bank's page) -------------------------------------------------
@dataclass(frozen=True)
class AuthenticationView:
    payment: PaymentIntent
    seller: str


async def authentication_view(session: AsyncSession, token: str) -> AuthenticationView:
    payment = await repository.get_payment_by_authentication_token(session, hash_secret(token))
    if payment is None or payment.status != "requires_action":
        raise ResourceMissing("This authentication link is no longer valid.")
    installation = await installations.require_installation(session, payment.installation_id)
    return AuthenticationView(payment, installation.name)


@dataclass(frozen=True)
class AuthenticationOutcome:
    payment: PaymentIntent
    succeeded: bool
    redirect_url: str | None


async def complete_authentication(
    session: AsyncSession, processor: Processor, token: str, *, approved: bool, base_url: str
) -> AuthenticationOutcome:
    view = await authentication_view(session, token)
    tenant = Tenant(view.payment.installation_id, view.payment.livemode)
    # locked as committed (the view read it before): a second completion waits, then sees it done
    payment = await repository.lock_payment_as_committed(session, tenant, view.payment.id)
    if payment is None or payment.status != "requires_action":
        raise ResourceMissing("This authentication link is no longer valid.")
    phases.check_claim(payment)
    await _finish_authentication(session, tenant, processor, payment, approved=approved, base_url=base_url)
    succeeded = payment.status in {"succeeded", "requires_capture"}
    redirect = None
    if payment.return_url:
        redirect = _with_query(
            payment.return_url,
            {"payment_intent": payment.id, "redirect_status": "succeeded" if succeeded else "failed"},
        )
    return AuthenticationOutcome(payment, succeeded, redirect)


async def _finish_authentication(
    session: AsyncSession,
    tenant: Tenant,
    processor: Processor,
    payment: PaymentIntent,
    *,
    approved: bool,
    base_url: str,
) -> None:
    """The network's word on a payment that required action (the payer approved at the bank, or did
    not), recorded on the payment: authorized (then captured where automatic), or declined."""
    assert payment.processor_authorization is not None  # requires_action always has one
    authorization = await _authorization_or_decline(
        payment,
        processor.complete_authentication(
            tenant,
            idempotency_key=f"{payment.id}:authenticate:{payment.confirmations}",
            authorization_id=payment.processor_authorization,
            approved=approved,
        ),
    )
    method = await methods.get_method(session, tenant, payment.payment_method_id or "")
    assert method is not None
    await _apply_authorization(session, tenant, processor, payment, authorization, method, base_url=base_url)


async def abandon_authentication(
    session: AsyncSession, tenant: Tenant, processor: Processor, payment: PaymentIntent, *, base_url: str
) -> None:
    """The payer cannot authenticate where they are (the hosted checkout on Stripe, which does not run
    Stripe.js's own authentication): the processor lets the authorization go, and the payment is declined
    (authentication_failed) and may be paid with another card. `payment` is locked, in requires_action."""
    if payment.status != "requires_action":
        raise Conflict(f"This payment is {payment.status}; only one that requires action is abandoned.")
    await _finish_authentication(session, tenant, processor, payment, approved=False, base_url=base_url)


def _with_query(url: str, extra: dict[str, str]) -> str:
    parts = urlsplit(url)
    query = urlencode([*parse_qsl(parts.query, keep_blank_values=True), *extra.items()])
    return urlunsplit(parts._replace(query=query))


# --- capturing, cancelling, incrementing ---------------------------------------------------------------
# A domain that owns a payment's lifecycle (a commerce order, spec 4.B rule 3) answers with why a caller
# may not capture, cancel, increment or re-price it through /v1 directly (None: it does not own it). The
# owner's own steps pass `by_owner=True`. Actions asked about: capture, cancel, increment, update (an
# update that changes the amount; other fields leave the payment in step with its owner).
# The refusal is asked only when the owner's fact (`register_payment_fact`) holds for the payment.
OwnerRefusal = Callable[[AsyncSession, Tenant, PaymentIntent, str], Awaitable[str | None]]
_owner_refusals: dict[OwnerRefusal, str] = {}


def register_owner_refusal(refusal: OwnerRefusal, *, when: str) -> None:
    _owner_refusals[refusal] = _registered_fact(when)


async def _refuse_if_owned(
    session: AsyncSession, tenant: Tenant, payment: PaymentIntent, action: str, facts: frozenset[str]
) -> None:
    for refusal, fact in _owner_refusals.items():
        message = await refusal(session, tenant, payment, action) if fact in facts else None
        if message is not None:
            raise Conflict(message)


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
            # per authorization: a retry with another card captures its own, never the lost one's key
            idempotency_key=f"{payment.id}:capture:{payment.processor_authorization}",
            authorization_id=payment.processor_authorization,
            amount=amount,
        )
    payment.amount_received = capture.amount_captured
    payment.amount_capturable = 0
    # the network's own time of capture when it gives one (the sandbox does, on the tenant's clock)
    payment.captured_at = capture.captured_at or await tenant_now(session, tenant)
    _move(payment, "succeeded")
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
    payment = await _locked_claiming(session, tenant, payment_id, claim)
    if payment.status != "requires_capture":
        raise Conflict(f"Capture applies to an authorized payment; this one is {payment.status}.")
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
    outlook = fees.read_capture_outlook(ledger_columns)
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
