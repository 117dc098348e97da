"""The hosted checkout page: what it shows, and paying, returning from the bank and leaving it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.billing import service as billing
from moneyrail.billing.service import changes as billing_changes
from moneyrail.checkout import repository
from moneyrail.checkout.schemas import CheckoutPaymentForm
from moneyrail.engine.clock import tenant_now
from moneyrail.errors import (
    CardDeclined,
    Conflict,
    InvalidRequest,
    ParameterInvalid,
    ParameterMissing,
    PaymentDeclined,
    ProcessorNotConfigured,
    ProcessorUnavailableError,
)
from moneyrail.installations import service as installations
from moneyrail.kit.crypto import hash_secret
from moneyrail.kit.tenant import Tenant
from moneyrail.models import CheckoutSession, PaymentIntent
from moneyrail.payment_methods import service as methods
from moneyrail.payment_methods.schemas import PROCESSOR_CARD_TOKEN_PATTERN
from moneyrail.payments import service as payments
from moneyrail.payments.schemas import authentication_url
from moneyrail.processor import provider
from moneyrail.processor import settings as processor_choice
from moneyrail.processor.interface import CardDetails, CardInput, CardToken, Processor

from .sessions import PAID, _complete, return_url

logger = structlog.get_logger("moneyrail.checkout")


# --- the hosted page ------------------------------------------------------------------------------
@dataclass(frozen=True)
class CardEntry:
    """Where the payer types a new card: the page's own fields (`processor_fields` False: the sandbox
    simulator, which takes card numbers), or the processor's (Stripe.js, with the environment's
    `publishable_key`; None when the operator has not set one, and then no new card can be taken)."""

    processor_fields: bool
    publishable_key: str | None = None


TYPED_CARD = CardEntry(processor_fields=False)


async def card_entry(session: AsyncSession, tenant: Tenant) -> CardEntry:
    if await provider.uses_simulator(session, tenant):
        return TYPED_CARD
    chosen = await processor_choice.processor_settings(session, tenant)
    return CardEntry(processor_fields=True, publishable_key=chosen.publishable_key)


@dataclass(frozen=True)
class SavedCard:
    id: str
    brand: str
    last4: str
    exp_month: int
    exp_year: int
    preferred: bool


@dataclass(frozen=True)
class CheckoutView:
    """What the page shows: decided here, on the server (the amount is the payment's, never the form's)."""

    title: str
    seller: str
    amount: int
    currency: str
    saved_cards: list[SavedCard]
    can_save_card: bool  # a payment with a customer may keep a new card, with the payer's consent
    success_url: str
    cancel_url: str
    livemode: bool
    # a subscription: how often it renews ("every month"); the page asks consent to save and renew
    frequency: str | None = None
    renewal_amount: int | None = None  # a change's difference: what each renewal costs afterwards
    card_entry: CardEntry = TYPED_CARD


@dataclass(frozen=True)
class PaymentForm:
    view: CheckoutView
    error: str | None = None
    problem: Literal["declined", "invalid", "unavailable"] | None = None
    chosen: str | None = None  # what the payer picked last time (`new` or a saved card), to pick again


@dataclass(frozen=True)
class Redirect:
    url: str


@dataclass(frozen=True)
class Notice:
    """The page cannot take a card: the link names nothing, or the session is over, or the payment is."""

    reason: Literal["missing", "expired", "complete", "canceled", "processing", "returned", "authenticating"]


@dataclass(frozen=True)
class ChangeConfirmation:
    """A next_cycle change's page: nothing is charged now; the payer confirms the new terms, which apply
    at the renewal (spec 4.M rule 5: a confirmation of the change, not of a charge)."""

    title: str
    seller: str
    amount: int  # the new cycle total, from the renewal on
    currency: str
    frequency: str
    applies_at: datetime
    success_url: str
    cancel_url: str
    livemode: bool
    error: str | None = None


PageStep = PaymentForm | Redirect | Notice | ChangeConfirmation


@dataclass(frozen=True)
class _Loaded:
    checkout: CheckoutSession
    tenant: Tenant
    payment: PaymentIntent


@dataclass(frozen=True)
class _ChangeOnly:
    """A next_cycle change's session: it takes no payment, its page confirms the change."""

    checkout: CheckoutSession


