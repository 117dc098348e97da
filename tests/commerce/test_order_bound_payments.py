"""An order-bound payment moves with its order only (spec 4.B rule 3): capturing, cancelling, incrementing
or re-pricing it through /v1/payment-intents directly is refused, saying to use the order's steps, and
changes nothing; the order's own steps still work, and payments bound to no order are untouched. With a
real worker and scheduler beside the web process."""

from __future__ import annotations

import httpx
import pytest

from tests.checkout.support import card_form, create_session
from tests.engine.conftest import assert_ledger_verifies, processor_calls
from tests.harness import TLS
from tests.helpers import assert_error
from tests.payments.support import SUCCEEDS, event_types
from tests.stacks import start_scheduler, start_worker

from .support import TOTAL, act, bound_order


@pytest.fixture(scope="module")
def commerce_stack(servers):
    worker = start_worker(servers, name="worker-order-bound")
    scheduler = start_scheduler(servers, name="scheduler-order-bound")
    yield worker
    worker.stop()
    scheduler.stop()
    assert_ledger_verifies(servers)


def authorized_at_checkout(shop) -> tuple[dict, dict]:
    """An order whose bound payment the payer authorized on the hosted checkout page."""
    order, payment = bound_order(shop)
    checkout = create_session(shop, payment["id"])
    assert httpx.post(checkout["checkout_url"], data=card_form(SUCCEEDS), verify=TLS).status_code == 303
    assert shop.get(f"/v1/payment-intents/{payment['id']}").json()["status"] == "requires_capture"
    return order, payment


def test_a_direct_capture_of_an_order_bound_payment_is_refused_saying_to_start_preparation(
    shop, db, servers, commerce_stack
):
    order, payment = authorized_at_checkout(shop)
    payment_before = shop.get(f"/v1/payment-intents/{payment['id']}").json()
    calls_before = processor_calls(db, shop.keys.installation_id)
    events_before = event_types(shop, payment["id"])

    refused = shop.post(f"/v1/payment-intents/{payment['id']}/capture", json={})
    error = assert_error(refused, 409, "resource_state_invalid")
    assert order["id"] in error["message"]
    assert f"/commerce/v1/orders/{order['id']}/start-preparation" in error["message"]
    # nothing changed: the authorization stands, the network was not asked, the order is where it was
    assert shop.get(f"/v1/payment-intents/{payment['id']}").json() == payment_before
    assert processor_calls(db, shop.keys.installation_id) == calls_before
    assert event_types(shop, payment["id"]) == events_before
    assert shop.get(f"/commerce/v1/orders/{order['id']}").json() == order

    started = act(shop, order, "start-preparation")
    assert started.status_code == 200, started.text
    assert started.json()["status"] == "preparing"
    captured = shop.get(f"/v1/payment-intents/{payment['id']}").json()
    assert (captured["status"], captured["amount_received"]) == ("succeeded", TOTAL)
    assert_ledger_verifies(servers)


@pytest.mark.parametrize("authorized", [True, False], ids=["authorized", "not-yet-authorized"])
def test_a_direct_cancel_of_an_order_bound_payment_is_refused_saying_to_cancel_the_order(
    shop, db, authorized, commerce_stack
):
    order, payment = authorized_at_checkout(shop) if authorized else bound_order(shop)
    payment_before = shop.get(f"/v1/payment-intents/{payment['id']}").json()
    calls_before = processor_calls(db, shop.keys.installation_id)

    refused = shop.post(f"/v1/payment-intents/{payment['id']}/cancel", json={})
    error = assert_error(refused, 409, "resource_state_invalid")
    assert f"/commerce/v1/orders/{order['id']}/cancel" in error["message"]
    assert shop.get(f"/v1/payment-intents/{payment['id']}").json() == payment_before
    assert processor_calls(db, shop.keys.installation_id) == calls_before
    assert shop.get(f"/commerce/v1/orders/{order['id']}").json() == order

    canceled = act(shop, order, "cancel")
    assert canceled.status_code == 200, canceled.text
    assert canceled.json()["status"] == "canceled"
    assert shop.get(f"/v1/payment-intents/{payment['id']}").json()["status"] == "canceled"


def test_a_payment_bound_to_no_order_is_still_captured_and_cancelled_directly(shop, commerce_stack):
    for action, status in (("capture", "succeeded"), ("cancel", "canceled")):
        payment = shop.post(
            "/v1/payment-intents", json={"amount": TOTAL, "currency": "eur", "capture_method": "manual"}
        ).json()
        checkout = create_session(shop, payment["id"])
        assert httpx.post(checkout["checkout_url"], data=card_form(SUCCEEDS), verify=TLS).status_code == 303
        done = shop.post(f"/v1/payment-intents/{payment['id']}/{action}", json={})
        assert done.status_code == 200, done.text
        assert done.json()["status"] == status


