"""What payout tests share: a funded balance, asking for payouts, waiting for their operation."""

from __future__ import annotations

from typing import Any

import httpx

from tests.engine.conftest import wait_for_operation
from tests.payments.support import paid
from tests.transfers.support import FINAL

DAY = 86400
CLOSED_BANK_ACCOUNT = "000111111116"


def clock_now(api: httpx.Client) -> int:
    now: int = api.get("/v1/test-helpers/clock").json()["now"]
    return now


def advance(api: httpx.Client, seconds: int) -> None:
    response = api.post("/v1/test-helpers/clock/advance", json={"seconds": seconds})
    assert response.status_code == 200, response.text


def available(api: httpx.Client, currency: str = "eur") -> int:
    """The installation's own available balance (`GET /v1/balance`)."""
    body = api.get("/v1/balance").json()
    return sum(item["amount"] for item in body["available"] if item["currency"] == currency)


def fund_installation(api: httpx.Client, amount: int) -> None:
    """`amount` more in a direct installation's available balance: a payment whose fees became final."""
    before = available(api)
    paid(api, amount)
    advance(api, 3 * DAY + 60)  # the sandbox processor reports the cost: the proceeds settle
    assert available(api) == before + amount


def installation_payout(api: httpx.Client, amount: int, **fields: Any) -> httpx.Response:
    return api.post("/v1/payouts", json={"amount": amount, "currency": "eur", **fields})


def after_operation(api: httpx.Client, payout: dict[str, Any]) -> dict[str, Any]:
    """The payout once its operation is over (handed to the bank, or failed)."""
    wait_for_operation(api, payout["operation"], FINAL)
    read: dict[str, Any] = api.get(f"/v1/payouts/{payout['id']}").json()
    return read


def paid_payout(api: httpx.Client, amount: int, **fields: Any) -> dict[str, Any]:
    created = installation_payout(api, amount, **fields)
    assert created.status_code == 200, created.text
    assert after_operation(api, created.json())["status"] == "in_transit"
    advance(api, 4 * DAY + 60)
    done: dict[str, Any] = api.get(f"/v1/payouts/{created.json()['id']}").json()
    assert done["status"] == "paid", done
    return done
