"""What checkout tests share: enabling checkout for a tenant, creating sessions, reading the page."""

from __future__ import annotations

import hashlib
import re
from typing import Any

import httpx

from moneyrail.installations import service as installations
from tests.harness import AsyncBridge, TenantKeys

SUCCESS_URL = "https://shop.example/checkout/success"
CANCEL_URL = "https://shop.example/checkout/cancel"


def enable_checkout(
    bridge: AsyncBridge,
    keys: TenantKeys,
    return_urls: tuple[str, ...] = (SUCCESS_URL, CANCEL_URL),
    *,
    enabled: bool = True,
) -> None:
    async def work(session: Any) -> None:
        await installations.update_environment_settings(
            session, keys.tenant, checkout_enabled=enabled, return_urls=list(return_urls)
        )

    bridge.in_unit_of_work(work)


def create_session(
    api: httpx.Client,
    payment_id: str,
    *,
    success_url: str = SUCCESS_URL,
    cancel_url: str = CANCEL_URL,
    title: str = "Order 42",
    **headers: str,
) -> dict[str, Any]:
    response = api.post(
        "/v1/checkout-sessions",
        json={
            "payment_intent": payment_id,
            "title": title,
            "success_url": success_url,
            "cancel_url": cancel_url,
        },
        headers=headers,
    )
    assert response.status_code == 200, response.text
    created: dict[str, Any] = response.json()
    return created


def token_of(checkout: dict[str, Any]) -> str:
    match = re.fullmatch(r".*/checkout/([0-9A-Za-z]+)", checkout["checkout_url"])
    assert match is not None, checkout["checkout_url"]
    return match.group(1)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def card_form(number: str, **fields: str) -> dict[str, str]:
    """The page's form as a browser posts it for a new card."""
    return {
        "payment_method": "new",
        "card_number": number,
        "exp_month": "12",
        "exp_year": "2034",
        "cvc": "123",
        **fields,
    }


def session_status(api: httpx.Client, checkout: dict[str, Any]) -> str:
    status: str = api.get(f"/v1/checkout-sessions/{checkout['id']}").json()["status"]
    return status
