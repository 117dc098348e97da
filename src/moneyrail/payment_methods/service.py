"""Saved cards of customers, the setup intents that save them, and customer sessions (spec 4.A).

A card number goes to the processor and nowhere else: a saved method keeps the processor's token (never
shown), brand, last4, expiry and a fingerprint. Client secrets are stored as SHA-256 hashes only.

A setup intent's state machine is data (SETUP_INTENT_TRANSITIONS):

    requires_payment_method -> succeeded   confirmed with a card before `expires_at`
    requires_payment_method -> canceled    not confirmed within its hour: `cancellation_reason` abandoned,
                                           set by the sweep, a sandbox clock advance, or the first read
                                           that finds it past `expires_at` on the environment's clock

The spec leaves the setup intent's shape open ("not shown"); `canceled` with `abandoned` is Stripe's
own status and reason for a setup intent that will not be used.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.customers import service as customers
from moneyrail.db.raw import WriteAt, from_row
from moneyrail.engine.clock import tenant_now
from moneyrail.engine.schedule import register_periodic
from moneyrail.errors import (
    CardDeclined,
    ClientSecretInvalid,
    Conflict,
    ParameterInvalid,
    ParameterMissing,
    ProcessorNotConfigured,
    ProcessorUnavailableError,
    ReferencedResourceMissing,
    ResourceMissing,
)
from moneyrail.installations.service import get_account, require_installation
from moneyrail.kit import states
from moneyrail.kit.clock import utcnow
from moneyrail.kit.crypto import hash_secret
from moneyrail.kit.ids import new_id, random_base62
from moneyrail.kit.pagination import Position
from moneyrail.kit.tenant import Tenant
from moneyrail.models import CustomerSession, PaymentMethod, SetupIntent
from moneyrail.processor.interface import (
    Authorization,
    AuthorizationRequest,
    CardInput,
    CardNotAccepted,
    NotSupported,
    Processor,
    ProcessorRefused,
    ProcessorUnavailable,
    TokenizedCard,
)
from moneyrail.processor.provider import NoProcessor
from moneyrail.sandbox.service import register_due_work

from . import repository

logger = structlog.get_logger("moneyrail.payment_methods")

SETUP_INTENT_LIFETIME = timedelta(hours=1)
SETUP_INTENT_TRANSITIONS: dict[str, frozenset[str]] = {
    "requires_payment_method": frozenset({"succeeded", "canceled"}),
    "succeeded": frozenset(),
    "canceled": frozenset(),
}
SWEEP_BATCH = 500
SWEEP_SANDBOXES = 500
CUSTOMER_SESSION_LIFETIME = timedelta(minutes=30)
CLIENT_SECRET_RANDOM_LENGTH = 32


def new_client_secret(object_id: str) -> str:
    return f"{object_id}_secret_{random_base62(CLIENT_SECRET_RANDOM_LENGTH)}"


def _secret_matches(presented: str, stored_hash: str) -> bool:
    return hmac.compare_digest(hash_secret(presented), stored_hash)


# Saved cards: what other domains (payments, checkout, billing) call -----------------------------


async def payment_account(session: AsyncSession, tenant: Tenant, merchant_id: str | None) -> str | None:
    """The payment account a payment runs on, which is where its cards are saved and found (spec 4.N
    rule 7): a platform installation's payments all run on the platform's account (None), so a card a
    customer consented to save is reused between its merchants; in the direct model each merchant has a
    distinct account (its `mer_` id), whose cards no other merchant sees."""
    if merchant_id is None:
        return None
    installation = await require_installation(session, tenant.installation_id)
    return None if installation.kind == "platform" else merchant_id


async def save_card(
    session: AsyncSession,
    tenant: Tenant,
    processor: Processor,
    card: CardInput,
    *,
    customer_id: str | None,
    account: str | None = None,
) -> PaymentMethod:
    """Tokenize the card and keep the token; never the number.

    `customer_id` None: a one-off method attached to nobody. Otherwise attached to that customer (one of
    the tenant's, or 400 resource_missing `customer`); the same card saved again (same fingerprint, still
    attached) answers the method already saved, and a customer's first card becomes the preferred one.
    `account`: the payment account (see payment_account) the card is saved on.
    A card the network will not take: 402 card_declined with its decline_code; the network not
    answering: 503 processor_unavailable (nothing saved, the request may be retried).
    """
    if customer_id is not None:
        await _require_referenced_customer(session, tenant, customer_id)
    method = await _tokenized(tenant, processor, card, account)
    if customer_id is None:
        await repository.insert_method(session, method)
        return method
    await repository.lock_customer_methods(session, customer_id)
    saved = await repository.find_attached_by_fingerprint(
        session, tenant, customer_id, method.fingerprint, merchant_id=account
    )
    if saved is not None:
        if (saved.exp_month, saved.exp_year) != (method.exp_month, method.exp_year):
            # the card was re-entered with a new expiry: later charges use the fresh token
            saved.processor_token = method.processor_token
            saved.exp_month, saved.exp_year = method.exp_month, method.exp_year
            await session.flush()
        return saved
    method.customer_id = customer_id
    method.preferred = await repository.preferred_id(session, tenant, customer_id) is None
    await repository.insert_method(session, method)
    return method


@dataclass(eq=False)
class UnsavedCard:
    """A one-off card tokenized for a payment's confirmation, its row not written yet: the
    confirmation's last statement carries its INSERT (`insert`: one round trip fewer), or `save`
    writes it first where anything written before that may refer to it (a decline, a flush)."""

    method: PaymentMethod
    written: bool = False

    async def save(self, session: AsyncSession) -> None:
        if not self.written:
            self.written = True
            # before the payment's pending changes, which refer to it
            await repository.insert_method(session, self.method, flush_first=False)

    def insert(self) -> WriteAt:
        """The INSERT for the statement about to run in this transaction; the row counts as written."""
        assert not self.written, "the card's row is written already"
        self.written = True
        return repository.method_insert(self.method)


async def tokenize_and_authorize(
    tenant: Tenant,
    processor: Processor,
    card: CardInput,
    *,
    account: str | None,
    choose: Callable[[PaymentMethod], Awaitable[AuthorizationRequest | None]],
) -> tuple[UnsavedCard, Authorization | ProcessorRefused | ProcessorUnavailable | None]:
    """`save_card` with no customer, its row left for the caller to write (`UnsavedCard`), and the new
    card authorized as `choose` asks given its method, in one exchange with the processor
    (`Processor.tokenize_and_authorize`): the tokenizing's refusals raised as `save_card` raises them
    (402 card_declined, 503 processor_unavailable), the authorization's answer or refusal answered."""
    chosen: list[PaymentMethod] = []

    async def choose_for(tokenized: TokenizedCard) -> AuthorizationRequest | None:
        chosen.append(_one_off(tenant, tokenized, account))
        return await choose(chosen[0])

    with _tokenizing_refusals():
        answered = await processor.tokenize_and_authorize(tenant, card, choose_for)
    (method,) = chosen
    if method.processor_token != answered.card.token:
        raise RuntimeError("the processor authorized another card than the one chosen for")
    return UnsavedCard(method), answered.authorization


