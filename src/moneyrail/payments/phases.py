"""Atomic phases for a payment's synchronous steps (ARCHITECTURE.md, "The processor is an outside system").

A confirm, capture, cancel or increment asks the processor during the request. On the sandbox simulator
with no network model the call is a statement in moneyrail's own database, and the step runs as it always
did: one transaction, the payment's row locked throughout. On an outside processor (Stripe, or the
simulator behind its network model) no transaction, row lock or pool connection is held while a call is
on the network. `run_in_phases` runs the step's own function (service.py) in turns:

1. the step runs against `Replaying`, a processor that answers the calls already made and stops the
   step (`CallNeeded`) at the first one not made yet. In its first run, its lock of the payment is the
   claim for this request instead (`claim_for_call`: `processor_call`, `processor_call_until`, a lease
   of `CLAIM_LEASE`): one statement, behind the request's Idempotency-Key claim, that commits alone and
   applies only where nobody else holds a claim, so the run holds no row lock; what it reads next it
   reads outside a transaction. The step's validation and refusals happen as they do in one
   transaction (a refusal ends the claim). Whatever the run did is then undone: a run that made no call
   (a cancel before any authorization) or kept a refusal's effect runs again, locking the payment
   (where a step's first lock is not its first statement, the run locks it in a transaction that is
   rolled back, and the claim is a lone statement after it, `_claim`).
2. the call, with no connection held, under the very idempotency key the one-transaction path uses
   (derived from the payment and its step), its answer (or refusal, or outage) kept in memory. A new
   card's `tokenize_and_authorize` is one such call, as in one transaction: the processor's exchange,
   with the step's own choice of authorization (its risk screens, their `card_risk` call made and kept
   too) run in between, on the rows the first run loaded (kept readable). What it reads of the
   database there, it reads in a transaction of its own that ends before the choice returns and before
   any call it makes (`Replaying._exchange`), so nothing is held on the network there either. A choice
   that fails there (say, it needed what the first run's transaction held) ends the exchange before
   anything is authorized, and the step goes on one call a phase (`tokenize_card`, `card_risk`,
   `authorize`).
3. back to 1 with the answers, until the step runs through: that last run locks the payment in a
   transaction, records what the processor answered (status, postings, events, the request's stored
   answer) and ends the claim (its columns ride in the step's own write of the payment where it makes
   one), committed by the request as usual. A confirm with a new card thus runs twice, a capture twice.

Meanwhile the payment reads as it did before the step (`requires_confirmation`, `requires_capture`, ...):
there is no public status for a call in flight, as at Stripe. Another step on the same payment (a second
capture, a cancel during a confirm) is refused with 409 `resource_state_invalid` while the lease lasts
(`check_claim`, called by every lock of a payment in service.py); a step on the simulator path refuses
the same way, so the two paths never meet on one payment.

A crash between the phases leaves the claim. The same request retried with the same Idempotency-Key is
the claim's owner (the claim names the key's digest): it runs again, makes the same calls under the same
processor keys, gets the same answers, and finishes. A request without a key, or with another one, waits
for the lease to end. A claim whose lease ended is nobody's wherever it is read; the orphan sweep
(orphans.py) releases the authorization that no payment recorded, as it does for a lost one-transaction
confirmation, and clears the claim it meets there; a capture the processor made whose request never
came back is finished by any later capture of the payment (the same key answers the same capture).

A transient fault of the processor (`ProcessorUnavailable`) reaches the step as it would in one
transaction (the step answers 503 `processor_unavailable`, Retry-After), and the claim is released; a
card decline is recorded as ever (402).
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Awaitable, Callable, Hashable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any, TypeVar, cast

import structlog
from fastapi import Request
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.api.context import request_uow
from moneyrail.api.idempotency import HEADER
from moneyrail.db.raw import StatementClaim, driver_connection, lone_statement_connection, transaction_open
from moneyrail.db.uow import UnitOfWork
from moneyrail.errors import Conflict, MoneyrailError
from moneyrail.kit.clock import utcnow
from moneyrail.kit.tenant import Tenant
from moneyrail.models import PaymentIntent
from moneyrail.payments import repository
from moneyrail.processor.interface import (
    AuthorizationChoice,
    AuthorizationRequest,
    CardInput,
    Processor,
    ProcessorRefused,
    ProcessorUnavailable,
    TokenizedAndAuthorized,
    TokenizedCard,
    authorize_as_asked,
)
from moneyrail.processor.provider import processor_for
from moneyrail.processor.sandbox import SandboxProcessor

logger = structlog.get_logger("moneyrail.payments")

T = TypeVar("T")
# past any processor call's own timeout (the network model's, Stripe's client's)
CLAIM_LEASE = timedelta(seconds=120)
# a confirm asks at most: tokenize, card risk, authorize, capture
MAX_CALLS = 8


class ProcessorCallInFlight(Conflict):
    """409: another request is calling the processor for this payment."""


def _in_flight() -> ProcessorCallInFlight:
    return ProcessorCallInFlight(
        "Another request is calling the processor for this payment; retry in a moment (a retry of that "
        "request with its Idempotency-Key finishes it)."
    )


def outside(processor: Processor) -> bool:
    """Whether a call to this processor goes over a network (anything but the simulator itself)."""
    return not isinstance(processor, SandboxProcessor)


def request_token(request: Request, tenant: Tenant) -> str:
    """Who holds a claim: the request's Idempotency-Key (its digest, so its retry is the owner), else a
    token of this request alone."""
    key = request.headers.get(HEADER)
    if key is None:
        return "request:" + secrets.token_hex(16)
    scope = f"{tenant.installation_id}|{tenant.livemode}|{key}".encode()
    return "key:" + hashlib.sha256(scope).hexdigest()


@dataclass
class _Step:
    payment_id: str | None  # None: the first payment the step locks
    token: str
    seen: datetime | None = None  # the payment's updated_at when the step's transaction locked it
    inherited: bool = False  # the payment held this request's claim already (a retry after a crash)
    claimed: bool = False  # this run claimed it
    # the claimed payment, its claim's columns cleared in this transaction by `ending_claim`
    payment: PaymentIntent | None = None
    stepwise: bool = False  # an exchange's choice failed: one call a phase from then on
    phased: bool = False  # on an outside processor: run in phases
    locked_by_claim: bool = False  # this run's lock of the payment was its claim (`claim_for_call`)
    facts: frozenset[str] | None = None  # the payment's facts, read with that claim


_running: ContextVar[_Step | None] = ContextVar("moneyrail_payment_step", default=None)


def check_claim(payment: PaymentIntent) -> None:
    """After every lock of a payment: refuse (409) while another request's processor call for it is in
    flight; a claim past its lease is nobody's. Within `run_in_phases`, note what the step saw."""
    step = _running.get()
    if step is not None and step.payment_id is None:
        step.payment_id = payment.id
    if step is None or step.payment_id != payment.id:
        step = None
    until = payment.processor_call_until
    if until is not None:
        if step is not None and payment.processor_call == step.token:
            step.inherited = True
        elif until > utcnow():
            raise _in_flight()
    if step is not None:
        step.seen = payment.updated_at


