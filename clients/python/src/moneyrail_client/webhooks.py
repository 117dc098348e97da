"""Verify a webhook delivery (Standard Webhooks, as the service signs them) and read its event.

    event = moneyrail_client.webhooks.verify(request_body, request_headers, "whsec_…")

The body must be the raw bytes received: a body parsed and serialized again no longer matches its
signature. A delivery older (or newer) than five minutes is refused, so a captured delivery cannot be
replayed later. Deliveries may repeat and arrive out of order: deduplicate by `event.id`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from standardwebhooks.webhooks import Webhook

from moneyrail_client.errors import WebhookVerificationError
from moneyrail_client.events import AnyEvent, construct_event

__all__ = ["WebhookVerificationError", "verify"]


def verify(payload: bytes | str, headers: Mapping[str, str], secret: str) -> AnyEvent:
    """The delivery's event, typed (events.py); WebhookVerificationError when its signature does not
    match `secret` (the endpoint's `whsec_…`), its timestamp is outside five minutes of now, a header
    is missing, or the body was altered."""
    plain_headers = {str(name).lower(): str(value) for name, value in headers.items()}
    try:
        body: Any = Webhook(secret).verify(payload, plain_headers)
    except Exception as error:  # the library's refusals, and malformed headers or secrets it trips on
        raise WebhookVerificationError(f"webhook refused: {error}") from error
    if not isinstance(body, dict):
        raise WebhookVerificationError("webhook refused: the body is not an event")
    return construct_event(body)
