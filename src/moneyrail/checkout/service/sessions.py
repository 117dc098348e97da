"""Checkout sessions: their state machine, creating, reading, completing and expiring them (the sweep)."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

import structlog
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from moneyrail.billing import service as billing
from moneyrail.billing.service import changes as billing_changes
from moneyrail.checkout import repository
from moneyrail.checkout.schemas import CheckoutSessionCreate, render_checkout_session
from moneyrail.db.uow import UnitOfWork
from moneyrail.engine.clock import tenant_now
from moneyrail.engine.schedule import register_periodic_outside
from moneyrail.errors import (
    CheckoutNotEnabled,
    Conflict,
    MoneyrailError,
    ParameterMissing,
    ParametersExclusive,
    ReferencedResourceMissing,
    ResourceMissing,
    UrlNotRegistered,
)
from moneyrail.events.service import record_event
from moneyrail.installations import service as installations
from moneyrail.kit.clock import utcnow
from moneyrail.kit.crypto import hash_secret
from moneyrail.kit.ids import new_id, random_base62
from moneyrail.kit.tenant import Tenant
from moneyrail.models import CheckoutSession, PaymentIntent
from moneyrail.payments import phases
from moneyrail.payments import service as payments
from moneyrail.processor import provider
from moneyrail.processor.interface import Processor
from moneyrail.sandbox.service import register_due_work

logger = structlog.get_logger("moneyrail.checkout")

SESSION_LIFETIME = timedelta(minutes=30)  # spec part 8
TOKEN_LENGTH = 43  # 43 base62 characters carry 256 bits
TRANSITIONS: dict[str, frozenset[str]] = {
    "open": frozenset({"complete", "expired"}),
    "complete": frozenset(),
    "expired": frozenset(),
}
# A checkout is done once its payment is paid: captured, or authorized when the caller captures later
# (the commerce flow of spec 4.B rule 3).
PAID = frozenset({"succeeded", "requires_capture"})
SWEEP_BATCH = 200
# due sessions the sweep settles at once: on an outside processor each one's cancel is a network call, and
# one after another a backlog would wait a round trip each (each holds at most one pool connection)
SETTLING_AT_ONCE = 8
SWEEP_SANDBOXES = 500


def checkout_url(base_url: str, token: str) -> str:
    return f"{base_url}/checkout/{token}"


def return_url(base_url: str, checkout_id: str) -> str:
    """Where the sandbox bank's page sends the payer back after authentication. It names the session,
    not its token: the address is stored on the payment and shown in its events, where a credential
    must not be. The payer's browser brings the token back in a cookie (see pages.py)."""
    return f"{base_url}/checkout/return/{checkout_id}"


def _move(checkout: CheckoutSession, status: str) -> None:
    if status not in TRANSITIONS[checkout.status]:
        raise Conflict(f"A checkout session cannot go from {checkout.status} to {status}.")
    checkout.status = status
    checkout.updated_at = utcnow()


async def _announce(
    session: AsyncSession, tenant: Tenant, checkout: CheckoutSession, event_type: str
) -> None:
    await record_event(session, tenant, event_type, render_checkout_session(checkout).model_dump(mode="json"))


# --- payments owned by another domain ------------------------------------------------------------
@dataclass(frozen=True)
class PaymentOwner:
    """Another domain owns the payment a session takes (a commerce order, a payment invoice): an expiry
    revokes only the link and leaves the payment to its owner. `expire_refusal`, when set, refuses the
    expire operation itself with that message (spec part 3: an order-bound payment)."""

    kind: str
    expire_refusal: str | None


PaymentOwnerLookup = Callable[[AsyncSession, Tenant, str], Awaitable[PaymentOwner | None]]
_payment_owners: list[PaymentOwnerLookup] = []


def register_payment_owner(lookup: PaymentOwnerLookup) -> None:
    if lookup not in _payment_owners:
        _payment_owners.append(lookup)


async def _owner_of(session: AsyncSession, tenant: Tenant, payment_id: str) -> PaymentOwner | None:
    for lookup in _payment_owners:
        owner = await lookup(session, tenant, payment_id)
        if owner is not None:
            return owner
    return None