@contextmanager
def _tokenizing_refusals() -> Iterator[None]:
    """A card the network will not take: 402 card_declined; the network not answering: 503; the network
    refusing the card for another reason, for good: 402 card_declined with decline_code processing_error,
    as a refused authorization answers (Stripe's `processing_error`), never a 500: nothing was tokenized."""
    try:
        yield
    except CardNotAccepted as refused:
        raise CardDeclined(refused.message, decline_code=refused.decline_code, param="card[number]") from None
    except NoProcessor:
        raise ProcessorNotConfigured() from None
    except ProcessorUnavailable:
        raise ProcessorUnavailableError("The card network did not answer; try again.") from None
    except NotSupported as refused:
        # the wrong kind of card input for this environment's processor: typed digits where only
        # Stripe.js may collect cards, a Stripe.js token on the simulator
        param = "card" if refused.code == "card_token_required" else "card_token"
        raise ParameterInvalid(f"{refused.message} ({refused.code})", param=param) from None
    except ProcessorRefused as refused:
        # the operator's one line (no stack trace: an answer of the network, not a bug); no card data in it
        logger.warning("card_tokenizing_refused", code=refused.code, error=refused.message)
        raise CardDeclined(
            "The card could not be processed; try again or use another card.",
            decline_code="processing_error",
        ) from None


