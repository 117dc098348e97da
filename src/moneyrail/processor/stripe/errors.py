"""Stripe's errors as moneyrail's: transient ones retry, permanent ones end the operation.

- CardError (402): CardNotAccepted, with Stripe's decline code (its error code when it gave none).
- RateLimitError, APIConnectionError (timeouts, resets), APIError 5xx, or 409 (a concurrent request
  under the same key): ProcessorUnavailable.
- InvalidRequestError, IdempotencyError, AuthenticationError, PermissionError, any other 4xx:
  ProcessorRefused.

Every message carries Stripe's request id when Stripe gave one, so a dead letter can be looked up in
Stripe's request log. Stripe's object ids in its messages (`No such charge: 'ch_…'`) are left out: a
message may reach an API answer (a refused capture's 402), and provider ids never do (CONVENTIONS.md
§12).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import stripe

from moneyrail.processor.interface import CardNotAccepted, ProcessorRefused, ProcessorUnavailable

# an object id as Stripe makes them (`ch_3MtwBwLkdIwHu7ix28a3tqPa`): a lowercase prefix, then random
# letters and digits (at least one capital or digit, so that words such as `payment_method` stay)
STRIPE_OBJECT_ID = re.compile(
    r"\b(?!req_)[a-z]{2,8}_(?:test_|live_)?(?=[A-Za-z0-9]*[A-Z0-9])[A-Za-z0-9]{8,}\b"
)


def without_object_ids(message: str) -> str:
    return STRIPE_OBJECT_ID.sub("<Stripe id>", message)


def request_note(error: stripe.StripeError) -> str:
    request_id = error.request_id
    return f" (Stripe request {request_id})" if request_id else " (no Stripe request id)"


def stripe_message(error: stripe.StripeError) -> str:
    message = error.user_message
    return without_object_ids(str(message)) if message else type(error).__name__


def decline_code_of(error: stripe.CardError) -> str:
    """Stripe's `decline_code` (issuer declines), else its `code` (`expired_card`, `incorrect_cvc`,
    `authentication_required`), else `card_declined`."""
    details: Mapping[str, Any] = error.error.to_dict() if error.error is not None else {}
    return str(details.get("decline_code") or error.code or "card_declined")


def translated(error: stripe.StripeError) -> ProcessorUnavailable | ProcessorRefused:
    """The moneyrail failure that `error` means (raise it `from` the Stripe error)."""
    message = stripe_message(error) + request_note(error)
    if isinstance(error, stripe.CardError):
        return CardNotAccepted(decline_code_of(error), message)
    status = error.http_status
    if (
        isinstance(error, stripe.RateLimitError | stripe.APIConnectionError)
        or (status is not None and (status >= 500 or status == 409))
        or (isinstance(error, stripe.APIError) and status is None)
    ):
        return ProcessorUnavailable(f"Stripe did not answer: {message}")
    if isinstance(error, stripe.IdempotencyError):
        return ProcessorRefused("processor_idempotency_key_reused", message)
    if isinstance(error, stripe.AuthenticationError):
        return ProcessorRefused("processor_key_invalid", f"Stripe refused the key: {message}")
    if isinstance(error, stripe.PermissionError):
        return ProcessorRefused("processor_permission_denied", f"Stripe refused the call: {message}")
    code = error.code or "processor_invalid_request"
    return ProcessorRefused(code, f"Stripe refused the call: {message}")