def claims_with_its_lock(session: AsyncSession, payment_id: str) -> bool:
    """Whether this lock of a payment is a phased step's first, before its transaction began: the lock
    is then the claim for the call (`claim_for_call`)."""
    step = _running.get()
    return (
        step is not None
        and step.phased
        and not (step.claimed or step.inherited)
        and step.payment_id in (None, payment_id)
        and not transaction_open(session)
    )


async def claim_for_call(
    session: AsyncSession,
    tenant: Tenant,
    payment_id: str,
    claim: StatementClaim | None,
    facts: Mapping[str, repository.PaymentCondition] | None = None,
) -> PaymentIntent | None:
    """A phased step's first lock of its payment (`claims_with_its_lock`): the payment claimed for this
    request in a statement that commits alone, behind the request's Idempotency-Key claim where one
    is sent (settled here, before anything else). The run goes on with no transaction and no row lock;
    the call it needs is made next, with no claim of its own to ask for. None: no such payment.
    `facts`: the conditions the step asks about the payment, asked in the same statement
    (`facts_read_with_claim`)."""
    step = _running.get()
    assert step is not None
    now = utcnow()
    row, payment, step.facts = await repository.claim_payment_for_call(
        session, tenant, payment_id, claim, token=step.token, until=now + CLAIM_LEASE, now=now, facts=facts
    )
    if claim is not None:
        claim.settle(row)
    if payment is None:
        if row["payment_exists"]:
            raise _in_flight()
        return None
    step.payment_id = payment.id
    step.claimed = step.locked_by_claim = True
    return payment