async def _tokenized(
    tenant: Tenant, processor: Processor, card: CardInput, account: str | None
) -> PaymentMethod:
    """The card tokenized, as a new one-off method of the payment account (not written)."""
    with _tokenizing_refusals():
        tokenized = await processor.tokenize_card(tenant, card)
    return _one_off(tenant, tokenized, account)


def _one_off(tenant: Tenant, tokenized: TokenizedCard, account: str | None) -> PaymentMethod:
    # its row is written by a driver statement (`UnsavedCard`): built without the instrumented
    # constructor, whose attribute events and instance state serve a session that never sees it
    return from_row(
        PaymentMethod,
        {
            "id": new_id("pm"),
            "installation_id": tenant.installation_id,
            "livemode": tenant.livemode,
            "customer_id": None,
            "merchant_id": account,
            "processor_token": tokenized.token,
            "brand": tokenized.brand,
            "last4": tokenized.last4,
            "exp_month": tokenized.exp_month,
            "exp_year": tokenized.exp_year,
            "fingerprint": tokenized.fingerprint,
            "preferred": False,
            "detached_at": None,
        },
    )


async def attach_to_customer(
    session: AsyncSession, tenant: Tenant, method: PaymentMethod, customer_id: str
) -> PaymentMethod:
    """Keep a one-off method for the customer (after a payment the customer consented to save).

    The same card already saved for the customer: that method is answered and `method` stays one-off.
    A method attached to another customer, or detached: 409 resource_state_invalid.
    """
    if method.customer_id == customer_id and method.detached_at is None:
        return method
    if method.customer_id is not None or method.detached_at is not None:
        raise Conflict(
            f"Payment method {method.id!r} belongs to another customer or was detached.",
            param="payment_method",
        )
    await _require_referenced_customer(session, tenant, customer_id)
    await repository.lock_customer_methods(session, customer_id)
    saved = await repository.find_attached_by_fingerprint(
        session, tenant, customer_id, method.fingerprint, merchant_id=method.merchant_id
    )
    if saved is not None:
        return saved
    method.customer_id = customer_id
    method.preferred = await repository.preferred_id(session, tenant, customer_id) is None
    await session.flush()
    return method


async def usable_method(
    session: AsyncSession,
    tenant: Tenant,
    payment_method_id: str,
    *,
    customer_id: str | None,
    account: str | None = None,
    param: str = "payment_method",
) -> PaymentMethod:
    """A method that may be charged for this customer on this payment account: attached to it, not
    detached, and saved on that account.

    `customer_id` None: only a one-off method (attached to nobody). Anything else, including a method of
    another customer, tenant, environment or payment account: 400 resource_missing naming `param`.
    """
    method = await repository.get_method(session, tenant, payment_method_id)
    if (
        method is None
        or method.detached_at is not None
        or method.customer_id != customer_id
        or method.merchant_id != account
    ):
        raise ReferencedResourceMissing(f"No such payment method: {payment_method_id!r}", param=param)
    return method


async def get_method(session: AsyncSession, tenant: Tenant, payment_method_id: str) -> PaymentMethod | None:
    """Any method of the tenant, detached or not: for rendering what a payment used."""
    return await repository.get_method(session, tenant, payment_method_id)


async def methods_by_id(
    session: AsyncSession, tenant: Tenant, method_ids: Sequence[str]
) -> dict[str, PaymentMethod]:
    """`get_method` for several: the tenant's methods among these ids, detached or not."""
    return await repository.methods_by_id(session, tenant, method_ids)


