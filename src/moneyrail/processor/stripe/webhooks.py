"""Stripe's webhook events as moneyrail reads them: the signature checked with the `stripe` package
(`WebhookSignature.verify_header`: HMAC-SHA256 of `<timestamp>.<body>` under the endpoint's signing
secret, at most 5 minutes old), then the event's fields by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson
import stripe

from moneyrail.processor.interface import NetworkDispute

from .connection import nested, text
from .disputes import OUTCOMES, network_dispute

TOLERANCE_SECONDS = 300  # Stripe's own default: an older signature is a replay of a captured request


class EventRefused(Exception):
    """The body is not a Stripe event signed with this secret (or no longer fresh); nothing to record."""


@dataclass(frozen=True)
class StripeEvent:
    id: str  # `evt_…`
    type: str
    livemode: bool
    account: str | None  # the connected account it happened on (Connect), if any
    object: dict[str, Any]  # `data.object`


def verified_event(payload: bytes, signature: str | None, secret: str) -> StripeEvent:
    """The event the body holds, once its `Stripe-Signature` verifies with `secret`."""
    try:
        stripe.WebhookSignature.verify_header(payload, signature, secret, TOLERANCE_SECONDS)
    except (stripe.SignatureVerificationError, UnicodeDecodeError) as refused:
        raise EventRefused(str(refused).split("\n")[0]) from None
    try:
        event = orjson.loads(payload)
    except orjson.JSONDecodeError:
        raise EventRefused("The body is not JSON.") from None
    data = nested(event, "data") if isinstance(event, Mapping) else None
    found = nested(data, "object") if data is not None else None
    event_id, kind = (text(event, "id"), text(event, "type")) if isinstance(event, Mapping) else (None, None)
    if found is None or not event_id or not kind or not isinstance(event.get("livemode"), bool):
        raise EventRefused("The body is not a Stripe event (id, type, livemode, data.object).")
    return StripeEvent(event_id, kind, event["livemode"], text(event, "account"), dict(found))


def dispute_of(found: Mapping[str, Any]) -> NetworkDispute:
    """A `dispute` object of an event (`charge.dispute.*`)."""
    return network_dispute(found)


def dispute_outcome(found: Mapping[str, Any]) -> str | None:
    """`won` or `lost` for a closed dispute (`charge.dispute.closed`), else None."""
    return OUTCOMES.get(text(found, "status") or "")