# --- creating -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class CreatedCheckoutSession:
    checkout: CheckoutSession
    token: str  # answered once inside checkout_url, never stored


async def _resolve_billing(
    session: AsyncSession, tenant: Tenant, command: CheckoutSessionCreate
) -> billing.CheckoutTerms | None:
    """A subscription checkout takes the payment of the invoice it collects: the first one, or a failed
    one named by `invoice` (a recovery, on the same payment), or a `change` the payer consents to (an
    immediate change's difference, or no payment at all for a next_cycle one)."""
    if command.change is not None:
        if command.subscription is None:  # a change belongs to a subscription: a payment's names none
            raise ReferencedResourceMissing(f"No such change: {command.change!r}", param="change")
        if command.invoice is not None:
            raise ParametersExclusive(
                "A checkout takes either a change or an invoice, not both.", param="invoice"
            )
        return await billing_changes.checkout_terms(session, tenant, command.subscription, command.change)
    if command.subscription is None:
        if command.invoice is not None:
            raise ReferencedResourceMissing(f"No such invoice: {command.invoice!r}", param="invoice")
        return None
    return await billing.checkout_terms(session, tenant, command.subscription, command.invoice)


async def _payment_to_take(session: AsyncSession, tenant: Tenant, payment_id: str) -> PaymentIntent:
    try:
        payment = await payments.lock_payment_intent(session, tenant, payment_id)
    except ResourceMissing:
        raise ReferencedResourceMissing(
            f"No such payment_intent: {payment_id!r}", param="payment_intent"
        ) from None
    if payment.status not in payments.CONFIRMABLE:
        raise Conflict(
            f"This payment is {payment.status}: a checkout takes a payment that still requires a payment "
            "method or confirmation.",
            param="payment_intent",
        )
    return payment


async def create_checkout_session(
    session: AsyncSession, tenant: Tenant, command: CheckoutSessionCreate
) -> CreatedCheckoutSession:
    settings = await installations.get_environment_settings(session, tenant)
    if not settings.checkout_enabled:
        raise CheckoutNotEnabled(
            f"Hosted checkout is not enabled for this installation's {tenant.environment}; "
            "the operator enables it (moneyrail settings set --checkout)."
        )
    if command.payment_intent is not None and command.subscription is not None:
        raise ParametersExclusive(
            "A checkout session takes either payment_intent or subscription, not both.", param="subscription"
        )
    if command.payment_intent is None and command.subscription is None:
        raise ParameterMissing(
            "A checkout session needs the payment_intent (or the subscription) it takes.",
            param="payment_intent",
        )
    terms = await _resolve_billing(session, tenant, command)
    for param, url in (("success_url", command.success_url), ("cancel_url", command.cancel_url)):
        if url not in settings.return_urls:
            raise UrlNotRegistered(
                f"{param} {url!r} is not a return URL registered for this environment; the operator "
                "registers each one exactly (moneyrail settings set --return-url).",
                param=param,
            )
    payment_id = terms.payment_intent_id if terms is not None else command.payment_intent
    # none for a next_cycle change: nothing is charged, the page confirms the change
    payment = await _payment_to_take(session, tenant, payment_id) if payment_id is not None else None

    token = random_base62(TOKEN_LENGTH)
    now = utcnow()
    checkout = CheckoutSession(
        id=new_id("cs"),
        installation_id=tenant.installation_id,
        livemode=tenant.livemode,
        payment_intent_id=payment.id if payment is not None else None,
        subscription_id=terms.subscription_id if terms is not None else None,
        change_id=terms.change_id if terms is not None else None,
        invoice_id=terms.invoice_id if terms is not None else None,
        title=command.title,
        success_url=command.success_url,
        cancel_url=command.cancel_url,
        token_hash=hash_secret(token),
        status="open",
        expires_at=await tenant_now(session, tenant) + SESSION_LIFETIME,
        updated_at=now,
    )
    await repository.add(session, checkout)
    logger.info(
        "checkout_session_created",
        checkout_session=checkout.id,
        payment_intent=checkout.payment_intent_id,
        change=checkout.change_id,
    )
    return CreatedCheckoutSession(checkout, token)