async def _load_any(session: AsyncSession, token: str) -> _Loaded | Notice | _ChangeOnly:
    """The session the link names and its payment, both locked for this request (session first)."""
    checkout = await repository.get_by_token_hash(session, hash_secret(token))
    if checkout is not None and checkout.payment_intent_id is None and checkout.change_id is not None:
        return _ChangeOnly(checkout)
    if checkout is None or checkout.payment_intent_id is None:
        return Notice("missing")
    tenant = Tenant(checkout.installation_id, checkout.livemode)
    payment = await payments.lock_payment_intent(session, tenant, checkout.payment_intent_id)
    return _Loaded(checkout, tenant, payment)


async def _load(session: AsyncSession, token: str) -> _Loaded | Notice:
    loaded = await _load_any(session, token)
    return Notice("missing") if isinstance(loaded, _ChangeOnly) else loaded


def _authentication_url(payment: PaymentIntent) -> str | None:
    return authentication_url(payment)  # stored sealed: payments/schemas.py opens it


async def _settled(session: AsyncSession, loaded: _Loaded, *, when_complete: PageStep) -> PageStep | None:
    """Where a payer goes when the session cannot take a card now; None when the form is due."""
    checkout, payment = loaded.checkout, loaded.payment
    if checkout.status == "complete":
        return when_complete
    if checkout.status == "expired":
        return Notice("expired")
    if payment.status in PAID:  # paid meanwhile (the bank's page, a double click): the truth wins
        await _complete(session, loaded.tenant, checkout)
        return Redirect(checkout.success_url)
    if await tenant_now(session, loaded.tenant) >= checkout.expires_at:
        return Notice("expired")  # whatever the sweep did
    if payment.status == "requires_action":
        if not await provider.uses_simulator(session, loaded.tenant):
            # confirmed elsewhere (the API) and waiting for Stripe.js's authentication, not this page's
            return Notice("authenticating")
        url = _authentication_url(payment)
        return Redirect(url) if url is not None else Notice("processing")
    if payment.status == "canceled":
        return Notice("canceled")
    if payment.status not in payments.CONFIRMABLE:
        return Notice("processing")
    return None


async def _view(session: AsyncSession, loaded: _Loaded) -> CheckoutView:
    checkout, payment, tenant = loaded.checkout, loaded.payment, loaded.tenant
    installation = await installations.require_installation(session, tenant.installation_id)
    cards: list[SavedCard] = []
    if payment.customer_id is not None:  # an anonymous checkout sees no saved methods (spec 4.N rule 6)
        cards = [
            SavedCard(m.id, m.brand, m.last4, m.exp_month, m.exp_year, m.preferred)
            for m in await methods.saved_methods(
                session,
                tenant,
                payment.customer_id,
                account=await methods.payment_account(session, tenant, payment.merchant_id),
            )
        ]
    seller, frequency, renewal_amount = installation.name, None, None
    if checkout.subscription_id is not None and checkout.change_id is not None:
        terms = await billing_changes.confirmation_terms(
            session, tenant, checkout.subscription_id, checkout.change_id
        )
        seller, frequency, renewal_amount = terms.seller, terms.frequency, terms.amount
    elif checkout.subscription_id is not None:
        shown = await billing.checkout_display(session, tenant, checkout.subscription_id)
        seller, frequency = shown.seller, shown.frequency
    return CheckoutView(
        title=checkout.title,
        seller=seller,
        frequency=frequency,
        renewal_amount=renewal_amount,
        amount=payment.amount,
        currency=payment.currency,
        saved_cards=cards,
        can_save_card=payment.customer_id is not None,
        success_url=checkout.success_url,
        cancel_url=checkout.cancel_url,
        livemode=checkout.livemode,
        card_entry=await card_entry(session, tenant),
    )


