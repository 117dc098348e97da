"""Setup intents: created by the server, confirmed client-side with the publishable key and the secret."""

from __future__ import annotations

import concurrent.futures
import hashlib

from tests.helpers import assert_error, count_rows
from tests.payment_methods.support import (
    CHARGES_DECLINED,
    LIVE_CARD,
    SUCCEEDS,
    card,
    confirm,
    listed,
    new_customer,
    new_setup_intent,
    publishable,
)


def test_a_setup_intent_is_created_with_a_secret_shown_once(api, db):
    customer = new_customer(api)
    response = api.post(f"/v1/customers/{customer}/setup-intents", json={"metadata": {"order": "42"}})
    assert response.status_code == 200, response.text
    created = response.json()
    assert created["id"].startswith("seti_") and len(created["id"]) == 29
    assert created["object"] == "setup_intent" and created["livemode"] is False
    assert created["customer"] == customer
    assert created["status"] == "requires_payment_method"
    assert created["usage"] == "off_session"
    assert created["payment_method"] is None
    assert created["metadata"] == {"order": "42"}
    assert created["client_secret"].startswith(created["id"] + "_secret_")
    assert 3600 - 5 <= created["expires_at"] - created["created"] <= 3600 + 5
    # only the hash of the secret is kept, and a read never shows it again
    (stored,) = db.execute(
        "SELECT client_secret_hash FROM setup_intents WHERE id = %s", (created["id"],)
    ).fetchone()
    assert stored == hashlib.sha256(created["client_secret"].encode()).hexdigest()
    read = api.get(f"/v1/setup-intents/{created['id']}")
    assert read.status_code == 200
    assert read.json() == {**created, "client_secret": None}
    assert created["client_secret"] not in read.text


def test_a_setup_intent_body_is_optional_and_strict(api):
    customer = new_customer(api)
    bare = api.post(f"/v1/customers/{customer}/setup-intents")
    assert bare.status_code == 200 and bare.json()["metadata"] == {}
    assert_error(
        api.post(f"/v1/customers/{customer}/setup-intents", json={"usage": "on_session"}),
        400,
        "parameter_unknown",
        "usage",
    )


def test_confirming_saves_the_card_for_the_customer(api):
    customer = new_customer(api)
    setup_intent = new_setup_intent(api, customer)
    with publishable(api) as client:
        response = confirm(client, setup_intent)
    assert response.status_code == 200, response.text
    confirmed = response.json()
    assert confirmed["status"] == "succeeded"
    assert confirmed["payment_method"].startswith("pm_")
    assert confirmed["client_secret"] is None and confirmed["customer"] == customer
    body = listed(api, customer)
    assert [item["id"] for item in body["data"]] == [confirmed["payment_method"]]
    assert body["preferred_payment_method"] == confirmed["payment_method"]
    assert api.get(f"/v1/setup-intents/{setup_intent['id']}").json() == confirmed


def test_a_wrong_or_foreign_client_secret_is_refused_and_saves_nothing(api, db):
    customer = new_customer(api)
    setup_intent, other = new_setup_intent(api, customer), new_setup_intent(api, customer)
    with publishable(api) as client:
        for secret in (setup_intent["client_secret"] + "x", other["client_secret"], "nonsense"):
            response = client.post(
                f"/v1/setup-intents/{setup_intent['id']}/confirm",
                json={"client_secret": secret, "card": card()},
            )
            error = assert_error(response, 401, "client_secret_invalid", "client_secret")
            assert error["type"] == "authentication_error"
    assert count_rows(db, "payment_methods", api.keys.installation_id) == 0
    assert api.get(f"/v1/setup-intents/{setup_intent['id']}").json()["status"] == "requires_payment_method"


def test_confirming_takes_the_publishable_key_only(api):
    customer = new_customer(api)
    setup_intent = new_setup_intent(api, customer)
    response = confirm(api, setup_intent)  # the secret key, on a client-side route
    assert_error(response, 401, "invalid_api_key")
    assert api.get(f"/v1/setup-intents/{setup_intent['id']}").json()["status"] == "requires_payment_method"


def test_a_card_the_network_refuses_is_402_with_its_decline_code_and_saves_nothing(api, db):
    customer = new_customer(api)
    setup_intent = new_setup_intent(api, customer)
    refused = {
        "test_mode_live_card": card(LIVE_CARD),
        "incorrect_number": card("4242424242424241"),
        "expired_card": card(SUCCEEDS, exp_month=1, exp_year=2020),
    }
    with publishable(api) as client:
        for decline_code, refused_card in refused.items():
            response = client.post(
                f"/v1/setup-intents/{setup_intent['id']}/confirm",
                json={"client_secret": setup_intent["client_secret"], "card": refused_card},
            )
            error = assert_error(response, 402, "card_declined", "card[number]")
            assert error["type"] == "card_error" and error["decline_code"] == decline_code
        assert count_rows(db, "payment_methods", api.keys.installation_id) == 0
        assert (
            api.get(f"/v1/setup-intents/{setup_intent['id']}").json()["status"] == "requires_payment_method"
        )
        # the same intent then takes a good card
        assert confirm(client, setup_intent).json()["status"] == "succeeded"


