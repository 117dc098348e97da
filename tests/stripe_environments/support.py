"""What the tests of environments on Stripe share: a card as Stripe.js makes it, the double's books, and
events signed as Stripe signs them."""

from __future__ import annotations

import json
import re
import secrets
import time
from typing import Any

import httpx
import stripe

from tests.harness import TLS
from tests.processor.stripe.servers import PUBLISHABLE_KEY, SECRET_KEY, StripeServers

SUCCEEDS = "4242424242424242"


def card_token(stripe_servers: StripeServers, number: str = SUCCEEDS) -> str:
    """The payer's browser: Stripe.js `createToken` posts the typed card to the API base, never to us."""
    made = httpx.post(
        f"{stripe_servers.double}/v1/tokens",
        data={
            "key": PUBLISHABLE_KEY,
            "card[number]": number,
            "card[exp_month]": "12",
            "card[exp_year]": "2034",
            "card[cvc]": "123",
        },
        verify=TLS,
    )
    assert made.status_code == 200, made.text
    token: str = made.json()["id"]
    return token


def confirm_with_token(
    api: httpx.Client, payment: dict[str, Any], token: str, **fields: Any
) -> httpx.Response:
    """Client-side, as the hosted page or the developer's own Stripe.js page does it."""
    return httpx.post(
        f"{api.base_url}/v1/payment-intents/{payment['id']}/confirm",
        json={"client_secret": payment["client_secret"], "card_token": token, **fields},
        headers={"Authorization": f"Bearer {payment['publishable_key']}"},
        timeout=30,
        verify=TLS,
    )


def stripe_get(stripe_servers: StripeServers, path: str) -> dict[str, Any]:
    """What Stripe holds, read as an operator would (localstripe does not tell keys apart)."""
    answer = httpx.get(f"{stripe_servers.double}{path}", auth=(SECRET_KEY, ""), verify=TLS)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def double_requests(stripe_servers: StripeServers) -> list[dict[str, Any]]:
    return list(httpx.get(f"{stripe_servers.double}/_double/requests", verify=TLS).json()["data"])


def fail_next(stripe_servers: StripeServers, path: str, *, when: str, status: int = 500) -> None:
    armed = httpx.post(
        f"{stripe_servers.double}/_double/faults",
        json={"path": path, "method": "POST", "when": when, "count": 1, "status": status},
        verify=TLS,
    )
    assert armed.status_code == 200, armed.text


def processor_authorization(db: Any, payment_id: str) -> str:
    (authorization,) = db.execute(
        "SELECT processor_authorization FROM payment_intents WHERE id = %s", (payment_id,)
    ).fetchone()
    assert authorization is not None
    return str(authorization)


def charge_of(stripe_servers: StripeServers, intent_id: str) -> dict[str, Any]:
    latest = stripe_get(stripe_servers, f"/v1/payment_intents/{intent_id}")["latest_charge"]
    charge_id = latest["id"] if isinstance(latest, dict) else latest
    return stripe_get(stripe_servers, f"/v1/charges/{charge_id}")


def signed_event(
    event_type: str,
    found: dict[str, Any],
    secret: str,
    *,
    livemode: bool,
    event_id: str | None = None,
    account: str | None = None,
) -> tuple[bytes, str, str]:
    """(body, Stripe-Signature, event id): an event as Stripe sends it, signed with the endpoint's secret;
    `account`: the connected account it happened on (a Connect endpoint's event)."""
    event_id = event_id or f"evt_{secrets.token_hex(12)}"
    event = {
        "id": event_id,
        "object": "event",
        "api_version": "2024-06-20",
        "type": event_type,
        "livemode": livemode,
        "created": int(time.time()),
        "data": {"object": found},
    }
    if account is not None:
        event["account"] = account
    body = json.dumps(event)
    return body.encode(), stripe.WebhookSignature.generate_signature_header(body, secret), event_id


def post_event(
    base_url: str, installation: str, environment: str, body: bytes, signature: str | None
) -> httpx.Response:
    headers = {"Content-Type": "application/json"}
    if signature is not None:
        headers["Stripe-Signature"] = signature
    return httpx.post(
        f"{base_url}/processor/stripe/webhooks/{installation}/{environment}",
        content=body,
        headers=headers,
        verify=TLS,
    )


def stripe_ids(found: Any) -> set[str]:
    """Every id of Stripe's in an object of Stripe's (its `metadata`, moneyrail's own words, left out)."""
    if isinstance(found, dict):
        return {value for key, item in found.items() if key != "metadata" for value in stripe_ids(item)}
    if isinstance(found, list):
        return {value for item in found for value in stripe_ids(item)}
    if isinstance(found, str) and re.fullmatch(
        r"[a-z]{2,6}_(?=[A-Za-z0-9_]*[A-Z0-9])[A-Za-z0-9_]{8,}", found
    ):
        return {found}
    return set()
