"""Payment intents over HTTP: creation, every sandbox card, the lifecycle and its refusals."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.harness import TLS
from tests.helpers import assert_error, count_rows
from tests.payments.support import (
    AUTHENTICATE,
    DECLINES_LATER,
    DISPUTE_LATER,
    GENERIC_DECLINE,
    INSUFFICIENT_FUNDS,
    NOT_A_SANDBOX_CARD,
    RISK_REVIEW,
    SUCCEEDS,
    balance_of,
    confirm,
    create_payment,
    event_types,
    ledger_balance,
    paid,
)


def test_creation_answers_requires_payment_method_with_client_secret_and_publishable_key(api):
    created = create_payment(
        api, 2500, description="Order 42", metadata={"order": "42"}, external_reference="order-42"
    )
    assert created["object"] == "payment_intent"
    assert re.fullmatch(r"pi_[0-9A-Za-z]{24}", created["id"])
    assert created["status"] == "requires_payment_method"
    assert created["capture_method"] == "automatic"
    assert (created["amount"], created["currency"]) == (2500, "eur")
    assert created["amount_capturable"] == created["amount_received"] == created["amount_refunded"] == 0
    assert created["client_secret"].startswith(created["id"] + "_secret_")
    assert created["publishable_key"] == api.keys.publishable_key
    assert created["livemode"] is False
    assert created["fees"] == {
        "status": "pending",
        "reserve": None,
        "commission": None,
        "collected": None,
        "prior_recovery": 0,
        "outstanding": None,
    }
    read = api.get(f"/v1/payment-intents/{created['id']}").json()
    assert read["client_secret"] is None  # shown once, at creation
    assert read["description"] == "Order 42" and read["metadata"] == {"order": "42"}
    assert "payment_intent.created" in event_types(api, created["id"])


@pytest.mark.parametrize(
    ("body", "code", "param"),
    [
        ({"amount": 0, "currency": "eur"}, "amount_invalid", "amount"),
        ({"amount": -5, "currency": "eur"}, "amount_invalid", "amount"),
        ({"amount": 100_000_000, "currency": "eur"}, "amount_invalid", "amount"),
        ({"amount": 12.5, "currency": "eur"}, "amount_invalid", "amount"),
        ({"amount": "100", "currency": "eur"}, "amount_invalid", "amount"),
        ({"amount": 100, "currency": "xyz"}, "currency_invalid", "currency"),
        ({"amount": 100, "currency": "EUR"}, "currency_invalid", "currency"),
        ({"currency": "eur"}, "parameter_missing", "amount"),
        ({"amount": 100, "currency": "eur", "tip": 5}, "parameter_unknown", "tip"),
        (
            {"amount": 100, "currency": "eur", "capture_method": "later"},
            "parameter_invalid",
            "capture_method",
        ),
        (
            {"amount": 100, "currency": "eur", "merchant": "mer_000000000000000000000000"},
            "resource_missing",
            "merchant",
        ),
        (
            {
                "amount": 100,
                "currency": "eur",
                "distribution": {"allocations": [{"recipient": "acct_x", "role": "merchant", "amount": 100}]},
            },
            "distribution_invalid",  # a direct installation does not distribute (tests/transfers/)
            "distribution",
        ),
    ],
)
def test_bad_creation_is_refused_and_creates_nothing(api, db, body, code, param):
    assert_error(api.post("/v1/payment-intents", json=body), 400, code, param)
    assert count_rows(db, "payment_intents", api.keys.installation_id) == 0


def test_a_customer_of_another_installation_is_a_missing_customer(api, make_api, db):
    stranger = make_api()
    foreign = stranger.post("/v1/customers", json={"email": "x@example.com"}).json()
    refused = api.post(
        "/v1/payment-intents", json={"amount": 100, "currency": "eur", "customer": foreign["id"]}
    )
    assert_error(refused, 400, "resource_missing", "customer")
    assert count_rows(db, "payment_intents", api.keys.installation_id) == 0


def test_a_payment_of_another_installation_is_not_found(api, make_api):
    foreign = create_payment(make_api())
    assert_error(api.get(f"/v1/payment-intents/{foreign['id']}"), 404, "resource_missing", "payment_intent")
    assert_error(
        api.post(f"/v1/payment-intents/{foreign['id']}/cancel"), 404, "resource_missing", "payment_intent"
    )


def test_4242_succeeds_and_the_capture_lands_in_the_ledger_and_the_pending_balance(api, db):
    payment = create_payment(api, 2000)
    confirmed = confirm(api, payment, SUCCEEDS)
    assert confirmed.status_code == 200, confirmed.text
    body = confirmed.json()
    assert body["status"] == "succeeded"
    assert body["amount_received"] == 2000 and body["amount_capturable"] == 0
    assert body["payment_method"].startswith("pm_")
    assert body["client_secret"] is None
    installation = api.keys.installation_id
    assert ledger_balance(db, installation, "world:card_network") == -2000
    assert ledger_balance(db, installation, "balance:pending") == 2000
    assert balance_of(api, "pending") == 2000 and balance_of(api, "available") == 0
    assert event_types(api, payment["id"]) == ["payment_intent.created", "payment_intent.succeeded"]


def test_the_dispute_card_succeeds_like_4242_and_the_risk_card_waits_for_a_review(api):
    # its dispute comes later (tests/disputes); the review's approval is in tests/risk
    confirmed = confirm(api, create_payment(api), DISPUTE_LATER)
    assert confirmed.status_code == 200, confirmed.text
    assert confirmed.json()["status"] == "succeeded"
    held = confirm(api, create_payment(api), RISK_REVIEW)
    assert held.status_code == 200, held.text
    assert held.json()["status"] == "requires_capture"


@pytest.mark.parametrize(
    ("number", "decline_code"),
    [
        (GENERIC_DECLINE, "generic_decline"),
        (INSUFFICIENT_FUNDS, "insufficient_funds"),
        (DECLINES_LATER, "generic_decline"),
    ],
)
def test_a_declined_card_is_a_402_the_payment_records_and_another_card_then_works(
    api, db, number, decline_code
):
    payment = create_payment(api)
    declined = confirm(api, payment, number)
    error = assert_error(declined, 402, "card_declined")
    assert error["type"] == "card_error"
    assert error["decline_code"] == decline_code
    assert error["payment_intent"] == payment["id"]
    after = api.get(f"/v1/payment-intents/{payment['id']}").json()
    assert after["status"] == "requires_payment_method"
    assert after["last_payment_error"]["decline_code"] == decline_code
    assert after["amount_received"] == 0
    assert ledger_balance(db, api.keys.installation_id, "balance:pending") == 0
    assert "payment_intent.payment_failed" in event_types(api, payment["id"])

    retried = confirm(api, payment, SUCCEEDS)
    assert retried.status_code == 200, retried.text
    assert retried.json()["status"] == "succeeded"
    assert retried.json()["last_payment_error"] is None


def test_a_card_that_is_not_a_sandbox_card_is_declined_and_never_stored(api, db):
    payment = create_payment(api)
    error = assert_error(confirm(api, payment, NOT_A_SANDBOX_CARD), 402, "card_declined")
    assert error["decline_code"] == "test_mode_live_card"
    assert api.get(f"/v1/payment-intents/{payment['id']}").json()["status"] == "requires_payment_method"
    dump = db.execute("SELECT string_agg(t::text, ' ') FROM payment_methods t").fetchone()[0] or ""
    assert NOT_A_SANDBOX_CARD not in dump


def test_bank_authentication_goes_through_the_hosted_page_and_back_to_the_caller(api, db):
    payment = create_payment(api, 4500)
    started = confirm(api, payment, AUTHENTICATE, return_url="https://shop.example/return?order=7")
    assert started.status_code == 200, started.text
    body = started.json()
    assert body["status"] == "requires_action"
    action = body["next_action"]
    assert action["type"] == "redirect_to_url"
    assert action["redirect_to_url"]["return_url"] == "https://shop.example/return?order=7"
    page_url = action["redirect_to_url"]["url"]
    assert page_url.startswith(api.base_url.__str__().rstrip("/") + "/authenticate/")

    page = httpx.get(page_url, verify=TLS)
    assert page.status_code == 200
    assert "€45.00" in page.text
    policy = page.headers["Content-Security-Policy"]
    assert "default-src 'none'" in policy and "https://shop.example" in policy
    assert api.keys.secret not in page.text and payment["client_secret"] not in page.text

    done = httpx.post(page_url, data={"decision": "approve"}, verify=TLS)
    assert done.status_code == 303
    assert done.headers["location"] == (
        f"https://shop.example/return?order=7&payment_intent={payment['id']}&redirect_status=succeeded"
    )
    after = api.get(f"/v1/payment-intents/{payment['id']}").json()
    assert after["status"] == "succeeded" and after["next_action"] is None
    assert ledger_balance(db, api.keys.installation_id, "balance:pending") == 4500
    assert event_types(api, payment["id"]) == [
        "payment_intent.created",
        "payment_intent.requires_action",
        "payment_intent.succeeded",
    ]
    # the link worked once
    assert httpx.get(page_url, verify=TLS).status_code == 404
    assert httpx.post(page_url, data={"decision": "approve"}, verify=TLS).status_code == 404


def test_a_failed_bank_authentication_leaves_the_payment_to_try_again(api):
    payment = create_payment(api)
    started = confirm(api, payment, AUTHENTICATE).json()
    page_url = started["next_action"]["redirect_to_url"]["url"]
    done = httpx.post(page_url, data={"decision": "fail"}, verify=TLS)
    assert done.status_code == 200 and "Authentication failed" in done.text
    after = api.get(f"/v1/payment-intents/{payment['id']}").json()
    assert after["status"] == "requires_payment_method"
    assert after["last_payment_error"]["decline_code"] == "authentication_failed"
    assert confirm(api, payment, SUCCEEDS).json()["status"] == "succeeded"


def test_confirming_needs_the_publishable_key_and_the_payments_own_client_secret(api):
    payment = create_payment(api)
    other = create_payment(api)
    wrong_secret = confirm(api, {**payment, "client_secret": other["client_secret"]})
    assert_error(wrong_secret, 401, "client_secret_invalid", "client_secret")
    with_secret_key = httpx.post(
        f"{api.base_url}/v1/payment-intents/{payment['id']}/confirm",
        json={
            "client_secret": payment["client_secret"],
            "card": {"number": SUCCEEDS, "exp_month": 1, "exp_year": 2035, "cvc": "1"},
        },
        headers={"Authorization": f"Bearer {api.keys.secret}"},
        verify=TLS,
    )
    assert_error(with_secret_key, 401, "invalid_api_key")
    assert api.get(f"/v1/payment-intents/{payment['id']}").json()["status"] == "requires_payment_method"


def test_a_publishable_key_cannot_read_or_create_payments(api):
    headers = {"Authorization": f"Bearer {api.keys.publishable_key}"}
    assert_error(
        httpx.post(
            f"{api.base_url}/v1/payment-intents",
            json={"amount": 1, "currency": "eur"},
            headers=headers,
            verify=TLS,
        ),
        401,
        "invalid_api_key",
    )


def test_confirming_a_succeeded_payment_again_is_refused_and_charges_nothing_more(api, db):
    payment = create_payment(api)
    assert confirm(api, payment).status_code == 200
    assert_error(confirm(api, payment), 409, "resource_state_invalid")
    assert ledger_balance(db, api.keys.installation_id, "balance:pending") == 2000


def test_a_repeated_confirm_with_the_same_idempotency_key_is_replayed_not_recharged(api, db):
    payment = create_payment(api)
    headers = {"Authorization": f"Bearer {payment['publishable_key']}", "Idempotency-Key": "confirm-1"}
    body = {
        "client_secret": payment["client_secret"],
        "card": {"number": SUCCEEDS, "exp_month": 1, "exp_year": 2035, "cvc": "123"},
    }
    url = f"{api.base_url}/v1/payment-intents/{payment['id']}/confirm"
    first = httpx.post(url, json=body, headers=headers, verify=TLS)
    second = httpx.post(url, json=body, headers=headers, verify=TLS)
    assert first.status_code == second.status_code == 200
    assert second.headers["Idempotent-Replayed"] == "true"
    assert first.content == second.content
    assert ledger_balance(db, api.keys.installation_id, "balance:pending") == 2000


def test_manual_capture_authorizes_first_then_captures_all_or_part(api, db):
    payment = create_payment(api, 5000, capture_method="manual")
    authorized = confirm(api, payment).json()
    assert authorized["status"] == "requires_capture"
    assert authorized["amount_capturable"] == 5000 and authorized["amount_received"] == 0
    assert ledger_balance(db, api.keys.installation_id, "balance:pending") == 0

    too_much = api.post(f"/v1/payment-intents/{payment['id']}/capture", json={"amount_to_capture": 5001})
    assert_error(too_much, 400, "amount_invalid", "amount_to_capture")
    captured = api.post(f"/v1/payment-intents/{payment['id']}/capture", json={"amount_to_capture": 3000})
    assert captured.status_code == 200, captured.text
    assert captured.json()["status"] == "succeeded"
    assert captured.json()["amount_received"] == 3000 and captured.json()["amount_capturable"] == 0
    assert ledger_balance(db, api.keys.installation_id, "balance:pending") == 3000
    assert event_types(api, payment["id"]) == [
        "payment_intent.created",
        "payment_intent.amount_capturable_updated",
        "payment_intent.succeeded",
    ]
    assert_error(api.post(f"/v1/payment-intents/{payment['id']}/capture"), 409, "resource_state_invalid")
    assert ledger_balance(db, api.keys.installation_id, "balance:pending") == 3000


def test_capture_of_a_payment_that_is_not_authorized_is_refused(api):
    payment = create_payment(api)
    assert_error(api.post(f"/v1/payment-intents/{payment['id']}/capture"), 409, "resource_state_invalid")


def test_cancel_releases_an_authorization_and_a_succeeded_payment_cannot_be_cancelled(api, db):
    held = create_payment(api, capture_method="manual")
    confirm(api, held)
    canceled = api.post(f"/v1/payment-intents/{held['id']}/cancel", json={"cancellation_reason": "abandoned"})
    assert canceled.status_code == 200, canceled.text
    assert canceled.json()["status"] == "canceled"
    assert canceled.json()["cancellation_reason"] == "abandoned"
    assert canceled.json()["amount_capturable"] == 0
    assert "payment_intent.canceled" in event_types(api, held["id"])
    assert_error(api.post(f"/v1/payment-intents/{held['id']}/capture"), 409, "resource_state_invalid")

    done = paid(api)
    assert_error(api.post(f"/v1/payment-intents/{done['id']}/cancel"), 409, "resource_state_invalid")
    assert api.get(f"/v1/payment-intents/{done['id']}").json()["status"] == "succeeded"


def test_increment_authorization_raises_the_hold_of_a_manual_payment(api):
    payment = create_payment(api, 1000, capture_method="manual")
    confirm(api, payment)
    raised = api.post(f"/v1/payment-intents/{payment['id']}/increment-authorization", json={"amount": 1500})
    assert raised.status_code == 200, raised.text
    assert raised.json()["amount"] == 1500 and raised.json()["amount_capturable"] == 1500
    lower = api.post(f"/v1/payment-intents/{payment['id']}/increment-authorization", json={"amount": 1200})
    assert_error(lower, 400, "amount_invalid", "amount")
    assert api.post(f"/v1/payment-intents/{payment['id']}/capture").json()["amount_received"] == 1500


def test_a_refused_increment_leaves_the_old_hold_standing(api):
    payment = create_payment(api, 1000, capture_method="manual")
    assert confirm(api, payment).status_code == 200
    api.post(
        "/v1/test-helpers/processor-faults",
        json={"operation_type": "increment_authorization", "mode": "permanent", "count": 1},
    )
    refused = api.post(f"/v1/payment-intents/{payment['id']}/increment-authorization", json={"amount": 2000})
    assert_error(refused, 402, "card_declined")
    after = api.get(f"/v1/payment-intents/{payment['id']}").json()
    assert (after["amount"], after["amount_capturable"], after["status"]) == (1000, 1000, "requires_capture")
    automatic = paid(api, 1000)
    assert_error(
        api.post(f"/v1/payment-intents/{automatic['id']}/increment-authorization", json={"amount": 2000}),
        409,
        "resource_state_invalid",
    )


def test_a_processor_outage_during_confirm_charges_nothing_and_the_same_request_then_succeeds(api, db):
    payment = create_payment(api)
    api.post(
        "/v1/test-helpers/processor-faults",
        json={"operation_type": "authorize", "mode": "transient", "count": 1},
    )
    headers = {"Authorization": f"Bearer {payment['publishable_key']}", "Idempotency-Key": "confirm-outage"}
    body = {
        "client_secret": payment["client_secret"],
        "payment_method": None,
        "card": {"number": SUCCEEDS, "exp_month": 1, "exp_year": 2035, "cvc": "123"},
    }
    url = f"{api.base_url}/v1/payment-intents/{payment['id']}/confirm"
    assert_error(httpx.post(url, json=body, headers=headers, verify=TLS), 503, "processor_unavailable")
    assert api.get(f"/v1/payment-intents/{payment['id']}").json()["status"] == "requires_payment_method"
    assert ledger_balance(db, api.keys.installation_id, "balance:pending") == 0
    retried = httpx.post(url, json=body, headers=headers, verify=TLS)
    assert retried.status_code == 200, retried.text
    assert retried.json()["status"] == "succeeded"
    assert ledger_balance(db, api.keys.installation_id, "balance:pending") == 2000


def test_update_changes_amount_and_details_before_confirmation_only(api):
    payment = create_payment(api, 1000)
    updated = api.post(
        f"/v1/payment-intents/{payment['id']}/update",
        json={"amount": 1800, "description": "bigger", "metadata": {"a": "1"}},
    )
    assert updated.status_code == 200, updated.text
    assert updated.json()["amount"] == 1800 and updated.json()["description"] == "bigger"
    removed = api.post(f"/v1/payment-intents/{payment['id']}/update", json={"metadata": {"a": "", "b": "2"}})
    assert removed.json()["metadata"] == {"b": "2"}
    assert confirm(api, payment).json()["amount_received"] == 1800
    assert_error(
        api.post(f"/v1/payment-intents/{payment['id']}/update", json={"amount": 500}),
        409,
        "resource_state_invalid",
    )


def test_payments_are_listed_newest_first(api):
    first = create_payment(api)
    second = create_payment(api)
    listed = api.get("/v1/payment-intents", params={"limit": 1})
    body = listed.json()
    assert [item["id"] for item in body["data"]] == [second["id"]]
    assert body["has_more"] is True
    rest = api.get("/v1/payment-intents", params={"cursor": body["next_cursor"]}).json()
    assert first["id"] in [item["id"] for item in rest["data"]]


def test_live_mode_with_no_processor_refuses_a_payment_and_records_nothing(make_api, db):
    live = make_api(livemode=True)
    refused = live.post(
        "/v1/payment-intents", json={"amount": 1000, "currency": "eur"}, headers={"Idempotency-Key": "live-1"}
    )
    error = assert_error(refused, 403, "processor_not_configured")
    assert error["type"] == "permission_error" and "moneyrail settings set" in error["message"]
    assert count_rows(db, "payment_intents", live.keys.installation_id) == 0
    assert count_rows(db, "idempotency_records", live.keys.installation_id) == 0
    assert count_rows(db, "events", live.keys.installation_id) == 0
    assert ledger_balance(db, live.keys.installation_id, "balance:pending") == 0
