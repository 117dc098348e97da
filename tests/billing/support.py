"""What billing tests share: an environment with subscriptions on, keyed POSTs, catalog factories."""

from __future__ import annotations

import time
import uuid
from typing import Any

import httpx

from moneyrail.installations import service as installations
from tests.checkout.support import CANCEL_URL, SUCCESS_URL, card_form
from tests.harness import TLS, AsyncBridge, TenantKeys
from tests.payment_methods.support import SUCCEEDS

DAY = 24 * 3600


def enable_billing(
    bridge: AsyncBridge, keys: TenantKeys, *, recurring: bool = True, checkout: bool = True
) -> None:
    async def work(session: Any) -> None:
        await installations.update_environment_settings(
            session,
            keys.tenant,
            recurring_enabled=recurring,
            checkout_enabled=checkout,
            return_urls=[SUCCESS_URL, CANCEL_URL],
        )

    bridge.in_unit_of_work(work)


def post(
    api: httpx.Client, path: str, body: dict[str, Any] | None = None, key: str | None = None
) -> httpx.Response:
    """A POST with an Idempotency-Key, as billing requires one (a fresh key unless one is given)."""
    return api.post(path, json=body or {}, headers={"Idempotency-Key": key or uuid.uuid4().hex})


def ok(response: httpx.Response, status: int = 200) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    return body


def product(api: httpx.Client, name: str = "Pro plan") -> dict[str, Any]:
    return ok(post(api, "/v1/products", {"name": name}))


def price(api: httpx.Client, amount: int = 1500, **terms: Any) -> dict[str, Any]:
    body = {"product": product(api)["id"], "currency": "eur", "interval": "month", "amount": amount} | terms
    return ok(post(api, "/v1/prices", body))


def customer(api: httpx.Client, email: str = "ada@example.com") -> dict[str, Any]:
    return ok(api.post("/v1/customers", json={"email": email, "name": "Ada"}))


def subscribe(api: httpx.Client, price_id: str, customer_id: str, **fields: Any) -> dict[str, Any]:
    return ok(post(api, "/v1/subscriptions", {"price": price_id, "customer": customer_id} | fields))


def invoices(api: httpx.Client, subscription_id: str) -> list[dict[str, Any]]:
    """Oldest first."""
    listed = ok(api.get(f"/v1/subscriptions/{subscription_id}/invoices", params={"limit": 100}))
    return list(reversed(listed["data"]))


def advance(api: httpx.Client, seconds: int) -> dict[str, Any]:
    return ok(api.post("/v1/test-helpers/clock/advance", json={"seconds": seconds}))


def clock_now(api: httpx.Client) -> int:
    now: int = ok(api.get("/v1/test-helpers/clock"))["now"]
    return now


def checkout_for(api: httpx.Client, subscription_id: str, **fields: Any) -> dict[str, Any]:
    body = {
        "subscription": subscription_id,
        "title": "Pro plan",
        "success_url": SUCCESS_URL,
        "cancel_url": CANCEL_URL,
    } | fields
    return ok(api.post("/v1/checkout-sessions", json=body))


def wait_until(condition: Any, timeout: float = 30, interval: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = condition()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out waiting; last answer: {last!r}")


def active_subscription(
    api: httpx.Client, amount: int = 1500, quantity: int = 1, **terms: Any
) -> dict[str, Any]:
    """A subscription whose first checkout was paid with a card that succeeds."""
    created = subscribe(api, price(api, amount, **terms)["id"], customer(api)["id"], quantity=quantity)
    checkout = checkout_for(api, created["id"])
    paid = httpx.post(checkout["checkout_url"], data=card_form(SUCCEEDS, renew_consent="yes"), verify=TLS)
    assert paid.status_code == 303 and paid.headers["location"] == SUCCESS_URL, paid.text
    return ok(api.get(f"/v1/subscriptions/{created['id']}"))
