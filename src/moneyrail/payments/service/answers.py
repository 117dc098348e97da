"""The processor's answers to a payment's steps as the API's: declines recorded on the payment,
faults as errors."""

from __future__ import annotations

from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from typing import Any

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.errors import CardDeclined, MoneyrailError, PaymentDeclined
from moneyrail.kit.tenant import Tenant
from moneyrail.models import PaymentIntent
from moneyrail.processor import provider
from moneyrail.processor.interface import Authorization, ProcessorRefused, ProcessorUnavailable

from .state import _move, announce

logger = structlog.get_logger("moneyrail.payments")


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