async def _change_confirmation(
    session: AsyncSession, checkout: CheckoutSession, *, error: str | None = None
) -> ChangeConfirmation:
    tenant = Tenant(checkout.installation_id, checkout.livemode)
    assert checkout.subscription_id is not None and checkout.change_id is not None
    shown = await billing_changes.confirmation_terms(
        session, tenant, checkout.subscription_id, checkout.change_id
    )
    return ChangeConfirmation(
        title=checkout.title,
        seller=shown.seller,
        amount=shown.amount,
        currency=shown.currency,
        frequency=shown.frequency,
        applies_at=shown.applies_at,
        success_url=checkout.success_url,
        cancel_url=checkout.cancel_url,
        livemode=checkout.livemode,
        error=error,
    )


async def _change_step(
    session: AsyncSession, checkout: CheckoutSession, *, confirm: bool, consented: bool
) -> PageStep:
    """A next_cycle change's session (it takes no payment): the confirmation page, or, on its form's post
    with the payer's consent, the change accepted and the session complete."""
    tenant = Tenant(checkout.installation_id, checkout.livemode)
    if checkout.status == "complete":
        return Redirect(checkout.success_url) if confirm else Notice("complete")
    if checkout.status == "expired" or await tenant_now(session, tenant) >= checkout.expires_at:
        return Notice("expired")
    assert checkout.change_id is not None
    if not confirm:
        return await _change_confirmation(session, checkout)
    if not consented:
        return await _change_confirmation(
            session, checkout, error="To change your subscription, agree to the new terms."
        )
    try:
        async with session.begin_nested():
            await billing_changes.accept_change(session, tenant, checkout.change_id)
    except Conflict:  # expired meanwhile, or withdrawn: the page says so, nothing changes
        return Notice("expired")
    await _complete(session, tenant, checkout)
    return Redirect(checkout.success_url)


async def show_checkout(session: AsyncSession, token: str) -> PageStep:
    """GET of the page: the form, or where the payer belongs now."""
    loaded = await _load_any(session, token)
    if isinstance(loaded, _ChangeOnly):
        return await _change_step(session, loaded.checkout, confirm=False, consented=False)
    if isinstance(loaded, Notice):
        return loaded
    step = await _settled(session, loaded, when_complete=Notice("complete"))
    return step if step is not None else PaymentForm(await _view(session, loaded))


async def return_from_authentication(session: AsyncSession, token: str) -> PageStep:
    """The bank's page sent the payer back. Its query string says how it went; only the payment's own
    status is believed."""
    loaded = await _load(session, token)
    if isinstance(loaded, Notice):
        return loaded
    step = await _settled(session, loaded, when_complete=Redirect(loaded.checkout.success_url))
    if step is not None:
        return step
    error = (loaded.payment.last_payment_error or {}).get("message")
    return PaymentForm(
        await _view(session, loaded),
        error=str(error) if error else None,
        problem="declined" if error else None,
    )


async def payment_of_link(session: AsyncSession, token: str) -> tuple[Tenant, str] | None:
    """The tenant and payment a link names (None: none), so the page chooses the tenant's processor, and
    runs the payer's attempt in atomic phases on an outside one (payments/phases.py)."""
    checkout = await repository.get_by_token_hash(session, hash_secret(token))
    if checkout is None or checkout.payment_intent_id is None:
        return None
    return Tenant(checkout.installation_id, checkout.livemode), checkout.payment_intent_id


async def checkout_id_for(session: AsyncSession, token: str) -> str | None:
    checkout = await repository.get_by_token_hash(session, hash_secret(token))
    return checkout.id if checkout is not None else None


async def return_without_link(session: AsyncSession, checkout_id: str) -> PageStep:
    """A return from the bank in a browser that lost the payer's link (another browser, cookies
    cleared): only a paid payment moves anything, and then only to the caller's success_url."""
    checkout = await repository.get_by_id_any_tenant(session, checkout_id)
    if checkout is None or checkout.payment_intent_id is None:
        return Notice("missing")
    tenant = Tenant(checkout.installation_id, checkout.livemode)
    payment = await payments.lock_payment_intent(session, tenant, checkout.payment_intent_id)
    step = await _settled(
        session, _Loaded(checkout, tenant, payment), when_complete=Redirect(checkout.success_url)
    )
    if isinstance(step, Redirect) and step.url == checkout.success_url:
        return step
    return Notice("returned")


