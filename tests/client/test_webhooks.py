"""`moneyrail_client.webhooks.verify`: a delivery signed as the service signs it (Standard Webhooks) is
read as a typed event; a wrong secret, an old or future timestamp, a tampered body or a missing header is
refused; an event of a kind the client does not know is still returned, as a generic event."""

from __future__ import annotations

import base64
import json
import secrets
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from standardwebhooks.webhooks import Webhook

from moneyrail_client import WebhookVerificationError, webhooks
from moneyrail_client.events import GenericEvent, PaymentIntentEvent, construct_event

SECRET = "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()
OTHER_SECRET = "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()


def event(obj: dict[str, Any], event_type: str) -> dict[str, Any]:
    return {
        "id": "evt_000000000000000000000001",
        "object": "event",
        "type": event_type,
        "created": 1_800_000_000,
        "livemode": False,
        "api_version": "2026-08-28",
        "data": {"object": obj},
    }


def signed(
    body: bytes, secret: str = SECRET, at: datetime | None = None, msg_id: str = "evt_1"
) -> dict[str, str]:
    at = at or datetime.now(UTC)
    signature = Webhook(secret).sign(msg_id, at, body.decode())
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": signature,
    }


@pytest.fixture
def payment(client) -> dict[str, Any]:
    """A payment intent as the service renders it (the object a `payment_intent.*` event carries)."""
    created = client.payment_intents.create(amount=2000, currency="eur")
    rendered: dict[str, Any] = created.model_dump(mode="json")
    return rendered


def test_a_signed_delivery_is_a_typed_event(payment) -> None:
    body = json.dumps(event(payment, "payment_intent.succeeded")).encode()
    verified = webhooks.verify(body, signed(body), SECRET)
    assert isinstance(verified, PaymentIntentEvent)
    assert verified.type == "payment_intent.succeeded" and verified.data.object.id == payment["id"]


def test_headers_are_read_whatever_their_case(payment) -> None:
    body = json.dumps(event(payment, "payment_intent.succeeded")).encode()
    headers = {name.title(): value for name, value in signed(body).items()}
    assert webhooks.verify(body.decode(), headers, SECRET).id == "evt_000000000000000000000001"


@pytest.mark.parametrize(
    "tamper",
    [
        pytest.param(lambda body, headers: (body, signed(body, OTHER_SECRET)), id="wrong secret"),
        pytest.param(
            lambda body, headers: (body, signed(body, at=datetime.now(UTC) - timedelta(minutes=6))),
            id="old timestamp",
        ),
        pytest.param(
            lambda body, headers: (body, signed(body, at=datetime.now(UTC) + timedelta(minutes=6))),
            id="future timestamp",
        ),
        pytest.param(lambda body, headers: (body.replace(b"2000", b"9000", 1), headers), id="tampered body"),
        pytest.param(
            lambda body, headers: (body, {**headers, "webhook-id": "evt_another"}), id="another delivery's id"
        ),
        pytest.param(
            lambda body, headers: (body, {k: v for k, v in headers.items() if k != "webhook-signature"}),
            id="no signature",
        ),
        pytest.param(
            lambda body, headers: (body, {**headers, "webhook-signature": "garbage"}), id="malformed"
        ),
        pytest.param(
            lambda body, headers: (body, {**headers, "webhook-timestamp": "soon"}), id="bad timestamp"
        ),
    ],
)
def test_a_delivery_that_does_not_verify_is_refused(tamper, payment) -> None:
    body = json.dumps(event(payment, "payment_intent.succeeded")).encode()
    payload, headers = tamper(body, signed(body))
    with pytest.raises(WebhookVerificationError):
        webhooks.verify(payload, headers, SECRET)


def test_an_event_of_an_unknown_kind_is_returned_as_a_generic_event() -> None:
    unknown = {"id": "gz_1", "object": "gizmo", "livemode": False, "created": 1, "colour": "teal"}
    body = json.dumps(event(unknown, "gizmo.polished")).encode()
    verified = webhooks.verify(body, signed(body), SECRET)
    assert isinstance(verified, GenericEvent)
    assert verified.type == "gizmo.polished" and verified.data.object["colour"] == "teal"


def test_a_known_kind_in_a_shape_the_models_do_not_know_is_still_returned() -> None:
    odd = {"id": "pi_1", "object": "payment_intent", "status": "a_new_status"}  # fields missing
    verified = construct_event(event(odd, "payment_intent.transmogrified"))
    assert isinstance(verified, GenericEvent) and verified.data.object["status"] == "a_new_status"