async def preferred_methods(
    session: AsyncSession, tenant: Tenant, customer_ids: Sequence[str]
) -> dict[str, PaymentMethod]:
    """`preferred_method_id` for several customers at once: the preferred attached card of each."""
    return await repository.preferred_of_customers(session, tenant, customer_ids)


async def saved_methods(
    session: AsyncSession, tenant: Tenant, customer_id: str, *, account: str | None = None
) -> list[PaymentMethod]:
    """The customer's attached cards on one payment account, the preferred one first, then newest first."""
    return list(await repository.attached_preferred_first(session, tenant, customer_id, merchant_id=account))


# The customer's cards, through the API ----------------------------------------------------------


@dataclass(frozen=True)
class CustomerMethods:
    methods: Sequence[PaymentMethod]  # one page, fetched with limit + 1
    preferred_id: str | None


async def list_customer_methods(
    session: AsyncSession, tenant: Tenant, customer_id: str, *, limit: int, after: Position | None
) -> CustomerMethods:
    await customers.get_customer(session, tenant, customer_id)
    return await _customer_methods(session, tenant, customer_id, limit=limit, after=after)


async def detach(
    session: AsyncSession, tenant: Tenant, customer_id: str, payment_method_id: str
) -> PaymentMethod:
    """The card leaves the customer; the row stays for the payments that used it."""
    await customers.get_customer(session, tenant, customer_id)
    await repository.lock_customer_methods(session, customer_id)
    method = await _attached_method(session, tenant, customer_id, payment_method_id)
    method.detached_at = utcnow()
    method.preferred = False  # detaching the preferred card leaves none preferred
    await session.flush()
    return method


async def preferred_method_id(session: AsyncSession, tenant: Tenant, customer_id: str) -> str | None:
    """The customer's preferred saved card: the one recurring charges use."""
    return await repository.preferred_id(session, tenant, customer_id)


async def set_preferred(
    session: AsyncSession, tenant: Tenant, customer_id: str, payment_method_id: str
) -> PaymentMethod:
    await customers.get_customer(session, tenant, customer_id)
    await repository.lock_customer_methods(session, customer_id)
    method = await _attached_method(session, tenant, customer_id, payment_method_id)
    if not method.preferred:
        await repository.clear_preferred(session, tenant, customer_id)  # before: a unique index guards it
        method.preferred = True
        await session.flush()
    return method


# Setup intents ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class IssuedSetupIntent:
    setup_intent: SetupIntent
    client_secret: str  # shown once, never stored


async def create_setup_intent(
    session: AsyncSession, tenant: Tenant, customer_id: str, *, metadata: dict[str, Any]
) -> IssuedSetupIntent:
    await customers.get_customer(session, tenant, customer_id)
    setup_intent_id = new_id("seti")
    client_secret = new_client_secret(setup_intent_id)
    setup_intent = SetupIntent(
        id=setup_intent_id,
        installation_id=tenant.installation_id,
        livemode=tenant.livemode,
        customer_id=customer_id,
        status="requires_payment_method",
        usage="off_session",
        client_secret_hash=hash_secret(client_secret),
        metadata_=metadata,
        expires_at=await tenant_now(session, tenant) + SETUP_INTENT_LIFETIME,
    )
    await repository.add(session, setup_intent)
    return IssuedSetupIntent(setup_intent, client_secret)


def _move_setup_intent(setup_intent: SetupIntent, status: str) -> None:
    states.move(setup_intent, status, SETUP_INTENT_TRANSITIONS, "A setup intent")


def _abandon(setup_intent: SetupIntent) -> None:
    _move_setup_intent(setup_intent, "canceled")
    setup_intent.cancellation_reason = "abandoned"


async def _expired(session: AsyncSession, tenant: Tenant, setup_intent: SetupIntent) -> bool:
    """Past its expiry unconfirmed: already abandoned, or waiting still with `expires_at` passed."""
    if setup_intent.status == "canceled":
        return setup_intent.cancellation_reason == "abandoned"
    return setup_intent.status == "requires_payment_method" and (
        await tenant_now(session, tenant) >= setup_intent.expires_at
    )