def facts_read_with_claim(payment_id: str) -> frozenset[str] | None:
    """The payment's facts where this run's lock was its claim and asked them (None: ask them)."""
    step = _running.get()
    if step is None or not step.locked_by_claim or step.payment_id != payment_id:
        return None
    return step.facts


def ending_claim(payment: PaymentIntent) -> None:
    """Before the step's write of its payment (service.announce): this request's claim on it, if any,
    ends with that write (its columns ride in the row's UPDATE), not in a statement of its own. The
    lock holds the row, so the claim is this request's until the transaction ends; a run rolled back
    undoes this with the rest."""
    step = _running.get()
    if step is None or step.payment_id != payment.id or not (step.claimed or step.inherited):
        return
    payment.processor_call = None
    payment.processor_call_until = None
    step.payment = payment


# A processor call as the answers know it: its name and arguments, compared by value
CallIdentity = Hashable


def _identity(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> CallIdentity:
    """The call's values themselves (the processor's arguments are frozen dataclasses, strings, numbers
    and instants, compared by value), without rendering them: asked at every call of every run. A call
    with a value that cannot be hashed (a dict of metadata) is known by its repr instead."""
    identity = (name, args, tuple(sorted(kwargs.items())))
    try:
        hash(identity)
    except TypeError:
        return repr(identity)
    return identity


class CallNeeded(BaseException):
    """The step asked `Replaying` for a call not made yet (a BaseException: no step's `except Exception`
    may take it for a fault). `make` makes it, with no transaction open, and keeps its answers."""

    def __init__(self, identity: CallIdentity, make: Callable[[Processor], Awaitable[None]]) -> None:
        super().__init__(identity)
        self.identity = identity
        self.make = make


# an answer, or the processor's refusal or outage, replayed by raising it
Outcome = Any


class _Asked:
    """Stands in for the processor to learn the call `authorize_as_asked` makes (its identity)."""

    identity: CallIdentity = ""

    async def authorize(self, *args: Any, **kwargs: Any) -> Any:
        self.identity = _identity("authorize", args, kwargs)


class Replaying:
    """A `Processor` answering the calls made already (`answers`, by the call's name and arguments) and
    raising `CallNeeded` for the first one that was not; live (the processor itself, the answers kept)
    while an exchange runs the step's choice (`tokenize_and_authorize`)."""

    batches_calls = False

    def __init__(
        self, answers: dict[CallIdentity, Outcome], state: _Step, give_back: Callable[[], Awaitable[None]]
    ) -> None:
        self._answers = answers
        self._state = state
        self._give_back = give_back  # ends what the session began since the run's rollback, if anything
        self._live: Processor | None = None

    def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]:
        if name.startswith("_"):
            raise AttributeError(name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            return await self.answer(name, args, kwargs)

        return call

    async def answer(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        identity = _identity(name, args, kwargs)
        if identity not in self._answers:
            live = self._live
            if live is None:
                raise CallNeeded(identity, partial(self._make, identity, name, args, kwargs))
            await self._give_back()  # nothing of the database held while the call is on the network
            await self._make(identity, name, args, kwargs, live)
        outcome = self._answers[identity]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    async def _make(
        self,
        identity: CallIdentity,
        name: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        processor: Processor,
    ) -> None:
        try:
            self._answers[identity] = await getattr(processor, name)(*args, **kwargs)
        except (ProcessorRefused, ProcessorUnavailable) as outcome:
            self._answers[identity] = outcome

    async def tokenize_and_authorize(
        self, tenant: Tenant, card: CardInput, choose: AuthorizationChoice
    ) -> TokenizedAndAuthorized:
        """Not made yet: the processor's exchange, in one phase (`_exchange`). Made (or a choice that
        failed in it): the two calls in turn, as on Stripe, each answered as the exchange answered."""
        tokenizing = _identity("tokenize_card", (tenant, card), {})
        if tokenizing not in self._answers and self._live is None and not self._state.stepwise:
            raise CallNeeded(tokenizing, partial(self._exchange, tenant, card, choose))
        tokenized: TokenizedCard = await self.answer("tokenize_card", (tenant, card), {})
        asked = await choose(tokenized)
        if asked is None:
            return TokenizedAndAuthorized(tokenized, None)
        try:
            authorization = await authorize_as_asked(
                cast(Processor, self),
                tenant,
                card_token=tokenized.token,
                card_fingerprint=tokenized.fingerprint,
                asked=asked,
            )
        except (ProcessorRefused, ProcessorUnavailable) as refused:
            return TokenizedAndAuthorized(tokenized, refused)
        return TokenizedAndAuthorized(tokenized, authorization)

    async def _exchange(
        self, tenant: Tenant, card: CardInput, choose: AuthorizationChoice, processor: Processor
    ) -> None:
        """`processor.tokenize_and_authorize`, the step's `choose` (from the first run) run in
        between with this processor live; its answers kept as those of `tokenize_card`, the choice's
        calls and `authorize`, for the next run to replay. What the choice read of the database is
        given back before it returns; a choice that fails leaves the step to one call a phase."""
        tokenizing = _identity("tokenize_card", (tenant, card), {})
        chosen: list[AuthorizationRequest | None] = []
        failed: list[Exception] = []

        async def choosing(tokenized: TokenizedCard) -> AuthorizationRequest | None:
            self._live = processor
            try:
                asked = await choose(tokenized)
            except Exception as error:  # before anything is authorized: the exchange ends with it
                failed.append(error)
                raise
            finally:
                self._live = None
                await self._give_back()
            chosen.append(asked)
            return asked

        try:
            answered = await processor.tokenize_and_authorize(tenant, card, choosing)
        except Exception as error:
            if failed:
                self._state.stepwise = True
                logger.info("payment_exchange_stepwise", error=type(error).__name__)
                return
            if isinstance(error, (ProcessorRefused, ProcessorUnavailable)):
                self._answers[tokenizing] = error  # the tokenizing's, as `tokenize_card` raises it
                return
            raise
        self._answers[tokenizing] = answered.card
        if chosen and chosen[0] is not None and answered.authorization is not None:
            asked = _Asked()
            await authorize_as_asked(
                cast(Processor, asked),
                tenant,
                card_token=answered.card.token,
                card_fingerprint=answered.card.fingerprint,
                asked=chosen[0],
            )
            self._answers[asked.identity] = answered.authorization


async def run_in_phases(
    uow: UnitOfWork,
    processor: Processor,
    tenant: Tenant,
    payment_id: str | None,
    token: str,
    step: Callable[[AsyncSession, Processor], Awaitable[T]],
) -> T:
    """Run `step` (a service function's call, given the session and processor to use) in atomic phases
    on an outside processor, else as it is (see the module's docstring). Its last transaction is left
    to the request to commit, as the one-transaction path's is. `payment_id`: the payment the step
    claims; None for the first one it locks (a step that reaches its payment through another object:
    an order, a review)."""
    state = _Step(payment_id, token)
    running = _running.set(state)
    try:
        if not outside(processor):
            return await _in_one_transaction(uow, processor, state, step)
        return await _phased(uow, processor, tenant, state, step)
    finally:
        _running.reset(running)


async def _in_one_transaction(
    uow: UnitOfWork,
    processor: Processor,
    state: _Step,
    step: Callable[[AsyncSession, Processor], Awaitable[T]],
) -> T:
    """The simulator's path: one transaction. A claim this request left on an outside processor (the
    environment's network model was switched off since) ends with it."""
    try:
        result = await step(uow.session, processor)
    except MoneyrailError as error:
        if state.inherited and error.keeps_effect:
            await _release_with(uow.session, state)
        raise
    if state.inherited:
        await _release_with(uow.session, state)
    return result


async def _phased(
    uow: UnitOfWork,
    processor: Processor,
    tenant: Tenant,
    state: _Step,
    step: Callable[[AsyncSession, Processor], Awaitable[T]],
) -> T:
    answers: dict[CallIdentity, Outcome] = {}
    state.phased = True
    while True:
        state.payment = None
        state.locked_by_claim = False
        state.facts = None
        session = uow.session
        replaying = Replaying(answers, state, partial(uow.end_transaction, commit=False))
        try:
            result = await step(session, cast(Processor, replaying))
        except CallNeeded as needed:
            # nothing half done; the lock and connection go. What the run loaded stays readable for an
            # exchange's choice (detached first: a rollback would expire its rows)
            await _discard(uow, state)
            if len(answers) >= MAX_CALLS:  # a step whose calls differ at each run would never end
                await _release_after(uow, state, keeps_effect=False)
                raise RuntimeError(
                    f"a payment step asked for more than {MAX_CALLS} processor calls"
                ) from None
            if not state.claimed:
                await _claim(uow, tenant, state)
            try:
                await needed.make(processor)
            except BaseException:
                await _release_after(uow, state, keeps_effect=False)
                raise
            continue
        except MoneyrailError as error:
            if state.locked_by_claim and error.keeps_effect:
                await _discard(uow, state)  # its effect is written under the payment's lock: again
                continue
            if state.claimed or state.inherited:
                await _release_after(uow, state, keeps_effect=error.keeps_effect)
            raise
        except BaseException:
            if state.claimed or state.inherited:
                await _release_after(uow, state, keeps_effect=False)
            raise
        if state.locked_by_claim:  # no call made: what the run wrote is written under the payment's lock
            await _discard(uow, state)
            continue
        if state.claimed or state.inherited:
            await _release_with(uow.session, state)
        return result


async def _discard(uow: UnitOfWork, state: _Step) -> None:
    """Undo a run: roll back what it wrote, give back its lock and connection, detach what it loaded."""
    uow.session.expunge_all()
    await uow.end_transaction(commit=False)
    state.payment = None


async def _claim(uow: UnitOfWork, tenant: Tenant, state: _Step) -> None:
    if state.seen is None:
        raise RuntimeError("a phased step must lock its payment before it calls the processor")
    now = utcnow()
    async with lone_statement_connection(uow) as connection:
        claimed = await connection.fetchval(
            "UPDATE payment_intents SET processor_call = $4, processor_call_until = $5 "
            "WHERE id = $1 AND installation_id = $2 AND livemode = $3 AND updated_at = $6 "
            "AND (processor_call_until IS NULL OR processor_call = $4 OR processor_call_until <= $7) "
            "RETURNING true",
            state.payment_id,
            tenant.installation_id,
            tenant.livemode,
            state.token,
            now + CLAIM_LEASE,
            state.seen,
            now,
        )
    state.claimed = bool(claimed)
    if not claimed:
        raise ProcessorCallInFlight(
            "This payment changed while the request ran, or another request is calling the processor "
            "for it; retry."
        )


_RELEASE_SQL = (
    "UPDATE payment_intents SET processor_call = NULL, processor_call_until = NULL "
    "WHERE id = $1 AND processor_call = $2"
)


async def _release_in(session: AsyncSession, state: _Step) -> None:
    """End the claim in the step's last transaction (which holds the payment's lock)."""
    connection = await driver_connection(session)
    await connection.execute(_RELEASE_SQL, state.payment_id, state.token)


async def _release_with(session: AsyncSession, state: _Step) -> None:
    """End the claim with the step's last transaction: its columns went with the step's write of the
    payment (`ending_claim`); a statement of its own where the step wrote none."""
    if state.payment is None:
        await _release_in(session, state)


async def _release_after(uow: UnitOfWork, state: _Step, *, keeps_effect: bool) -> None:
    """The step ended with an error: its claim ends with the effect it keeps (a recorded decline), or
    alone once what it wrote is rolled back (the request rolls back a refusal anyway)."""
    if keeps_effect:
        await _release_with(uow.session, state)
        return
    await uow.end_transaction(commit=False)
    state.payment = None
    async with lone_statement_connection(uow) as connection:
        await connection.execute(_RELEASE_SQL, state.payment_id, state.token)
    logger.info("payment_processor_call_released", payment_intent=state.payment_id)


def clear_expired_claim(payment: PaymentIntent) -> None:
    """The orphan sweep's, on a locked payment whose claim's lease ended (its request died between the
    phases): the claim was nobody's already; this clears it with the sweep's write."""
    logger.warning("payment_processor_call_expired", payment_intent=payment.id)
    payment.processor_call = None
    payment.processor_call_until = None


async def run_request_step(
    request: Request,
    tenant: Tenant,
    payment_id: str | None,
    step: Callable[[AsyncSession, Processor], Awaitable[T]],
) -> T:
    """`run_in_phases` for a request's step: its unit of work, the tenant's processor (403 when a live
    environment has none) and the request's claim token."""
    uow = request_uow(request)
    processor = await processor_for(uow, tenant)
    return await run_in_phases(uow, processor, tenant, payment_id, request_token(request, tenant), step)
