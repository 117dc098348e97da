"""What payment tests share: sandbox cards, client-side confirmation, commission policies, the ledger."""

from __future__ import annotations

import time
from typing import Any

import httpx
import psycopg

from moneyrail.installations import service as installations
from tests.harness import KEY_CACHE_SECONDS, TLS, AsyncBridge, TenantKeys

SUCCEEDS = "4242424242424242"
GENERIC_DECLINE = "4000000000000002"
INSUFFICIENT_FUNDS = "4000000000009995"
AUTHENTICATE = "4000002500003155"
DISPUTE_LATER = "4000000000000259"
RISK_REVIEW = "4100000000000019"
DECLINES_LATER = "4000000000000341"
NOT_A_SANDBOX_CARD = "4000056655665556"  # Luhn-valid, but not one of ours

DAY = 24 * 3600
# what the sandbox network reports for a 100.00 payment: 2.9% + 30 minor units
COST_OF_10000 = 290 + 30


def card(number: str = SUCCEEDS) -> dict[str, Any]:
    return {"number": number, "exp_month": 12, "exp_year": 2034, "cvc": "123"}


def create_payment(api: httpx.Client, amount: int = 2000, **fields: Any) -> dict[str, Any]:
    response = api.post("/v1/payment-intents", json={"amount": amount, "currency": "eur"} | fields)
    assert response.status_code == 200, response.text
    created: dict[str, Any] = response.json()
    return created


def confirm(
    api: httpx.Client, payment: dict[str, Any], number: str | None = SUCCEEDS, **fields: Any
) -> httpx.Response:
    """Client-side, as a browser does it: the publishable key and the payment's client_secret."""
    body: dict[str, Any] = {"client_secret": payment["client_secret"], **fields}
    if number is not None:
        body["card"] = card(number)
    headers = {"Authorization": f"Bearer {payment['publishable_key']}"}
    return httpx.post(
        f"{api.base_url}/v1/payment-intents/{payment['id']}/confirm",
        json=body,
        headers=headers,
        timeout=30,
        verify=TLS,
    )


def paid(api: httpx.Client, amount: int = 2000, **fields: Any) -> dict[str, Any]:
    payment = create_payment(api, amount, **fields)
    confirmed = confirm(api, payment)
    assert confirmed.status_code == 200, confirmed.text
    assert confirmed.json()["status"] == "succeeded"
    result: dict[str, Any] = confirmed.json()
    return result


def set_commission(bridge: AsyncBridge, keys: TenantKeys, basis_points: int, fixed_amount: int) -> None:
    async def work(session: Any) -> None:
        await installations.update_environment_settings(
            session, keys.tenant, commission_basis_points=basis_points, commission_fixed_amount=fixed_amount
        )

    bridge.in_unit_of_work(work)


def wait_for_settings_to_reach_web() -> None:
    """A web process remembers an environment's commission terms for `key_cache_seconds` (issue 13):
    settings changed elsewhere (the CLI, a test) reach it within that lifetime."""
    time.sleep(KEY_CACHE_SECONDS)


def ledger_balance(db: Any, installation_id: str, code: str, currency: str = "eur") -> int:
    row = db.execute(
        """
        SELECT coalesce(sum(p.amount), 0) FROM postings p
        JOIN ledger_accounts a ON a.id = p.account_id
        WHERE a.installation_id = %s AND a.code = %s AND a.currency = %s
        """,
        (installation_id, code, currency),
    ).fetchone()
    return int(row[0])


def balance_of(api: httpx.Client, kind: str, currency: str = "eur") -> int:
    body = api.get("/v1/balance").json()
    return sum(item["amount"] for item in body[kind] if item["currency"] == currency)


def event_types(api: httpx.Client, resource_id: str) -> list[str]:
    """Types of the events about one object, oldest first."""
    events = api.get("/v1/events", params={"limit": 100}).json()["data"]
    return [event["type"] for event in reversed(events) if event["data"]["object"]["id"] == resource_id]


def wait_for(condition: Any, timeout: float = 30, interval: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError("timed out waiting")


def claim_of(db: psycopg.Connection[Any], payment_id: str) -> tuple[str | None, Any]:
    row = db.execute(
        "SELECT processor_call, processor_call_until FROM payment_intents WHERE id = %s", (payment_id,)
    ).fetchone()
    assert row is not None
    return row[0], row[1]
