"""Commerce orders over HTTP (/commerce/v1): create, read, list, bind a manual-capture payment, start
preparation (capture) and cancel (release), each with the order's current version."""

from __future__ import annotations

import re
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.checkout.support import card_form, create_session
from tests.harness import TLS, add_key
from tests.helpers import assert_error, count_rows
from tests.payments.support import SUCCEEDS, confirm, event_types, ledger_balance

from .support import LINES, TOTAL, act, bind, bound_order, create_order, order_payment


def authorize(api, payment) -> None:
    confirmed = confirm(api, payment, SUCCEEDS)
    assert confirmed.status_code == 200, confirmed.text
    assert confirmed.json()["status"] == "requires_capture"


def payment_of(api, payment_id: str) -> dict:
    body: dict = api.get(f"/v1/payment-intents/{payment_id}").json()
    return body


def test_an_order_has_its_lines_total_and_version_one(api):
    order = create_order(api, external_reference="table-7", metadata={"table": "7"})
    assert re.fullmatch(r"ord_[0-9A-Za-z]{24}", order["id"])
    assert order["object"] == "order" and order["livemode"] is False and isinstance(order["created"], int)
    assert order["status"] == "pending" and order["version"] == 1 and order["payment_intent"] is None
    assert order["amount_total"] == TOTAL and order["currency"] == "eur"
    assert order["lines"] == [
        {"description": "Margherita", "quantity": 2, "unit_amount": 900, "amount": 1800},
        {"description": "Tiramisu", "quantity": 1, "unit_amount": 550, "amount": 550},
    ]
    assert order["external_reference"] == "table-7" and order["metadata"] == {"table": "7"}
    read = api.get(f"/commerce/v1/orders/{order['id']}")
    assert read.json() == order and read.headers["Service-Version"] == "2026-09-04"
    assert event_types(api, order["id"]) == ["order.created"]


@pytest.mark.parametrize(
    ("fields", "code", "param"),
    [
        ({"amount_total": TOTAL + 1}, "amount_invalid", "amount_total"),
        ({"amount_total": 0}, "amount_invalid", "amount_total"),
        ({"lines": []}, "parameter_invalid", "lines"),
        ({"lines": [{"description": "x", "unit_amount": -5}]}, "amount_invalid", "lines[0][unit_amount]"),
        ({"currency": "euro"}, "currency_invalid", "currency"),
        ({"tip": 100}, "parameter_unknown", "tip"),
    ],
)
def test_a_bad_order_is_refused_naming_its_field_and_writes_nothing(api, db, fields, code, param):
    body = {"currency": "eur", "lines": LINES, "amount_total": TOTAL} | fields
    assert_error(api.post("/commerce/v1/orders", json=body), 400, code, param)
    assert count_rows(db, "orders", api.keys.installation_id) == 0


def test_orders_are_listed_newest_first_in_pages(api):
    made = [create_order(api)["id"] for _ in range(3)]
    first = api.get("/commerce/v1/orders", params={"limit": 2}).json()
    second = api.get("/commerce/v1/orders", params={"limit": 2, "cursor": first["next_cursor"]}).json()
    assert first["has_more"] is True and second["has_more"] is False
    assert [o["id"] for o in first["data"] + second["data"]] == list(reversed(made))


def test_the_order_flow_binds_authorizes_at_checkout_and_captures_when_preparation_starts(shop, db):
    order = create_order(shop)
    payment = order_payment(shop, order)
    bound = bind(shop, order, payment["id"])
    assert bound.status_code == 200, bound.text
    assert bound.json()["version"] == 2 and bound.json()["payment_intent"] == payment["id"]
    assert bound.json()["status"] == "pending"

    checkout = create_session(shop, payment["id"], title=f"Order {order['id']}")
    paid = httpx.post(checkout["checkout_url"], data=card_form(SUCCEEDS), verify=TLS)
    assert paid.status_code == 303
    assert payment_of(shop, payment["id"])["status"] == "requires_capture"  # authorized, not captured
    assert ledger_balance(db, shop.keys.installation_id, "balance:pending") == 0
    assert (
        shop.get(f"/commerce/v1/orders/{order['id']}").json()["version"] == 2
    )  # the checkout changes no version

    started = act(shop, bound.json(), "start-preparation")
    assert started.status_code == 200, started.text
    assert started.json()["status"] == "preparing" and started.json()["version"] == 3
    assert isinstance(started.json()["preparation_started_at"], int)
    captured = payment_of(shop, payment["id"])
    assert captured["status"] == "succeeded" and captured["amount_received"] == TOTAL
    assert ledger_balance(db, shop.keys.installation_id, "balance:pending") == TOTAL
    assert event_types(shop, order["id"]) == [
        "order.created",
        "order.payment_bound",
        "order.preparation_started",
    ]

    # in preparation the payment is captured: cancelling would need a refund, so it is refused
    assert_error(act(shop, started.json(), "cancel"), 409, "resource_state_invalid")
    assert_error(act(shop, started.json(), "start-preparation"), 409, "resource_state_invalid")
    assert payment_of(shop, payment["id"])["amount_received"] == TOTAL