async def leave_checkout(session: AsyncSession, token: str) -> PageStep:
    """The payer cancels: back to the caller's cancel_url. The session stays open until it expires, so
    the browser's back button still finds the form."""
    checkout = await repository.get_by_token_hash(session, hash_secret(token))
    if checkout is None:
        return Notice("missing")
    if checkout.status == "complete":
        return Redirect(checkout.success_url)
    tenant = Tenant(checkout.installation_id, checkout.livemode)
    if checkout.status == "expired" or await tenant_now(session, tenant) >= checkout.expires_at:
        return Notice("expired")
    return Redirect(checkout.cancel_url)


AUTHENTICATION_NOT_RUN = (
    "Your bank asks you to confirm this payment in its own check (3-D Secure), which this page cannot "
    "show. Nothing was charged: pay with another card, or return to the shop."
)


async def _let_authentication_go(
    session: AsyncSession, processor: Processor, loaded: _Loaded, *, base_url: str
) -> PageStep:
    """Stripe asks for bank authentication, which runs in Stripe.js's own `handleCardAction`, not in this
    page (see the module's docstring): the authorization is let go at Stripe, the payment declined
    (authentication_failed), and the form says why and takes another card."""
    try:
        async with session.begin_nested():
            await payments.abandon_authentication(
                session, loaded.tenant, processor, loaded.payment, base_url=base_url
            )
    except (ProcessorUnavailableError, ProcessorNotConfigured):
        return Notice("authenticating")  # still waiting at Stripe: the page says so; the sweep expires it
    logger.info("checkout_authentication_not_run", checkout_session=loaded.checkout.id)
    return PaymentForm(
        await _view(session, loaded), error=AUTHENTICATION_NOT_RUN, problem="declined", chosen="new"
    )


_CARD_NUMBER_SEPARATORS = re.compile(r"[\s-]")


def _card(form: CheckoutPaymentForm) -> CardDetails:
    """The card fields as typed. Whether the number is a card is the network's answer; only the shape
    is checked here, so that a typo is not recorded as a decline."""
    number = _CARD_NUMBER_SEPARATORS.sub("", form.card_number or "")
    if not number:
        raise ParameterMissing("Enter the card number.", param="card_number")
    if not re.fullmatch(r"[0-9]{12,19}", number):
        raise ParameterInvalid("The card number should be 12 to 19 digits.", param="card_number")
    month = form.exp_month or ""
    if not re.fullmatch(r"[0-9]{1,2}", month) or not 1 <= int(month) <= 12:
        raise ParameterInvalid("Enter the expiry month as a number from 1 to 12.", param="exp_month")
    year = form.exp_year or ""
    if not re.fullmatch(r"[0-9]{2}|[0-9]{4}", year):
        raise ParameterInvalid("Enter the expiry year, such as 2030.", param="exp_year")
    cvc = form.cvc or ""
    if not re.fullmatch(r"[0-9]{3,4}", cvc):
        raise ParameterInvalid("Enter the 3 or 4 digit security code (CVC).", param="cvc")
    full_year = int(year) + 2000 if len(year) == 2 else int(year)
    return CardDetails(number=number, exp_month=int(month), exp_year=full_year, cvc=cvc)


TYPED_CARD_REFUSED = (
    "Card numbers are not accepted on this page: type your card into the card field, which sends it to "
    "the card processor directly. Nothing was charged."
)


def _processor_card(form: CheckoutPaymentForm) -> CardToken:
    """The token the processor's own fields (Stripe.js) made of the card in the payer's browser."""
    token = form.card_token or ""
    if not token:
        raise ParameterMissing("Enter your card details in the card field.", param="card_token")
    if not re.fullmatch(PROCESSOR_CARD_TOKEN_PATTERN, token):
        raise ParameterInvalid(
            "The card field's answer was not understood. Nothing was charged; enter your card again.",
            param="card_token",
        )
    return CardToken(token)


