"""Risk over HTTP: value lists and their items, payments blocked (a 402 fraudulent decline, nothing
authorized) or held for review (authorized, not captured), reviews approved once, and nothing ever
charged twice (the sandbox network's own record of calls is counted)."""

from __future__ import annotations

import threading

import httpx
import pytest

from tests.harness import TLS
from tests.helpers import assert_error
from tests.payments.support import RISK_REVIEW, SUCCEEDS, confirm, create_payment, event_types


def processor_calls(db, installation_id: str, operation_type: str) -> int:
    row = db.execute(
        "SELECT count(*) FROM sandbox_processor_calls"
        " WHERE installation_id = %s AND operation_type = %s AND succeeded",
        (installation_id, operation_type),
    ).fetchone()
    return int(row[0])


def value_list(api, item_type: str, action: str, *values: str, alias: str | None = None) -> dict:
    created = api.post(
        "/v1/radar/value-lists",
        json={
            "alias": alias or f"{action}_{item_type}",
            "name": f"{action} {item_type}",
            "item_type": item_type,
            "action": action,
        },
    )
    assert created.status_code == 200, created.text
    for value in values:
        added = api.post(f"/v1/radar/value-lists/{created.json()['id']}/items", json={"value": value})
        assert added.status_code == 200, added.text
    body: dict = created.json()
    return body


def review_of(api, payment_id: str) -> dict:
    reviews = api.get("/v1/radar/reviews", params={"limit": 100}).json()["data"]
    (review,) = [review for review in reviews if review["payment_intent"] == payment_id]
    return review


def test_value_lists_hold_normalized_items_and_refuse_what_cannot_be_listed(api, make_api):
    emails = value_list(api, "email", "block", " Fraud@Example.COM ")
    assert emails["id"].startswith("rl_") and emails["object"] == "radar.value_list"
    assert (emails["alias"], emails["item_type"], emails["action"]) == ("block_email", "email", "block")
    items = api.get(f"/v1/radar/value-lists/{emails['id']}/items").json()["data"]
    assert [(item["value"], item["value_list"]) for item in items] == [("fraud@example.com", emails["id"])]
    assert items[0]["id"].startswith("rli_")
    duplicate = api.post(f"/v1/radar/value-lists/{emails['id']}/items", json={"value": "FRAUD@example.com"})
    assert_error(duplicate, 409, "resource_state_invalid", "value")
    for item_type, bad in [
        ("email", "not-an-address"),
        ("ip_address", "999.1.1.1"),
        ("card_country", "USA"),
        ("customer_id", "pi_000000000000000000000000"),
        ("card_fingerprint", "with spaces!"),
    ]:
        listed = value_list(api, item_type, "review")
        refused = api.post(f"/v1/radar/value-lists/{listed['id']}/items", json={"value": bad})
        assert_error(refused, 400, "parameter_invalid", "value")
    again = api.post(
        "/v1/radar/value-lists",
        json={"alias": "block_email", "name": "x", "item_type": "email", "action": "block"},
    )
    assert_error(again, 409, "resource_state_invalid", "alias")
    odd = api.post(
        "/v1/radar/value-lists", json={"alias": "a", "name": "x", "item_type": "phone", "action": "block"}
    )
    assert_error(odd, 400, "parameter_invalid", "item_type")
    assert len(api.get("/v1/radar/value-lists").json()["data"]) == 6
    other = make_api()
    assert_error(other.get(f"/v1/radar/value-lists/{emails['id']}"), 404, "resource_missing", "value_list")
    assert other.get("/v1/radar/value-lists").json()["data"] == []


def test_a_listed_email_blocks_the_payment_with_a_fraudulent_decline_and_nothing_is_authorized(api, db):
    value_list(api, "email", "block", "fraud@example.com")
    payment = create_payment(api, 2000, receipt_email="Fraud@Example.com")
    declined = confirm(api, payment, SUCCEEDS)
    error = assert_error(declined, 402, "card_declined")
    assert (error["type"], error["decline_code"]) == ("card_error", "fraudulent")
    read = api.get(f"/v1/payment-intents/{payment['id']}").json()
    assert read["status"] == "requires_payment_method"
    assert read["last_payment_error"]["decline_code"] == "fraudulent"
    assert processor_calls(db, api.keys.installation_id, "authorize") == 0
    fine = create_payment(api, 2000, receipt_email="ada@example.com")
    assert confirm(api, fine, SUCCEEDS).json()["status"] == "succeeded"


def test_a_blocked_card_fingerprint_is_declined_on_its_next_payment(api, db):
    first = confirm(api, create_payment(api, 1000), SUCCEEDS).json()
    fingerprint = db.execute(
        "SELECT fingerprint FROM payment_methods WHERE id = %s", (first["payment_method"],)
    ).fetchone()[0]
    value_list(api, "card_fingerprint", "block", fingerprint)
    again = confirm(api, create_payment(api, 1000), SUCCEEDS)
    assert assert_error(again, 402, "card_declined")["decline_code"] == "fraudulent"
    assert processor_calls(db, api.keys.installation_id, "authorize") == 1


