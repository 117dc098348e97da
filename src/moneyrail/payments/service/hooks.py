"""What other domains hook into a payment's steps: capture listeners, the facts they and owners
register, risk screens (with the payer's `Confirmation` they screen) and owners' refusals."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.errors import Conflict
from moneyrail.kit.tenant import Tenant
from moneyrail.models import PaymentIntent, PaymentMethod
from moneyrail.payments import repository
from moneyrail.processor.interface import CardInput, Processor

# --- capture listeners -----------------------------------------------------------------------------
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


@dataclass(frozen=True)
class Confirmation:
    """What the payer chose: a new card, or a saved one of the payment's customer."""

    card: CardInput | None = None
    payment_method: str | None = None
    save_payment_method: bool = False
    return_url: str | None = None
    ip_address: str | None = None  # where the payer confirmed from, for the risk lists


# --- owners of a payment ------------------------------------------------------------------------------
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