# --- reading ------------------------------------------------------------------------------------
async def get_checkout_session(session: AsyncSession, tenant: Tenant, checkout_id: str) -> CheckoutSession:
    checkout = await repository.get(session, tenant, checkout_id)
    if checkout is None:
        raise ResourceMissing(f"No such checkout session: {checkout_id!r}", param="checkout_session")
    return checkout


# --- completing and expiring -----------------------------------------------------------------------
async def _complete(session: AsyncSession, tenant: Tenant, checkout: CheckoutSession) -> None:
    _move(checkout, "complete")
    checkout.completed_at = await tenant_now(session, tenant)
    await session.flush()
    await _announce(session, tenant, checkout, "checkout.session.completed")
    logger.info("checkout_session_completed", checkout_session=checkout.id)


async def _expire(
    session: AsyncSession, tenant: Tenant, processor: Processor, checkout: CheckoutSession
) -> None:
    """The link stops working; a one-off payment nobody paid is cancelled with it.

    A payment that another open session still offers is left to that session, and one that another
    domain owns (register_payment_owner) to its owner. A subscription's checkout only loses its link:
    the subscription and its invoice's payment stay (spec part 3).
    """
    if checkout.payment_intent_id is not None and checkout.subscription_id is None:
        # the payment's lock first: a session being created for it meanwhile is counted, not orphaned
        payment = await payments.lock_payment_intent(session, tenant, checkout.payment_intent_id)
        unfinished = payment.status in payments.CANCELABLE and payment.status not in PAID
        owned = await _owner_of(session, tenant, payment.id) is not None
        if unfinished and not owned and await repository.count_other_open_for_payment(session, checkout) == 0:
            await payments.cancel_payment_intent(session, tenant, processor, payment.id, "abandoned")
    _move(checkout, "expired")
    checkout.expired_at = await tenant_now(session, tenant)
    await session.flush()
    await _announce(session, tenant, checkout, "checkout.session.expired")
    logger.info("checkout_session_expired", checkout_session=checkout.id)


async def expire_checkout_session(
    session: AsyncSession, tenant: Tenant, processor: Processor, checkout_id: str
) -> CheckoutSession:
    checkout = await repository.get(session, tenant, checkout_id, for_update=True)
    if checkout is None:
        raise ResourceMissing(f"No such checkout session: {checkout_id!r}", param="checkout_session")
    if checkout.status != "open":
        raise Conflict(f"This checkout session is {checkout.status}; only an open one can be expired.")
    if checkout.payment_intent_id is not None:
        await payments.lock_payment_intent(session, tenant, checkout.payment_intent_id)  # no bind meanwhile
        owner = await _owner_of(session, tenant, checkout.payment_intent_id)
        if owner is not None and owner.expire_refusal is not None:
            raise Conflict(owner.expire_refusal)
    await _expire(session, tenant, processor, checkout)
    return checkout


async def _settle_due(
    session: AsyncSession, tenant: Tenant, processor: Processor, checkout: CheckoutSession
) -> None:
    """A session past its expiry: complete if its payment was paid meanwhile (the payer left the bank's
    page without coming back), else expired."""
    if checkout.payment_intent_id is not None:
        payment = await payments.lock_payment_intent(session, tenant, checkout.payment_intent_id)
        if payment.status in PAID:
            await _complete(session, tenant, checkout)
            return
    await _expire(session, tenant, processor, checkout)


async def _settle_due_sessions(
    session: AsyncSession,
    *,
    tenant: Tenant,
    now: datetime,
    processor: Processor | None = None,
) -> int:
    due = await repository.due_open_sessions(
        session, tenant=tenant, livemode=None, now=now, limit=SWEEP_BATCH
    )
    if not due:
        return 0
    network = processor or await provider.processor_for(session, tenant)
    if phases.outside(network):
        # their payments' cancels would go out inside this transaction (a clock advance's): the
        # scheduler's sweep settles them, each in atomic phases
        return 0
    settled = 0
    for checkout in due:
        checkout_id = checkout.id
        try:
            async with session.begin_nested():  # one session's failure leaves the others settled
                await _settle_due(session, tenant, network, checkout)
        except MoneyrailError as error:  # the network did not answer, or the payment moved meanwhile
            logger.warning("checkout_expiry_deferred", checkout_session=checkout_id, code=error.code)
            continue  # the next sweep tries again
        settled += 1
    return settled