@pytest.mark.parametrize(
    ("item_type", "value"),
    [("ip_address", "127.0.0.1"), ("card_country", "us"), ("customer_id", None)],
)
def test_a_listed_value_in_a_review_list_holds_the_payment(api, db, item_type, value):
    customer = api.post("/v1/customers", json={"external_reference": "c1", "email": "c@example.com"}).json()
    value_list(api, item_type, "review", value or customer["id"])
    payment = create_payment(api, 2000, customer=customer["id"])
    held = confirm(api, payment, SUCCEEDS)
    assert held.status_code == 200, held.text
    assert (held.json()["status"], held.json()["amount_capturable"]) == ("requires_capture", 2000)
    review = review_of(api, payment["id"])
    assert (review["reason"], review["matched"]["item_type"], review["open"]) == (
        "value_list",
        item_type,
        True,
    )
    assert processor_calls(db, api.keys.installation_id, "capture") == 0


def test_the_risk_card_is_authorized_not_captured_until_approved_and_charged_once(api, db):
    payment = create_payment(api, 3000)
    held = confirm(api, payment, RISK_REVIEW)
    assert held.status_code == 200, held.text
    assert (held.json()["status"], held.json()["amount_received"]) == ("requires_capture", 0)
    review = review_of(api, payment["id"])
    assert review["id"].startswith("rv_") and review["object"] == "review"
    assert (review["reason"], review["status"], review["closed_reason"]) == ("rule", "open", None)
    assert [item["id"] for item in api.get("/v1/radar/reviews", params={"open": "true"}).json()["data"]] == [
        review["id"]
    ]
    assert processor_calls(db, api.keys.installation_id, "authorize") == 1
    assert processor_calls(db, api.keys.installation_id, "capture") == 0
    approved = api.post(f"/v1/radar/reviews/{review['id']}/approve")
    assert approved.status_code == 200, approved.text
    assert (approved.json()["status"], approved.json()["open"], approved.json()["closed_reason"]) == (
        "approved",
        False,
        "approved",
    )
    captured = api.get(f"/v1/payment-intents/{payment['id']}").json()
    assert (captured["status"], captured["amount_received"]) == ("succeeded", 3000)
    twice = api.post(f"/v1/radar/reviews/{review['id']}/approve")
    assert twice.status_code == 200
    assert twice.json() == approved.json()  # approving again changes nothing
    assert processor_calls(db, api.keys.installation_id, "capture") == 1  # charged once
    assert api.get("/v1/radar/reviews", params={"open": "true"}).json()["data"] == []
    types = [event["type"] for event in reversed(api.get("/v1/events", params={"limit": 100}).json()["data"])]
    assert types.count("review.opened") == 1 and types.count("review.closed") == 1
    assert event_types(api, payment["id"])[-1] == "payment_intent.succeeded"


def test_a_manual_payment_in_review_cannot_be_captured_until_approved(api, db):
    payment = create_payment(api, 2500, capture_method="manual")
    assert confirm(api, payment, RISK_REVIEW).json()["status"] == "requires_capture"
    refused = api.post(f"/v1/payment-intents/{payment['id']}/capture")
    assert_error(refused, 409, "resource_state_invalid")
    review = review_of(api, payment["id"])
    assert api.post(f"/v1/radar/reviews/{review['id']}/approve").json()["status"] == "approved"
    # approval lets a manual payment be captured; it does not capture it
    assert api.get(f"/v1/payment-intents/{payment['id']}").json()["status"] == "requires_capture"
    assert api.post(f"/v1/radar/reviews/{review['id']}/approve").json()["status"] == "approved"
    captured = api.post(f"/v1/payment-intents/{payment['id']}/capture")
    assert captured.status_code == 200, captured.text
    assert captured.json()["status"] == "succeeded"
    assert processor_calls(db, api.keys.installation_id, "capture") == 1


def test_reviews_of_another_installation_are_not_found(api, make_api):
    payment = create_payment(api, 2000)
    confirm(api, payment, RISK_REVIEW)
    review = review_of(api, payment["id"])
    other = make_api()
    assert_error(other.post(f"/v1/radar/reviews/{review['id']}/approve"), 404, "resource_missing", "review")
    assert api.get(f"/v1/payment-intents/{payment['id']}").json()["status"] == "requires_capture"


def test_two_approvals_at_the_same_moment_capture_once(api, db, web):
    """Two connections approve one review together: the payment's lock orders them, one captures."""
    payment = create_payment(api, 4000)
    confirm(api, payment, RISK_REVIEW)
    review = review_of(api, payment["id"])
    start = threading.Barrier(2)
    answers: list[httpx.Response] = []

    def approve() -> None:
        with httpx.Client(base_url=web.base_url, headers=api.headers, timeout=30, verify=TLS) as client:
            start.wait()
            answers.append(client.post(f"/v1/radar/reviews/{review['id']}/approve"))

    threads = [threading.Thread(target=approve) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(answer.status_code for answer in answers) == [200, 200]
    assert {answer.json()["status"] for answer in answers} == {"approved"}
    assert api.get(f"/v1/payment-intents/{payment['id']}").json()["status"] == "succeeded"
    assert processor_calls(db, api.keys.installation_id, "capture") == 1
    succeeded = [
        event
        for event in api.get("/v1/events", params={"limit": 100}).json()["data"]
        if event["type"] == "payment_intent.succeeded"
    ]
    assert len(succeeded) == 1