def _confirmation(
    form: CheckoutPaymentForm,
    payment: PaymentIntent,
    back: str,
    *,
    recurring: bool,
    ip_address: str | None,
    entry: CardEntry,
) -> payments.Confirmation:
    if entry.processor_fields and (form.card_number or form.exp_month or form.exp_year or form.cvc):
        # card data where only the processor may take it: refused before anything is asked of anyone
        raise ParameterInvalid(TYPED_CARD_REFUSED, param="card_number")
    if recurring and not form.renew_consent:
        raise ParameterMissing(
            "To subscribe, agree to save your card and to be charged at each renewal.", param="renew_consent"
        )
    choice = form.payment_method or "new"
    if choice != "new":
        if payment.customer_id is None:
            raise ParameterInvalid("Choose how to pay.", param="payment_method")
        return payments.Confirmation(payment_method=choice, return_url=back, ip_address=ip_address)
    card: CardInput = _processor_card(form) if entry.processor_fields else _card(form)
    return payments.Confirmation(
        card=card,
        # a subscription's consent covers keeping the card: renewals charge it
        save_payment_method=(form.save_card or recurring) and payment.customer_id is not None,
        return_url=back,
        ip_address=ip_address,
    )


async def pay_checkout(
    session: AsyncSession,
    processor: Processor,
    token: str,
    form: CheckoutPaymentForm,
    *,
    base_url: str,
    ip_address: str | None = None,
) -> PageStep:
    """The payer pressed Pay. The session's lock, then the payment's, make a double click or a reload
    wait for the first attempt and then find the payment paid: it is never charged twice. `ip_address`
    is where the page's request came from, screened against the risk lists."""
    loaded = await _load_any(session, token)
    if isinstance(loaded, _ChangeOnly):
        return await _change_step(session, loaded.checkout, confirm=True, consented=form.renew_consent)
    if isinstance(loaded, Notice):
        return loaded
    step = await _settled(session, loaded, when_complete=Redirect(loaded.checkout.success_url))
    if step is not None:
        return step
    entry = await card_entry(session, loaded.tenant)
    try:
        confirmation = _confirmation(
            form,
            loaded.payment,
            return_url(base_url, loaded.checkout.id),
            recurring=loaded.checkout.subscription_id is not None,
            ip_address=ip_address,
            entry=entry,
        )
    except InvalidRequest as invalid:
        if invalid.message == TYPED_CARD_REFUSED:
            logger.info("checkout_typed_card_refused", checkout_session=loaded.checkout.id)
        return PaymentForm(
            await _view(session, loaded), error=invalid.message, problem="invalid", chosen=form.payment_method
        )

    declined: PaymentDeclined | None = None
    try:
        async with session.begin_nested():  # a refusal other than a decline leaves nothing behind
            if loaded.checkout.subscription_id is not None:
                await billing.record_renewal_consent(session, loaded.tenant, loaded.checkout.subscription_id)
            try:
                await payments.confirm_locked_payment(
                    session, loaded.tenant, processor, loaded.payment, confirmation, base_url=base_url
                )
            except PaymentDeclined as error:
                declined = error  # the decline is recorded on the payment: it stays
    except (InvalidRequest, Conflict, CardDeclined, ProcessorUnavailableError) as refused:
        problem: Literal["invalid", "unavailable"] = (
            "unavailable" if isinstance(refused, ProcessorUnavailableError | CardDeclined) else "invalid"
        )
        message = (
            "The card could not be processed just now. Nothing was charged; please try again."
            if problem == "unavailable"
            else "That payment method cannot be used here. Choose another one."
        )
        again = await _load(session, token)
        if isinstance(again, Notice):
            return again
        logger.info("checkout_attempt_refused", checkout_session=again.checkout.id, code=refused.code)
        return PaymentForm(await _view(session, again), error=message, problem=problem, chosen="new")

    if declined is not None:
        return PaymentForm(
            await _view(session, loaded),
            error=declined.message,
            problem="declined",
            chosen=form.payment_method,
        )
    if entry.processor_fields and loaded.payment.status == "requires_action":
        return await _let_authentication_go(session, processor, loaded, base_url=base_url)
    step = await _settled(session, loaded, when_complete=Redirect(loaded.checkout.success_url))
    if step is not None:
        return step
    return PaymentForm(await _view(session, loaded))  # not reached with the sandbox's outcomes