def test_a_malformed_card_is_400_naming_the_field(api):
    customer = new_customer(api)
    setup_intent = new_setup_intent(api, customer)
    secret = setup_intent["client_secret"]
    url = f"/v1/setup-intents/{setup_intent['id']}/confirm"
    with publishable(api) as client:
        cases = [
            ({"client_secret": secret, "card": card(exp_month=13)}, "parameter_invalid", "card[exp_month]"),
            ({"client_secret": secret, "card": card(cvc="12a")}, "parameter_invalid", "card[cvc]"),
            ({"client_secret": secret, "card": {**card(), "name": "x"}}, "parameter_unknown", "card[name]"),
            ({"client_secret": secret}, "parameter_missing", "card"),
            ({"card": card()}, "parameter_missing", "client_secret"),
        ]
        for body, code, param in cases:
            assert_error(client.post(url, json=body), 400, code, param)


def test_a_confirmed_setup_intent_cannot_be_confirmed_again(api):
    customer = new_customer(api)
    setup_intent = new_setup_intent(api, customer)
    with publishable(api) as client:
        assert confirm(client, setup_intent).status_code == 200
        error = assert_error(confirm(client, setup_intent, CHARGES_DECLINED), 409, "resource_state_invalid")
    assert error["type"] == "invalid_request_error"
    assert len(listed(api, customer)["data"]) == 1


def test_a_setup_intent_expires_after_an_hour(api):
    customer = new_customer(api)
    setup_intent = new_setup_intent(api, customer)
    late = new_setup_intent(api, customer)
    with publishable(api) as client:
        api.post("/v1/test-helpers/clock/advance", json={"seconds": 3500})
        assert confirm(client, setup_intent).status_code == 200
        api.post("/v1/test-helpers/clock/advance", json={"seconds": 200})
        assert_error(confirm(client, late), 409, "resource_state_invalid")


def test_a_confirm_replayed_with_its_idempotency_key_answers_the_first_result_once(api, db):
    customer = new_customer(api)
    setup_intent = new_setup_intent(api, customer)
    with publishable(api) as client:
        first = confirm(client, setup_intent, **{"Idempotency-Key": "confirm-1"})
        again = confirm(client, setup_intent, **{"Idempotency-Key": "confirm-1"})
        assert first.status_code == again.status_code == 200
        assert again.headers["Idempotent-Replayed"] == "true"
        assert again.content == first.content
        other_card = confirm(client, setup_intent, CHARGES_DECLINED, **{"Idempotency-Key": "confirm-1"})
        assert_error(other_card, 422, "idempotency_key_reused")
    assert count_rows(db, "payment_methods", api.keys.installation_id) == 1


def test_a_declined_confirm_replays_its_decline(api, db):
    customer = new_customer(api)
    setup_intent = new_setup_intent(api, customer)
    with publishable(api) as client:
        first = confirm(client, setup_intent, LIVE_CARD, **{"Idempotency-Key": "declined-1"})
        again = confirm(client, setup_intent, LIVE_CARD, **{"Idempotency-Key": "declined-1"})
    assert_error(first, 402, "card_declined", "card[number]")
    assert again.headers["Idempotent-Replayed"] == "true" and again.content == first.content
    assert count_rows(db, "payment_methods", api.keys.installation_id) == 0


def test_a_processor_outage_is_503_and_leaves_the_key_free_for_a_retry(api, db):
    customer = new_customer(api)
    setup_intent = new_setup_intent(api, customer)
    fault = api.post(
        "/v1/test-helpers/processor-faults",
        json={"operation_type": "tokenize", "mode": "transient", "count": 1},
    )
    assert fault.status_code == 200, fault.text
    with publishable(api) as client:
        failed = confirm(client, setup_intent, **{"Idempotency-Key": "retry-me"})
        assert_error(failed, 503, "processor_unavailable")
        assert count_rows(db, "payment_methods", api.keys.installation_id) == 0
        retried = confirm(client, setup_intent, **{"Idempotency-Key": "retry-me"})
    assert retried.status_code == 200, retried.text
    assert "Idempotent-Replayed" not in retried.headers
    assert retried.json()["status"] == "succeeded"


def test_unknown_setup_intents_are_404(api):
    missing = "seti_000000000000000000000000"
    assert_error(api.get(f"/v1/setup-intents/{missing}"), 404, "resource_missing", "setup_intent")
    with publishable(api) as client:
        response = client.post(
            f"/v1/setup-intents/{missing}/confirm",
            json={"client_secret": f"{missing}_secret_x", "card": card()},
        )
    assert_error(response, 404, "resource_missing", "setup_intent")
    assert_error(
        api.post("/v1/customers/cus_000000000000000000000000/setup-intents"),
        404,
        "resource_missing",
        "customer",
    )


def test_two_setup_intents_confirmed_at_once_save_one_preferred_card(api, db):
    customer = new_customer(api)
    intents = [new_setup_intent(api, customer) for _ in range(6)]
    with publishable(api) as client, concurrent.futures.ThreadPoolExecutor(max_workers=6) as pool:
        responses = list(pool.map(lambda intent: confirm(client, intent), intents))
    assert {response.status_code for response in responses} == {200}, [r.text for r in responses]
    assert len({response.json()["payment_method"] for response in responses}) == 1
    rows = db.execute("SELECT preferred FROM payment_methods WHERE customer_id = %s", (customer,)).fetchall()
    assert rows == [(True,)]