def test_cancelling_with_the_current_version_cancels_the_authorization(api, db):
    order, payment = bound_order(api)
    authorize(api, payment)
    canceled = act(api, order, "cancel")
    assert canceled.status_code == 200, canceled.text
    assert canceled.json()["status"] == "canceled" and canceled.json()["version"] == 3
    after = payment_of(api, payment["id"])
    assert after["status"] == "canceled" and after["amount_capturable"] == 0
    assert after["cancellation_reason"] == "requested_by_customer"
    # released at the (sandbox) network too: its authorization is no longer open
    (status,) = db.execute(
        "SELECT status FROM sandbox_authorizations WHERE installation_id = %s", (api.keys.installation_id,)
    ).fetchone()
    assert status != "authorized"
    assert ledger_balance(db, api.keys.installation_id, "balance:pending") == 0
    assert_error(act(api, canceled.json(), "cancel"), 409, "resource_state_invalid")
    assert_error(act(api, canceled.json(), "start-preparation"), 409, "resource_state_invalid")


def test_a_pending_order_without_a_payment_can_be_cancelled_and_cannot_start(api):
    order = create_order(api)
    assert_error(act(api, order, "start-preparation"), 409, "resource_state_invalid")
    assert act(api, order, "cancel").json()["status"] == "canceled"


def test_preparation_waits_for_the_payers_authorization(api):
    order, _ = bound_order(api)
    refused = act(api, order, "start-preparation")
    assert_error(refused, 409, "resource_state_invalid")
    assert "requires_payment_method" in refused.json()["error"]["message"]
    assert api.get(f"/commerce/v1/orders/{order['id']}").json() == order


@pytest.mark.parametrize("action", ["bind", "start-preparation", "cancel"])
def test_a_stale_version_is_refused_with_the_current_one_and_changes_nothing(api, action):
    order, payment = bound_order(api)  # version 2
    authorize(api, payment)
    if action == "bind":
        response = bind(api, order, payment["id"], version=1)
    else:
        response = act(api, order, action, version=1)
    error = assert_error(response, 409, "resource_state_invalid", "expected_version")
    assert error["current_version"] == 2
    assert api.get(f"/commerce/v1/orders/{order['id']}").json() == order
    assert payment_of(api, payment["id"])["status"] == "requires_capture"


def test_a_second_bind_is_refused(api):
    order, payment = bound_order(api)
    another = order_payment(api, order)
    assert_error(bind(api, order, another["id"]), 409, "resource_state_invalid", "payment_intent_id")
    assert_error(bind(api, order, payment["id"]), 409, "resource_state_invalid", "payment_intent_id")
    assert api.get(f"/commerce/v1/orders/{order['id']}").json() == order


def test_one_payment_pays_one_order(api):
    _, payment = bound_order(api)
    other = create_order(api)
    assert_error(bind(api, other, payment["id"]), 409, "resource_state_invalid", "payment_intent_id")
    assert api.get(f"/commerce/v1/orders/{other['id']}").json() == other


def test_a_payment_of_another_installation_is_resource_missing(api, make_api):
    stranger = make_api()
    foreign = order_payment(stranger, create_order(stranger))
    order = create_order(api)
    assert_error(bind(api, order, foreign["id"]), 400, "resource_missing", "payment_intent_id")
    assert api.get(f"/commerce/v1/orders/{order['id']}").json() == order
    assert_error(stranger.get(f"/commerce/v1/orders/{order['id']}"), 404, "resource_missing", "order")
    assert_error(act(stranger, order, "cancel"), 404, "resource_missing", "order")


@pytest.mark.parametrize(
    ("payment_fields", "code"),
    [
        ({"amount": TOTAL - 1}, "amount_invalid"),
        ({"currency": "usd"}, "currency_invalid"),
        ({"capture_method": "automatic"}, "parameter_invalid"),
    ],
)
def test_the_payment_must_match_the_order_and_capture_manually(api, payment_fields, code):
    order = create_order(api)
    payment = order_payment(api, order, **payment_fields)
    assert_error(bind(api, order, payment["id"]), 400, code, "payment_intent_id")
    assert api.get(f"/commerce/v1/orders/{order['id']}").json() == order


def test_a_cancelled_or_captured_payment_cannot_be_bound(api):
    order = create_order(api)
    payment = order_payment(api, order)
    assert api.post(f"/v1/payment-intents/{payment['id']}/cancel", json={}).status_code == 200
    assert_error(bind(api, order, payment["id"]), 409, "resource_state_invalid", "payment_intent_id")


