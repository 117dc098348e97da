"""Checkout sessions over the API (spec 4.N): creation rules, reading, expiring, idempotent replay."""

from __future__ import annotations

import hashlib
import re
import time

import pytest

from tests.checkout.support import (
    CANCEL_URL,
    SUCCESS_URL,
    create_session,
    enable_checkout,
    token_of,
)
from tests.helpers import assert_error, count_rows
from tests.payments.support import SUCCEEDS, confirm, create_payment, event_types, paid


def test_creation_answers_an_open_session_whose_url_is_a_long_random_token(shop, db, web):
    payment = create_payment(shop, 2000)
    before = int(time.time())
    created = create_session(shop, payment["id"], title="Order 42")
    assert re.fullmatch(r"cs_[0-9A-Za-z]{24}", created["id"])
    assert created["object"] == "checkout_session"
    assert created["payment_intent"] == payment["id"]
    assert created["subscription"] is created["change"] is created["invoice"] is None
    assert created["title"] == "Order 42"
    assert (created["success_url"], created["cancel_url"]) == (SUCCESS_URL, CANCEL_URL)
    assert created["status"] == "open"
    assert created["livemode"] is False
    assert before - 1 <= created["created"] <= int(time.time()) + 1
    assert created["expires_at"] - created["created"] in range(1799, 1802)  # 30 minutes
    token = token_of(created)
    assert created["checkout_url"] == f"{web.base_url}/checkout/{token}"
    assert len(token) >= 32 and re.fullmatch(r"[0-9A-Za-z]+", token)

    # the token is kept as its SHA-256 only
    row = db.execute("SELECT token_hash FROM checkout_sessions WHERE id = %s", (created["id"],)).fetchone()
    assert row[0] == hashlib.sha256(token.encode()).hexdigest()
    dump = db.execute("SELECT t::text FROM checkout_sessions t WHERE id = %s", (created["id"],)).fetchone()[0]
    assert token not in dump


def test_two_sessions_never_share_a_token(shop):
    payment = create_payment(shop)
    tokens = {token_of(create_session(shop, payment["id"])) for _ in range(5)}
    assert len(tokens) == 5


def test_reading_shows_state_and_expiry_but_never_the_url_again(shop):
    created = create_session(shop, create_payment(shop)["id"])
    read = shop.get(f"/v1/checkout-sessions/{created['id']}")
    assert read.status_code == 200
    body = read.json()
    assert body["checkout_url"] is None
    assert token_of(created) not in read.text
    assert {key: value for key, value in body.items() if key != "checkout_url"} == {
        key: value for key, value in created.items() if key != "checkout_url"
    }


def test_the_same_idempotency_key_replays_the_original_session_and_url_byte_for_byte(shop, db):
    payment = create_payment(shop)
    body = {
        "payment_intent": payment["id"],
        "title": "Order 42",
        "success_url": SUCCESS_URL,
        "cancel_url": CANCEL_URL,
    }
    first = shop.post("/v1/checkout-sessions", json=body, headers={"Idempotency-Key": "checkout-42"})
    again = shop.post("/v1/checkout-sessions", json=body, headers={"Idempotency-Key": "checkout-42"})
    assert first.status_code == again.status_code == 200
    assert again.content == first.content
    assert again.headers["Idempotent-Replayed"] == "true"
    assert count_rows(db, "checkout_sessions", shop.keys.installation_id) == 1
    other = shop.post(
        "/v1/checkout-sessions",
        json={**body, "title": "Order 43"},
        headers={"Idempotency-Key": "checkout-42"},
    )
    assert_error(other, 422, "idempotency_key_reused")


def test_checkout_must_be_enabled_for_the_environment(api, bridge, db):
    payment = create_payment(api)
    body = {
        "payment_intent": payment["id"],
        "title": "Order 42",
        "success_url": SUCCESS_URL,
        "cancel_url": CANCEL_URL,
    }
    enable_checkout(bridge, api.keys, enabled=False)
    refused = api.post("/v1/checkout-sessions", json=body, headers={"Idempotency-Key": "k1"})
    error = assert_error(refused, 403, "checkout_not_enabled")
    assert error["type"] == "permission_error"
    assert count_rows(db, "checkout_sessions", api.keys.installation_id) == 0
    # a 403 is not stored: once the operator enables checkout the same key works
    enable_checkout(bridge, api.keys)
    assert api.post("/v1/checkout-sessions", json=body, headers={"Idempotency-Key": "k1"}).status_code == 200


@pytest.mark.parametrize(
    ("field", "url"),
    [
        ("success_url", SUCCESS_URL + "/"),
        ("success_url", SUCCESS_URL + "?order=42"),
        ("success_url", SUCCESS_URL.replace("https", "http")),
        ("cancel_url", "https://evil.example/checkout/cancel"),
        ("cancel_url", CANCEL_URL.replace("cancel", "Cancel")),
    ],
)
def test_each_return_url_must_equal_a_registered_one_exactly(shop, db, field, url):
    payment = create_payment(shop)
    body = {
        "payment_intent": payment["id"],
        "title": "Order 42",
        "success_url": SUCCESS_URL,
        "cancel_url": CANCEL_URL,
        field: url,
    }
    error = assert_error(shop.post("/v1/checkout-sessions", json=body), 400, "url_not_registered", field)
    assert error["type"] == "invalid_request_error"
    assert count_rows(db, "checkout_sessions", shop.keys.installation_id) == 0