async def get_setup_intent(session: AsyncSession, tenant: Tenant, setup_intent_id: str) -> SetupIntent:
    """The setup intent as it stands: one found past its expiry before the sweep came by is abandoned
    now, so a read never shows as confirmable what a confirmation would refuse."""
    setup_intent = await repository.get_setup_intent(session, tenant, setup_intent_id)
    if setup_intent is None:
        raise ResourceMissing(f"No such setup intent: {setup_intent_id!r}", param="setup_intent")
    if setup_intent.status == "requires_payment_method" and await _expired(session, tenant, setup_intent):
        # under the row lock: a confirmation in flight (it checked the expiry before it) finishes first,
        # and the card it saved is shown, not hidden behind a cancellation
        locked = await repository.get_setup_intent(session, tenant, setup_intent_id, for_update=True)
        assert locked is not None  # rows are never deleted
        if locked.status == "requires_payment_method":
            _abandon(locked)
            await session.flush()
            logger.info("setup_intent_abandoned", setup_intent=locked.id, on="read")
        return locked
    return setup_intent


async def confirm_setup_intent(
    session: AsyncSession,
    tenant: Tenant,
    processor: Processor,
    setup_intent_id: str,
    *,
    client_secret: str,
    card: CardInput | None,
) -> SetupIntent:
    """Client-side: the client_secret authorizes; the card (typed, or the processor's token) is saved
    for the intent's customer."""
    if card is None:
        raise ParameterMissing(
            "Confirming needs the card: card_token (or card, on the simulator).", param="card"
        )
    setup_intent = await repository.get_setup_intent(session, tenant, setup_intent_id, for_update=True)
    if setup_intent is None:
        raise ResourceMissing(f"No such setup intent: {setup_intent_id!r}", param="setup_intent")
    if not _secret_matches(client_secret, setup_intent.client_secret_hash):
        raise ClientSecretInvalid(
            "The client_secret does not belong to this setup intent.", param="client_secret"
        )
    if await _expired(session, tenant, setup_intent):
        raise Conflict(
            "This setup intent expired unconfirmed (canceled, cancellation_reason abandoned); create a "
            "new one."
        )
    if setup_intent.status != "requires_payment_method":
        raise Conflict(
            f"This setup intent is {setup_intent.status}; only one that requires a payment method "
            "can be confirmed."
        )
    method = await save_card(session, tenant, processor, card, customer_id=setup_intent.customer_id)
    _move_setup_intent(setup_intent, "succeeded")
    setup_intent.payment_method_id = method.id
    await session.flush()
    return setup_intent


async def _abandon_due(
    session: AsyncSession, *, tenant: Tenant | None, livemode: bool | None, now: datetime
) -> int:
    due = await repository.due_setup_intents(
        session, tenant=tenant, livemode=livemode, now=now, limit=SWEEP_BATCH
    )
    for setup_intent in due:
        _abandon(setup_intent)
        logger.info("setup_intent_abandoned", setup_intent=setup_intent.id, on="sweep")
    await session.flush()
    return len(due)


async def abandon_due_setup_intents(session: AsyncSession, tenant: Tenant, now: datetime) -> int:
    """Due work of a sandbox clock advance: the tenant's setup intents past expiry at `now`."""
    return await _abandon_due(session, tenant=tenant, livemode=None, now=now)


async def sweep_setup_intents(session: AsyncSession) -> int:
    """The scheduler's sweep: live setup intents on real time, each sandbox on its own clock."""
    abandoned = await _abandon_due(session, tenant=None, livemode=True, now=utcnow())
    for installation_id in await repository.installations_with_waiting_sandbox_setup_intents(
        session, SWEEP_SANDBOXES
    ):
        sandbox = Tenant(installation_id, False)
        abandoned += await abandon_due_setup_intents(session, sandbox, await tenant_now(session, sandbox))
    return abandoned


