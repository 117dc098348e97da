"""Saving cards the way a client does: a setup intent from the server, confirmed with the publishable key."""

from __future__ import annotations

from typing import Any

import httpx

from tests.harness import TLS

Api = Any  # tests/conftest.py's client for one installation's sandbox

EXPIRY = {"exp_month": 12, "exp_year": 2099}
SUCCEEDS = "4242424242424242"
CHARGES_DECLINED = "4000000000000341"  # can be saved; every later charge declines
DISPUTED = "4000000000000259"
LIVE_CARD = "4111111111111111"  # Luhn-valid, not a sandbox card: refused in the sandbox


def card(number: str = SUCCEEDS, **changes: Any) -> dict[str, Any]:
    return {"number": number, **EXPIRY, "cvc": "123", **changes}


def publishable(api: Api) -> httpx.Client:
    """The client side of `api`'s installation: the publishable key only."""
    return httpx.Client(
        base_url=str(api.base_url),
        headers={"Authorization": f"Bearer {api.keys.publishable_key}"},
        timeout=30,
        verify=TLS,
    )


def new_customer(api: Api, **fields: Any) -> str:
    response = api.post("/v1/customers", json=fields)
    assert response.status_code == 200, response.text
    customer_id: str = response.json()["id"]
    return customer_id


def new_setup_intent(api: Api, customer_id: str) -> dict[str, Any]:
    response = api.post(f"/v1/customers/{customer_id}/setup-intents")
    assert response.status_code == 200, response.text
    setup_intent: dict[str, Any] = response.json()
    return setup_intent


def confirm(
    client: httpx.Client, setup_intent: dict[str, Any], number: str = SUCCEEDS, **headers: str
) -> httpx.Response:
    return client.post(
        f"/v1/setup-intents/{setup_intent['id']}/confirm",
        json={"client_secret": setup_intent["client_secret"], "card": card(number)},
        headers=headers,
    )


def save_card(api: Api, customer_id: str, number: str = SUCCEEDS) -> dict[str, Any]:
    """Save a card for the customer; answers the saved method as the server lists it."""
    with publishable(api) as client:
        response = confirm(client, new_setup_intent(api, customer_id), number)
    assert response.status_code == 200, response.text
    method_id = response.json()["payment_method"]
    listed = api.get(f"/v1/customers/{customer_id}/payment-methods", params={"limit": 100}).json()
    method: dict[str, Any] = next(item for item in listed["data"] if item["id"] == method_id)
    return method


def listed(api: Api, customer_id: str) -> dict[str, Any]:
    response = api.get(f"/v1/customers/{customer_id}/payment-methods", params={"limit": 100})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body