@pytest.mark.parametrize(
    ("fields", "status", "code", "param"),
    [
        ({"subscription": "sub_000000000000000000000000"}, 400, "parameters_exclusive", "subscription"),
        ({"payment_intent": None}, 400, "parameter_missing", "payment_intent"),
        (
            {"payment_intent": None, "subscription": "sub_000000000000000000000000"},
            400,
            "resource_missing",
            "subscription",
        ),
        ({"change": "subchg_000000000000000000000000"}, 400, "resource_missing", "change"),
        ({"invoice": "subinv_000000000000000000000000"}, 400, "resource_missing", "invoice"),
        ({"payment_intent": "pi_000000000000000000000000"}, 400, "resource_missing", "payment_intent"),
        ({"title": None}, 400, "parameter_missing", "title"),
        ({"success_url": "ftp://shop.example/ok"}, 400, "parameter_invalid", "success_url"),
        ({"amount": 100}, 400, "parameter_unknown", "amount"),
    ],
)
def test_bad_creation_is_refused_and_creates_nothing(shop, db, fields, status, code, param):
    payment = create_payment(shop)
    body = {
        "payment_intent": payment["id"],
        "title": "Order 42",
        "success_url": SUCCESS_URL,
        "cancel_url": CANCEL_URL,
        **fields,
    }
    body = {key: value for key, value in body.items() if value is not None}
    assert_error(shop.post("/v1/checkout-sessions", json=body), status, code, param)
    assert count_rows(db, "checkout_sessions", shop.keys.installation_id) == 0


def test_a_payment_of_another_installation_is_a_missing_payment(shop, make_api, db):
    foreign = create_payment(make_api())
    body = {
        "payment_intent": foreign["id"],
        "title": "Order 42",
        "success_url": SUCCESS_URL,
        "cancel_url": CANCEL_URL,
    }
    assert_error(shop.post("/v1/checkout-sessions", json=body), 400, "resource_missing", "payment_intent")
    assert count_rows(db, "checkout_sessions", shop.keys.installation_id) == 0


def test_a_payment_that_is_not_open_to_pay_is_refused(shop):
    succeeded = paid(shop)
    canceled = create_payment(shop)
    assert shop.post(f"/v1/payment-intents/{canceled['id']}/cancel").status_code == 200
    for payment in (succeeded, canceled):
        body = {
            "payment_intent": payment["id"],
            "title": "Order 42",
            "success_url": SUCCESS_URL,
            "cancel_url": CANCEL_URL,
        }
        assert_error(
            shop.post("/v1/checkout-sessions", json=body), 409, "resource_state_invalid", "payment_intent"
        )


def test_a_session_of_another_installation_is_not_found(shop, make_api, bridge):
    stranger = make_api()
    enable_checkout(bridge, stranger.keys)
    foreign = create_session(stranger, create_payment(stranger)["id"])
    for response in (
        shop.get(f"/v1/checkout-sessions/{foreign['id']}"),
        shop.post(f"/v1/checkout-sessions/{foreign['id']}/expire"),
    ):
        assert_error(response, 404, "resource_missing", "checkout_session")
    assert stranger.get(f"/v1/checkout-sessions/{foreign['id']}").json()["status"] == "open"


def test_expiring_revokes_the_link_and_cancels_the_unfinished_payment(shop, web):
    payment = create_payment(shop)
    created = create_session(shop, payment["id"])
    expired = shop.post(f"/v1/checkout-sessions/{created['id']}/expire")
    assert expired.status_code == 200, expired.text
    assert expired.json()["status"] == "expired"
    assert expired.json()["checkout_url"] is None
    after = shop.get(f"/v1/payment-intents/{payment['id']}").json()
    assert after["status"] == "canceled" and after["cancellation_reason"] == "abandoned"
    assert event_types(shop, created["id"]) == ["checkout.session.expired"]
    page = shop.get(created["checkout_url"])
    assert page.status_code == 410 and "<form" not in page.text
    # once only
    assert_error(shop.post(f"/v1/checkout-sessions/{created['id']}/expire"), 409, "resource_state_invalid")


def test_expiring_leaves_a_payment_already_paid_by_other_means(shop):
    payment = create_payment(shop)
    created = create_session(shop, payment["id"])
    assert confirm(shop, payment, SUCCEEDS).json()["status"] == "succeeded"  # client-side, not the page
    assert shop.post(f"/v1/checkout-sessions/{created['id']}/expire").json()["status"] == "expired"
    assert shop.get(f"/v1/payment-intents/{payment['id']}").json()["status"] == "succeeded"


def test_expiring_one_session_leaves_the_payment_to_another_open_session(shop):
    payment = create_payment(shop)
    first = create_session(shop, payment["id"])
    second = create_session(shop, payment["id"])
    assert shop.post(f"/v1/checkout-sessions/{first['id']}/expire").json()["status"] == "expired"
    assert shop.get(f"/v1/payment-intents/{payment['id']}").json()["status"] == "requires_payment_method"
    assert shop.post(f"/v1/checkout-sessions/{second['id']}/expire").json()["status"] == "expired"
    assert shop.get(f"/v1/payment-intents/{payment['id']}").json()["status"] == "canceled"


def test_the_expire_operation_takes_no_parameters(shop):
    created = create_session(shop, create_payment(shop)["id"])
    refused = shop.post(f"/v1/checkout-sessions/{created['id']}/expire", json={"reason": "x"})
    assert_error(refused, 400, "parameter_unknown", "reason")
    assert shop.get(f"/v1/checkout-sessions/{created['id']}").json()["status"] == "open"
