"""Authorizations on Stripe: payment intents (a hold, or a charge captured at once), setup intents
(the zero-amount card check that saving a card runs: Stripe takes no payment intent for 0), captures,
cancellations, increments, refunds, the real cost, and the orphan sweep's listing.

An authorization's id is the intent's (`pi_...`, `seti_...`). The intent is created and confirmed in
one call under the operation's key: Stripe answers a repeated key with its first answer (a decline
too), so a retried authorization is the same authorization. The calls that change an intent later
(capture, cancel) accept the state they were meant to reach as their answer, since Stripe forgets a
key after 24 hours and the engine may retry later than that.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import stripe

from moneyrail.kit.tenant import Tenant
from moneyrail.processor.interface import (
    Authorization,
    Capture,
    CostReport,
    ProcessorAuthorizationRecord,
    ProcessorRefused,
    ProcessorUnavailable,
    RefundResult,
)

from .cards import SavedCard
from .connection import (
    PAGE_SIZE,
    StripeConnection,
    fetched,
    items,
    keyed,
    metadata,
    nested,
    plain,
    reference,
    stamp,
    tenant_metadata,
    text,
    whole,
)
from .errors import decline_code_of, translated

AUTHENTICATION_FAILURE = "payment_intent_authentication_failure"  # Stripe's code; the sandbox's:
AUTHENTICATION_FAILED = "authentication_failed"
SETUP_PREFIX = "seti_"


async def authorize(
    connection: StripeConnection,
    tenant: Tenant,
    *,
    idempotency_key: str,
    card: SavedCard,
    fingerprint: str,
    amount: int,
    currency: str,
    off_session: bool,
    reference: str,
    capture_now: bool = False,
) -> Authorization:
    """Hold `amount` on the card (`capture_now`: take it at once, Stripe's automatic capture). A
    decline is answered (`declined`, Stripe's decline code), not raised; other refusals raise."""
    about = tenant_metadata(tenant, reference=reference, card_fingerprint=fingerprint)
    if amount == 0 and not capture_now:
        return await _check_card(connection, idempotency_key, card, about, off_session, currency)
    params: stripe.params.PaymentIntentCreateParams = {
        "amount": amount,
        "currency": currency,
        "payment_method": card.method,
        # the card given and no page to come back to: no payment method that redirects
        "automatic_payment_methods": {"enabled": True, "allow_redirects": "never"},
        "capture_method": "automatic" if capture_now else "manual",
        "confirm": True,
        "metadata": about,
    }
    if card.customer is not None:
        params["customer"] = card.customer
    if off_session:
        params["off_session"] = True
    elif not capture_now:
        params["payment_method_options"] = {"card": {"request_incremental_authorization": "if_available"}}
    try:
        intent = plain(await connection.v1.payment_intents.create_async(params, keyed(idempotency_key)))
    except stripe.CardError as declined:
        return _declined(declined, amount, currency)
    except stripe.StripeError as error:
        raise translated(error) from error
    return await _settled(connection, intent, idempotency_key, off_session, amount, currency)


async def _check_card(
    connection: StripeConnection,
    idempotency_key: str,
    card: SavedCard,
    about: dict[str, str],
    off_session: bool,
    currency: str,
) -> Authorization:
    """The zero-amount check: a setup intent, created then confirmed (two keyed calls, as a
    Stripe-compatible test server takes no payment method at creation)."""
    params: stripe.params.SetupIntentCreateParams = {
        "automatic_payment_methods": {"enabled": True, "allow_redirects": "never"},
        "usage": "off_session",
        "metadata": about,
    }
    if card.customer is not None:
        params["customer"] = card.customer
    setup = await fetched(connection.v1.setup_intents.create_async(params, keyed(idempotency_key)))
    setup_id = text(setup, "id") or ""
    try:
        intent = plain(
            await connection.v1.setup_intents.confirm_async(
                setup_id, {"payment_method": card.method}, keyed(f"{idempotency_key}:confirm")
            )
        )
    except stripe.CardError as declined:
        return Authorization(setup_id, "declined", 0, currency, decline_code_of(declined))
    except stripe.StripeError as error:
        raise translated(error) from error
    return await _settled(connection, intent, idempotency_key, off_session, 0, currency)


async def _settled(
    connection: StripeConnection,
    intent: Mapping[str, Any],
    idempotency_key: str,
    off_session: bool,
    amount: int,
    currency: str,
) -> Authorization:
    if text(intent, "status") == "processing":  # a card settles at once: read it again, or retry later
        intent = await retrieve(connection, text(intent, "id") or "")
    answer = authorization_of(intent, amount, currency)
    if answer.status == "requires_action" and off_session:
        # no payer to send to the bank: Stripe declines such a charge itself; a test server that asks
        # for the authentication anyway gets its intent canceled, so nothing is left holding
        await cancel(connection, idempotency_key=f"{idempotency_key}:cancel", authorization_id=answer.id)
        return Authorization(answer.id, "declined", amount, currency, "authentication_required")
    return answer


def authorization_of(intent: Mapping[str, Any], amount: int, currency: str) -> Authorization:
    """A payment or setup intent as moneyrail's authorization."""
    intent_id = text(intent, "id") or ""
    status = text(intent, "status")
    held = whole(intent, "amount", amount)
    currency = text(intent, "currency") or currency
    if status in ("requires_capture", "succeeded"):
        return Authorization(intent_id, "authorized", held, currency)
    if status == "requires_action":
        action = nested(intent, "next_action") or {}
        redirect = nested(action, "redirect_to_url") or {}
        return Authorization(
            intent_id,
            "requires_action",
            held,
            currency,
            action_url=text(redirect, "url"),
            client_secret=text(intent, "client_secret"),
        )
    if status == "canceled":
        return Authorization(intent_id, "canceled", held, currency)
    if status == "requires_payment_method":
        error = nested(intent, "last_payment_error") or {}
        code = text(error, "decline_code") or text(error, "code") or "generic_decline"
        if code == AUTHENTICATION_FAILURE:
            code = AUTHENTICATION_FAILED
        return Authorization(intent_id, "declined", held, currency, code)
    raise ProcessorUnavailable(f"Stripe left the intent {status}; ask again.")


def _declined(declined: stripe.CardError, amount: int, currency: str) -> Authorization:
    """Stripe's 402 for a declined confirmation: the intent (when Stripe names it) is declined."""
    details = plain(declined.error)
    intent_id = reference(details, "payment_intent") or reference(details, "setup_intent") or ""
    return Authorization(intent_id, "declined", amount, currency, decline_code_of(declined))


async def retrieve(connection: StripeConnection, intent_id: str) -> Mapping[str, Any]:
    if intent_id.startswith(SETUP_PREFIX):
        return await fetched(connection.v1.setup_intents.retrieve_async(intent_id))
    return await fetched(
        connection.v1.payment_intents.retrieve_async(intent_id, {"expand": ["latest_charge"]})
    )


async def complete_authentication(
    connection: StripeConnection, *, idempotency_key: str, authorization_id: str, approved: bool
) -> Authorization:
    """The payer authenticated with the bank through Stripe itself (Stripe.js): Stripe's intent says
    how that went. Abandoned (`approved` false) while Stripe still waits: the intent is canceled."""
    intent = await retrieve(connection, authorization_id)
    answer = authorization_of(intent, whole(intent, "amount"), text(intent, "currency") or "")
    if answer.status == "requires_action" and not approved:
        await cancel(connection, idempotency_key=idempotency_key, authorization_id=authorization_id)
        return Authorization(answer.id, "declined", answer.amount, answer.currency, AUTHENTICATION_FAILED)
    return answer


async def capture(
    connection: StripeConnection, *, idempotency_key: str, authorization_id: str, amount: int
) -> Capture:
    if authorization_id.startswith(SETUP_PREFIX):
        raise ProcessorRefused("nothing_to_capture", "A card check holds no money to capture.")
    intent: Mapping[str, Any]
    try:
        intent = plain(
            await connection.v1.payment_intents.capture_async(
                authorization_id, {"amount_to_capture": amount}, keyed(idempotency_key)
            )
        )
    except stripe.InvalidRequestError as refused:
        intent = await retrieve(connection, authorization_id)
        if text(intent, "status") != "succeeded":  # not captured already (by an earlier attempt)
            raise translated(refused) from refused
    except stripe.StripeError as error:
        raise translated(error) from error
    return Capture(authorization_id, captured_amount(intent, amount))


def captured_amount(intent: Mapping[str, Any], fallback: int) -> int:
    received = whole(intent, "amount_received", -1)
    return received if received >= 0 else fallback


async def cancel(
    connection: StripeConnection, *, idempotency_key: str, authorization_id: str
) -> Authorization:
    intent: Mapping[str, Any]
    try:
        if authorization_id.startswith(SETUP_PREFIX):
            intent = await retrieve(connection, authorization_id)
            if text(intent, "status") in ("succeeded", "canceled"):  # nothing held
                return Authorization(authorization_id, "canceled", 0, "")
            intent = plain(
                await connection.v1.setup_intents.cancel_async(authorization_id, {}, keyed(idempotency_key))
            )
        else:
            intent = plain(
                await connection.v1.payment_intents.cancel_async(authorization_id, {}, keyed(idempotency_key))
            )
    except stripe.InvalidRequestError as refused:
        intent = await retrieve(connection, authorization_id)
        if text(intent, "status") != "canceled":
            raise translated(refused) from refused
    except stripe.StripeError as error:
        raise translated(error) from error
    return authorization_of(intent, whole(intent, "amount"), text(intent, "currency") or "")


async def increment_authorization(
    connection: StripeConnection, *, idempotency_key: str, authorization_id: str, amount: int
) -> Authorization:
    """Raise the hold to `amount`; a decline leaves the old hold, as the answer's amount says."""
    if authorization_id.startswith(SETUP_PREFIX):
        raise ProcessorRefused("nothing_to_increment", "A card check holds no money to increase.")
    try:
        intent = plain(
            await connection.v1.payment_intents.increment_authorization_async(
                authorization_id, {"amount": amount}, keyed(idempotency_key)
            )
        )
    except stripe.CardError as declined:
        held = await retrieve(connection, authorization_id)
        return Authorization(
            authorization_id,
            "declined",
            whole(held, "amount"),
            text(held, "currency") or "",
            decline_code_of(declined),
        )
    except stripe.StripeError as error:
        raise translated(error) from error
    return authorization_of(intent, amount, text(intent, "currency") or "")


async def refund(
    connection: StripeConnection, *, idempotency_key: str, authorization_id: str, amount: int
) -> RefundResult:
    if authorization_id.startswith(SETUP_PREFIX):
        raise ProcessorRefused("nothing_to_refund", "A card check took no money to refund.")
    refunded = await fetched(
        connection.v1.refunds.create_async(
            {"payment_intent": authorization_id, "amount": amount}, keyed(idempotency_key)
        )
    )
    return RefundResult(text(refunded, "id") or "", authorization_id, whole(refunded, "amount", amount))


def charge_of(intent: Mapping[str, Any]) -> Mapping[str, Any] | None:
    return nested(intent, "latest_charge")


async def cost_report(connection: StripeConnection, authorization_id: str) -> CostReport | None:
    """Stripe's fee for the payment, from the balance transaction of its charge: None until the
    payment is captured and Stripe has booked it."""
    if authorization_id.startswith(SETUP_PREFIX):
        return None
    intent = await retrieve(connection, authorization_id)
    charge = charge_of(intent)
    if text(intent, "status") != "succeeded" or charge is None:
        return None
    booked = reference(charge, "balance_transaction")
    if booked is None:
        return None
    transaction = await fetched(connection.v1.balance_transactions.retrieve_async(booked))
    currency = text(transaction, "currency") or text(intent, "currency") or ""
    return CostReport(authorization_id, whole(transaction, "fee"), currency)


async def open_authorizations(
    connection: StripeConnection, *, created_after: datetime, created_before: datetime, limit: int
) -> list[ProcessorAuthorizationRecord]:
    """moneyrail's payment intents created in (created_after, created_before] that hold or took money,
    oldest first. Stripe stamps `created` in whole seconds and lists newest first: the window is read
    whole (by the second), then cut to the exact bounds and the `limit` oldest."""
    params: stripe.params.PaymentIntentListParams = {
        "created": {"gte": int(created_after.timestamp()), "lte": int(created_before.timestamp())},
        "limit": PAGE_SIZE,
        "expand": ["data.latest_charge"],
    }
    found: list[ProcessorAuthorizationRecord] = []
    while True:
        page = await fetched(connection.v1.payment_intents.list_async(params))
        listed = items(page, "data")
        for intent in listed:
            record = _record(intent)
            if record is not None and created_after < record.created_at <= created_before:
                found.append(record)
        if page.get("has_more") is not True or not listed:
            break
        params["starting_after"] = text(listed[-1], "id") or ""
    found.sort(key=lambda record: (record.created_at, record.id))
    return found[:limit]


def _record(intent: Mapping[str, Any]) -> ProcessorAuthorizationRecord | None:
    about = metadata(intent)
    installation_id = about.get("installation_id")
    if not isinstance(installation_id, str):
        return None  # not made by moneyrail
    status = text(intent, "status")
    amount = whole(intent, "amount")
    charge = charge_of(intent) or {}
    if status == "requires_capture":
        moneyrail_status, captured, refunded = "authorized", 0, 0
    elif status == "requires_action":
        moneyrail_status, captured, refunded = "requires_action", 0, 0
    elif status == "succeeded":
        captured = captured_amount(intent, whole(charge, "amount", amount))
        refunded = whole(charge, "amount_refunded")
        if captured - refunded <= 0:
            return None
        moneyrail_status = "captured"
    else:
        return None
    reference_value = about.get("reference")
    return ProcessorAuthorizationRecord(
        id=text(intent, "id") or "",
        installation_id=installation_id,
        livemode=about.get("livemode") == "true",
        reference=reference_value if isinstance(reference_value, str) else None,
        status=moneyrail_status,
        amount=amount,
        amount_captured=captured,
        amount_refunded=refunded,
        currency=text(intent, "currency") or "",
        created_at=stamp(whole(intent, "created")),
    )
