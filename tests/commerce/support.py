"""What commerce tests share: an order, its manual-capture payment, the bind."""

from __future__ import annotations

from typing import Any

import httpx

LINES = [
    {"description": "Margherita", "quantity": 2, "unit_amount": 900},
    {"description": "Tiramisu", "unit_amount": 550},
]
TOTAL = 2350


def create_order(api: httpx.Client, **fields: Any) -> dict[str, Any]:
    response = api.post(
        "/commerce/v1/orders", json={"currency": "eur", "lines": LINES, "amount_total": TOTAL} | fields
    )
    assert response.status_code == 200, response.text
    assert response.headers["Service-Version"] == "2026-09-04"
    order: dict[str, Any] = response.json()
    return order


def order_payment(api: httpx.Client, order: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """Spec 4.B rule 3: manual capture, the order's amount and currency, the order id as reference."""
    body = {
        "amount": order["amount_total"],
        "currency": order["currency"],
        "capture_method": "manual",
        "external_reference": order["id"],
    } | fields
    response = api.post("/v1/payment-intents", json=body)
    assert response.status_code == 200, response.text
    payment: dict[str, Any] = response.json()
    return payment


def bind(
    api: httpx.Client, order: dict[str, Any], payment_id: str, version: int | None = None
) -> httpx.Response:
    return api.post(
        f"/commerce/v1/orders/{order['id']}/bind",
        json={"expected_version": version or order["version"], "payment_intent_id": payment_id},
    )


def bound_order(api: httpx.Client) -> tuple[dict[str, Any], dict[str, Any]]:
    order = create_order(api)
    payment = order_payment(api, order)
    response = bind(api, order, payment["id"])
    assert response.status_code == 200, response.text
    bound: dict[str, Any] = response.json()
    return bound, payment


def act(api: httpx.Client, order: dict[str, Any], action: str, version: int | None = None) -> httpx.Response:
    return api.post(
        f"/commerce/v1/orders/{order['id']}/{action}", json={"expected_version": version or order["version"]}
    )