register_periodic("payment_methods.setup_intent_expiry", timedelta(seconds=60), sweep_setup_intents)
register_due_work("payment_methods.setup_intent_expiry", abandon_due_setup_intents)


# Customer sessions -----------------------------------------------------------------------------


@dataclass(frozen=True)
class IssuedCustomerSession:
    customer_session: CustomerSession
    client_secret: str  # shown once, never stored


async def create_customer_session(
    session: AsyncSession, tenant: Tenant, customer_id: str
) -> IssuedCustomerSession:
    await customers.get_customer(session, tenant, customer_id)
    customer_session_id = new_id("cuss")
    client_secret = new_client_secret(customer_session_id)
    customer_session = CustomerSession(
        id=customer_session_id,
        installation_id=tenant.installation_id,
        livemode=tenant.livemode,
        customer_id=customer_id,
        client_secret_hash=hash_secret(client_secret),
        expires_at=await tenant_now(session, tenant) + CUSTOMER_SESSION_LIFETIME,
    )
    await repository.add(session, customer_session)
    return IssuedCustomerSession(customer_session, client_secret)


async def customer_session_methods(
    session: AsyncSession,
    tenant: Tenant,
    customer_session_id: str,
    *,
    client_secret: str,
    limit: int,
    after: Position | None,
) -> CustomerMethods:
    """Client-side: the saved cards of the session's customer, while the session lasts."""
    customer_session = await repository.get_customer_session(session, tenant, customer_session_id)
    if customer_session is None:
        raise ResourceMissing(f"No such customer session: {customer_session_id!r}", param="customer_session")
    if not _secret_matches(client_secret, customer_session.client_secret_hash):
        raise ClientSecretInvalid(
            "The client_secret does not belong to this customer session.", param="client_secret"
        )
    if await tenant_now(session, tenant) >= customer_session.expires_at:
        raise Conflict("This customer session has expired; ask your server for a new one.")
    return await _customer_methods(session, tenant, customer_session.customer_id, limit=limit, after=after)


@dataclass(frozen=True)
class CustomerSheetSession:
    customer_session: IssuedCustomerSession
    setup_intent: IssuedSetupIntent
    publishable_key: str

    @property
    def expires_at(self) -> datetime:
        return min(
            self.customer_session.customer_session.expires_at, self.setup_intent.setup_intent.expires_at
        )


async def create_customer_sheet_session(
    session: AsyncSession, tenant: Tenant, customer_id: str
) -> CustomerSheetSession:
    """A customer session and a setup intent together: what a native customer sheet starts with."""
    account = await get_account(session, tenant)
    if account.publishable_key is None:
        raise Conflict("This environment has no active publishable key for a client to use.")
    customer_session = await create_customer_session(session, tenant, customer_id)
    setup_intent = await create_setup_intent(session, tenant, customer_id, metadata={})
    return CustomerSheetSession(customer_session, setup_intent, account.publishable_key)


# ------------------------------------------------------------------------------------------------


async def _require_referenced_customer(session: AsyncSession, tenant: Tenant, customer_id: str) -> None:
    """A customer named in a body: one the tenant cannot see is 400 resource_missing `customer`."""
    try:
        await customers.get_customer(session, tenant, customer_id)
    except ResourceMissing as missing:
        raise ReferencedResourceMissing(missing.message, param="customer") from None


async def _attached_method(
    session: AsyncSession, tenant: Tenant, customer_id: str, payment_method_id: str
) -> PaymentMethod:
    method = await repository.get_attached(session, tenant, customer_id, payment_method_id)
    if method is None:
        raise ResourceMissing(f"No such payment method: {payment_method_id!r}", param="payment_method")
    return method


async def _customer_methods(
    session: AsyncSession, tenant: Tenant, customer_id: str, *, limit: int, after: Position | None
) -> CustomerMethods:
    methods = await repository.attached_page(session, tenant, customer_id, limit=limit, after=after)
    return CustomerMethods(methods, await repository.preferred_id(session, tenant, customer_id))