async def expire_due_sessions(
    session: AsyncSession, tenant: Tenant, now: datetime, *, processor: Processor | None = None
) -> int:
    """Due work of a sandbox clock advance: the tenant's sessions past expiry at `now`. A sandbox on an
    outside processor (Stripe's test mode) has none settled here: the scheduler's sweep settles them."""
    return await _settle_due_sessions(session, tenant=tenant, now=now, processor=processor)


@dataclass(frozen=True)
class _Due:
    checkout_id: str
    tenant: Tenant
    payment_id: str | None


async def _due_everywhere(session: AsyncSession) -> list[_Due]:
    """Live sessions due on real time, then each sandbox's on its own clock."""
    found = list(
        await repository.due_open_sessions(
            session, tenant=None, livemode=True, now=utcnow(), limit=SWEEP_BATCH
        )
    )
    for installation_id in await repository.installations_with_open_sandbox_sessions(
        session, SWEEP_SANDBOXES
    ):
        sandbox = Tenant(installation_id, False)
        now = await tenant_now(session, sandbox)
        found += await repository.due_open_sessions(
            session, tenant=sandbox, livemode=None, now=now, limit=SWEEP_BATCH
        )
    return [
        _Due(checkout.id, Tenant(checkout.installation_id, checkout.livemode), checkout.payment_intent_id)
        for checkout in found
    ]


async def _settle_if_still_due(
    session: AsyncSession, tenant: Tenant, processor: Processor, checkout_id: str
) -> bool:
    """One phase's run of a due session's settling: False when it is no longer due, or a payer holds
    it right now (the next sweep looks again)."""
    now = await tenant_now(session, tenant)
    checkout = await repository.lock_due_session(session, tenant, checkout_id, now)
    if checkout is None:
        return False
    await _settle_due(session, tenant, processor, checkout)
    return True


async def _settle_one(
    sessionmaker: async_sessionmaker[AsyncSession], due: _Due, processor: Processor | None
) -> bool:
    """A due session in a unit of work of its own, in atomic phases on an outside processor: the
    cancel of its payment goes out with no transaction or row lock held."""
    async with UnitOfWork(sessionmaker) as uow:
        try:
            network = processor or await provider.processor_for(uow, due.tenant)
            settled = await phases.run_in_phases(
                uow,
                network,
                due.tenant,
                due.payment_id,
                "sweep:" + secrets.token_hex(16),
                lambda session, called: _settle_if_still_due(session, due.tenant, called, due.checkout_id),
            )
        except MoneyrailError as error:  # the network did not answer, or the payment moved meanwhile
            logger.warning("checkout_expiry_deferred", checkout_session=due.checkout_id, code=error.code)
            return False  # the next sweep tries again
        await uow.commit()
        return settled


async def sweep(sessionmaker: async_sessionmaker[AsyncSession], *, processor: Processor | None = None) -> int:
    """The scheduler's sweep: live sessions on real time, each sandbox on its own clock, each settled in
    a unit of work of its own (no transaction is open while a payment's cancel is on the network),
    `SETTLING_AT_ONCE` of them concurrently.

    A session due while a payer holds it (paying right now) is skipped and settled by the next sweep.
    """
    async with UnitOfWork(sessionmaker) as uow:
        due = await _due_everywhere(uow.session)
    waiting = iter(due)  # shared by the lanes: each due session is taken by one of them

    async def lane() -> int:
        settled = 0
        for each in waiting:
            settled += await _settle_one(sessionmaker, each, processor)
        return settled

    # an unexpected failure ends its lane only; it is raised once the other lanes have drained the rest
    lanes = await asyncio.gather(
        *(lane() for _ in range(min(SETTLING_AT_ONCE, len(due)))), return_exceptions=True
    )
    for outcome in lanes:
        if isinstance(outcome, BaseException):
            raise outcome
    return sum(outcome for outcome in lanes if isinstance(outcome, int))


register_periodic_outside("checkout.expiry", timedelta(seconds=30), sweep)
register_due_work("checkout.expiry", expire_due_sessions)