def test_incrementing_an_order_bound_authorization_is_refused_and_changes_nothing(
    shop, db, servers, commerce_stack
):
    order, payment = authorized_at_checkout(shop)
    payment_before = shop.get(f"/v1/payment-intents/{payment['id']}").json()
    calls_before = processor_calls(db, shop.keys.installation_id)
    events_before = event_types(shop, payment["id"])

    refused = shop.post(
        f"/v1/payment-intents/{payment['id']}/increment-authorization", json={"amount": TOTAL + 500}
    )
    error = assert_error(refused, 409, "resource_state_invalid")
    assert order["id"] in error["message"]
    assert f"/commerce/v1/orders/{order['id']}/cancel" in error["message"]
    # the hold stays the order's total; the network was not asked; the order is where it was
    assert shop.get(f"/v1/payment-intents/{payment['id']}").json() == payment_before
    assert payment_before["amount"] == payment_before["amount_capturable"] == TOTAL
    assert processor_calls(db, shop.keys.installation_id) == calls_before
    assert event_types(shop, payment["id"]) == events_before
    assert shop.get(f"/commerce/v1/orders/{order['id']}").json() == order

    started = act(shop, order, "start-preparation")
    assert started.status_code == 200, started.text
    captured = shop.get(f"/v1/payment-intents/{payment['id']}").json()
    assert (captured["status"], captured["amount_received"]) == ("succeeded", TOTAL)
    assert_ledger_verifies(servers)


def test_changing_the_amount_of_an_order_bound_payment_is_refused_and_other_updates_pass(
    shop, commerce_stack
):
    order, payment = bound_order(shop)
    payment_before = shop.get(f"/v1/payment-intents/{payment['id']}").json()
    events_before = event_types(shop, payment["id"])

    refused = shop.post(f"/v1/payment-intents/{payment['id']}/update", json={"amount": TOTAL + 100})
    error = assert_error(refused, 409, "resource_state_invalid")
    assert order["id"] in error["message"]
    assert f"/commerce/v1/orders/{order['id']}/cancel" in error["message"]
    # a refused update changes nothing, not even the fields sent with the amount
    refused_with_more = shop.post(
        f"/v1/payment-intents/{payment['id']}/update",
        json={"amount": TOTAL - 100, "description": "cheaper", "metadata": {"table": "7"}},
    )
    assert_error(refused_with_more, 409, "resource_state_invalid")
    assert shop.get(f"/v1/payment-intents/{payment['id']}").json() == payment_before
    assert event_types(shop, payment["id"]) == events_before
    assert shop.get(f"/commerce/v1/orders/{order['id']}").json() == order

    # fields that leave the amount alone still change, and so does sending the amount it already has
    updated = shop.post(
        f"/v1/payment-intents/{payment['id']}/update",
        json={"amount": TOTAL, "description": "Table 7", "metadata": {"table": "7"}},
    )
    assert updated.status_code == 200, updated.text
    body = updated.json()
    assert (body["amount"], body["description"], body["metadata"]) == (TOTAL, "Table 7", {"table": "7"})

    # and the order's flow is untouched: the payer authorizes its total, preparation captures it
    checkout = create_session(shop, payment["id"])
    assert httpx.post(checkout["checkout_url"], data=card_form(SUCCEEDS), verify=TLS).status_code == 303
    started = act(shop, shop.get(f"/commerce/v1/orders/{order['id']}").json(), "start-preparation")
    assert started.status_code == 200, started.text
    assert shop.get(f"/v1/payment-intents/{payment['id']}").json()["amount_received"] == TOTAL


def test_a_payment_bound_to_no_order_is_still_incremented_and_updated_directly(shop, commerce_stack):
    payment = shop.post(
        "/v1/payment-intents", json={"amount": TOTAL, "currency": "eur", "capture_method": "manual"}
    ).json()
    updated = shop.post(f"/v1/payment-intents/{payment['id']}/update", json={"amount": TOTAL + 100})
    assert updated.status_code == 200, updated.text
    assert updated.json()["amount"] == TOTAL + 100

    checkout = create_session(shop, payment["id"])
    assert httpx.post(checkout["checkout_url"], data=card_form(SUCCEEDS), verify=TLS).status_code == 303
    raised = shop.post(
        f"/v1/payment-intents/{payment['id']}/increment-authorization", json={"amount": TOTAL + 600}
    )
    assert raised.status_code == 200, raised.text
    assert (raised.json()["amount"], raised.json()["amount_capturable"]) == (TOTAL + 600, TOTAL + 600)
    captured = shop.post(f"/v1/payment-intents/{payment['id']}/capture", json={})
    assert captured.status_code == 200, captured.text
    assert captured.json()["amount_received"] == TOTAL + 600