def test_expiring_the_checkout_of_an_order_bound_payment_is_refused_saying_to_cancel_the_order(shop):
    order, payment = bound_order(shop)
    checkout = create_session(shop, payment["id"])
    refused = shop.post(f"/v1/checkout-sessions/{checkout['id']}/expire")
    error = assert_error(refused, 409, "resource_state_invalid")
    assert "Cancel the order" in error["message"] and order["id"] in error["message"]
    assert shop.get(f"/v1/checkout-sessions/{checkout['id']}").json()["status"] == "open"
    assert payment_of(shop, payment["id"])["status"] == "requires_payment_method"
    # cancelling the order is the way: the payment is released and the page shows it
    assert act(shop, order, "cancel").json()["status"] == "canceled"
    assert payment_of(shop, payment["id"])["status"] == "canceled"
    assert "<form" not in httpx.get(checkout["checkout_url"], verify=TLS).text


def test_a_timed_out_link_leaves_the_order_bound_payment_to_the_order(shop):
    order, payment = bound_order(shop)
    checkout = create_session(shop, payment["id"])
    advanced = shop.post("/v1/test-helpers/clock/advance", json={"seconds": 31 * 60})
    assert advanced.status_code == 200, advanced.text
    assert shop.get(f"/v1/checkout-sessions/{checkout['id']}").json()["status"] == "expired"
    assert payment_of(shop, payment["id"])["status"] == "requires_payment_method"
    assert shop.get(f"/commerce/v1/orders/{order['id']}").json() == order
    # a new link for the same payment, and the order goes on
    again = create_session(shop, payment["id"])
    assert httpx.post(again["checkout_url"], data=card_form(SUCCEEDS), verify=TLS).status_code == 303
    assert act(shop, order, "start-preparation").json()["status"] == "preparing"


def test_two_clerks_acting_at_once_on_two_connections_one_wins(api):
    order, payment = bound_order(api)
    authorize(api, payment)
    start = threading.Barrier(2)

    def clerk(action: str) -> httpx.Response:
        with httpx.Client(
            base_url=str(api.base_url), headers=dict(api.headers), timeout=30, verify=TLS
        ) as client:
            start.wait()
            return act(client, order, action)

    with ThreadPoolExecutor(2) as pool:
        responses = list(pool.map(clerk, ["start-preparation", "cancel"]))
    assert sorted(r.status_code for r in responses) == [200, 409]
    winner = next(r for r in responses if r.status_code == 200).json()
    final = payment_of(api, payment["id"])["status"]
    assert (winner["status"], final) in {("preparing", "succeeded"), ("canceled", "canceled")}
    assert api.get(f"/commerce/v1/orders/{order['id']}").json()["version"] == 3


def test_orders_need_the_commerce_scopes(api, bridge):
    order = create_order(api)
    reader = {"Authorization": f"Bearer {add_key(bridge, api.keys.tenant, ('commerce:read',))}"}
    assert api.get(f"/commerce/v1/orders/{order['id']}", headers=reader).status_code == 200
    refused = api.post(
        f"/commerce/v1/orders/{order['id']}/cancel", json={"expected_version": 1}, headers=reader
    )
    assert_error(refused, 403, "insufficient_scope")
    payments_only = {"Authorization": f"Bearer {add_key(bridge, api.keys.tenant, ('payments:write',))}"}
    assert_error(api.get("/commerce/v1/orders", headers=payments_only), 403, "insufficient_scope")
    assert_error(httpx.get(f"{api.base_url}/commerce/v1/orders", verify=TLS), 401, "authentication_required")
    assert api.get(f"/commerce/v1/orders/{order['id']}").json()["status"] == "pending"


def test_the_commerce_base_answers_with_its_version(api):
    response = api.get("/commerce/v1")
    assert response.status_code == 200
    assert response.json() == {"object": "api", "api": "commerce", "version": "2026-09-04", "livemode": False}
    assert response.headers["Service-Version"] == "2026-09-04"
    assert_error(
        api.get("/commerce/v1", headers={"Service-Version": "2026-08-29"}),
        400,
        "unsupported_version",
        "Service-Version",
    )


def test_a_bind_retried_with_its_idempotency_key_is_replayed_not_applied_twice(api):
    order = create_order(api)
    payment = order_payment(api, order)
    body = {"expected_version": 1, "payment_intent_id": payment["id"]}
    first = api.post(
        f"/commerce/v1/orders/{order['id']}/bind", json=body, headers={"Idempotency-Key": "bind-1"}
    )
    again = api.post(
        f"/commerce/v1/orders/{order['id']}/bind", json=body, headers={"Idempotency-Key": "bind-1"}
    )
    assert first.status_code == again.status_code == 200
    assert again.headers["Idempotent-Replayed"] == "true" and again.json() == first.json()
    assert api.get(f"/commerce/v1/orders/{order['id']}").json()["version"] == 2
