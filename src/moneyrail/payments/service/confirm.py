"""Confirming a payment (by its client secret, or a hosted page on the payer's behalf) and charging saved
cards off session; an authorization's answer applied to the payment."""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from functools import partial
from typing import Any

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.db.raw import AnsweringClaim
from moneyrail.engine.clock import tenant_now
from moneyrail.errors import (
    CardDeclined,
    ClientSecretInvalid,
    Conflict,
    ParameterInvalid,
    ParameterMissing,
    ParametersExclusive,
)
from moneyrail.kit import crypto
from moneyrail.kit.crypto import hash_secret
from moneyrail.kit.ids import random_base62
from moneyrail.kit.tenant import Tenant
from moneyrail.models import PaymentIntent, PaymentMethod
from moneyrail.payment_methods import service as methods
from moneyrail.payment_methods.schemas import card_input
from moneyrail.payments.schemas import PaymentIntentConfirm
from moneyrail.processor.interface import (
    Authorization,
    AuthorizationRequest,
    ChargeAnswer,
    OffSessionCharge,
    Processor,
    ProcessorRefused,
    ProcessorUnavailable,
    authorize_as_asked,
)

from .answers import _authorization_or_decline, _decline, _declined_error, _unavailable
from .capture import _capture, _capture_key_of, _captured_together, _mark_captured
from .hooks import HELD_FOR_REVIEW, Confirmation, RiskVerdict, _facts_of, _follow, _risk_verdicts, held_among
from .state import CONFIRMABLE, StepAnswer, _locked_claiming, _move, announce

logger = structlog.get_logger("moneyrail.payments")


# --- confirming ---------------------------------------------------------------------------------
def _check_client_secret(payment: PaymentIntent, client_secret: str) -> None:
    if hash_secret(client_secret) != payment.client_secret_hash:
        raise ClientSecretInvalid("The client_secret does not belong to this payment.", param="client_secret")


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
        _mark_captured(payment, answer.capture.amount_captured, now)
        captured.append(payment)
    if captured:
        await _captured_together(session, tenant, captured)


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
