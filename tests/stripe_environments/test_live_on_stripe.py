"""Live mode never simulates: a live environment with no processor refuses what needs one (403, nothing
recorded); one on Stripe takes a payment with a Stripe.js token, captures and refunds through Stripe
(the double in front of localstripe), answers Stripe's outage with 503 and Retry-After, and never shows
Stripe's ids."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.engine.conftest import assert_ledger_verifies, wait_for_operation
from tests.harness import TLS
from tests.helpers import assert_error, count_rows
from tests.payments.support import card
from tests.stripe_environments.conftest import StripeEnvironments
from tests.stripe_environments.support import (
    card_token,
    charge_of,
    confirm_with_token,
    double_requests,
    fail_next,
    processor_authorization,
    stripe_get,
    stripe_ids,
)

INTAKE = [
    ("/v1/payment-intents", {"amount": 1000, "currency": "eur"}),
    ("/v1/refunds", {"payment_intent": "pi_000000000000000000000000"}),
    ("/v1/payouts", {"amount": 1000, "currency": "eur"}),
    (
        "/v1/transfers",
        {
            "destination": "acct_000000000000000000000000",
            "amount": 100,
            "source_transaction": "pi_0000000000",
        },
    ),
    ("/v1/reconciliation-runs", {}),
]
TABLES = ("payment_intents", "refunds", "payouts", "transfers", "reconciliation_runs", "operations", "events")


def create(api: httpx.Client, amount: int = 5000, **fields: Any) -> dict[str, Any]:
    created = api.post("/v1/payment-intents", json={"amount": amount, "currency": "eur", **fields})
    assert created.status_code == 200, created.text
    payment: dict[str, Any] = created.json()
    return payment


def test_live_with_no_processor_refuses_what_needs_one_with_403_and_records_nothing(on_stripe, db):
    live = on_stripe.without_processor()
    installation = live.keys.installation_id
    for path, body in INTAKE:
        for _ in range(2):  # the same key again: refused again, never a stored answer
            refused = live.post(path, json=body, headers={"Idempotency-Key": f"live{path}"})
            error = assert_error(refused, 403, "processor_not_configured")
            assert error["type"] == "permission_error", path
    for table in (*TABLES, "idempotency_records"):
        assert count_rows(db, table, installation) == 0, table
    # what reads or records no money still works
    assert live.post("/v1/customers", json={"email": "ada@example.com"}).status_code == 200
    assert live.get("/v1/payment-intents").json()["data"] == []


def test_openapi_lists_the_403_on_every_route_that_answers_it(on_stripe):
    spec = httpx.get(f"{on_stripe.web.base_url}/openapi.json", verify=TLS).json()
    routes = [
        *(path for path, _ in INTAKE),
        "/v1/payment-intents/{payment_intent}/confirm",
        "/v1/payment-intents/{payment_intent}/capture",
        "/v1/payment-intents/{payment_intent}/cancel",
        "/v1/payment-intents/{payment_intent}/increment-authorization",
        "/v1/setup-intents/{setup_intent}/confirm",
        "/v1/allocation-groups/{allocation_group}/commit",
        "/v1/connected-accounts/{connected_account}/payouts",
        "/v1/payouts/{payout}/reverse",
        "/v1/transfers/{transfer}/reversals",
        "/v1/disputes/{dispute}/evidence",
        "/v1/disputes/{dispute}/close",
        "/v1/invoices/{invoice}/finalize",
        "/v1/subscriptions",
    ]
    for path in routes:
        responses = spec["paths"][path]["post"]["responses"]
        assert "processor_not_configured" in responses["403"]["description"], path
    confirm = spec["paths"]["/v1/payment-intents/{payment_intent}/confirm"]["post"]
    assert confirm["responses"]["503"]["headers"]["Retry-After"]["required"] is True
    body = confirm["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
    fields = spec["components"]["schemas"][body]["properties"]
    assert "Stripe.js" in fields["card_token"]["description"] and "card" in fields


def test_a_live_payment_on_stripe_is_confirmed_with_a_token_captured_and_refunded(on_stripe, db, servers):
    live = on_stripe.api(livemode=True)
    payment = create(live, 5000, capture_method="manual")
    assert payment["livemode"] is True
    confirmed = confirm_with_token(live, payment, card_token(on_stripe.stripe))
    assert confirmed.status_code == 200, confirmed.text
    assert confirmed.json()["status"] == "requires_capture"
    captured = live.post(f"/v1/payment-intents/{payment['id']}/capture", headers={"Idempotency-Key": "cap"})
    assert captured.status_code == 200, captured.text
    assert (captured.json()["status"], captured.json()["amount_received"]) == ("succeeded", 5000)
    refund = live.post("/v1/refunds", json={"payment_intent": payment["id"], "amount": 2000})
    assert refund.status_code == 200, refund.text
    wait_for_operation(live, refund.json()["operation"], {"succeeded"})
    assert live.get(f"/v1/refunds/{refund.json()['id']}").json()["status"] == "succeeded"
    shown = live.get(f"/v1/payment-intents/{payment['id']}").json()
    assert shown["amount_refunded"] == 2000
    # Stripe holds the charge and its refund
    intent_id = processor_authorization(db, payment["id"])
    intent = stripe_get(on_stripe.stripe, f"/v1/payment_intents/{intent_id}")
    assert (intent["amount"], intent["status"], intent["metadata"]["reference"]) == (
        5000,
        "succeeded",
        payment["id"],
    )
    charge = charge_of(on_stripe.stripe, intent_id)
    assert charge["amount_refunded"] == 2000
    # and none of its ids reached an answer
    answers = json.dumps([payment, confirmed.json(), captured.json(), refund.json(), shown])
    answers += live.get("/v1/events", params={"limit": 100}).text
    leaked = {found for found in stripe_ids([intent, charge]) if found in answers}
    assert not leaked, leaked
    assert_ledger_verifies(servers)


def test_a_typed_card_number_is_refused_on_stripe_and_nothing_is_recorded(on_stripe, db):
    sandbox = on_stripe.api(livemode=False)  # a sandbox on Stripe's test mode: Stripe.js only, too
    payment = create(sandbox)
    typed = httpx.post(
        f"{sandbox.base_url}/v1/payment-intents/{payment['id']}/confirm",
        json={"client_secret": payment["client_secret"], "card": card()},
        headers={"Authorization": f"Bearer {payment['publishable_key']}"},
        verify=TLS,
    )
    error = assert_error(typed, 400, "parameter_invalid", "card")
    assert "card_token_required" in error["message"]
    assert sandbox.get(f"/v1/payment-intents/{payment['id']}").json()["status"] == "requires_payment_method"
    assert count_rows(db, "payment_methods", sandbox.keys.installation_id) == 0
    both = confirm_with_token(sandbox, payment, card_token(on_stripe.stripe), card=card())
    assert_error(both, 400, "parameters_exclusive", "card_token")


@pytest.mark.parametrize("when", ["before", "after"], ids=["stripe-down", "answer-lost-after-capturing"])
def test_stripe_down_on_a_capture_is_503_with_retry_after_and_the_retry_captures_once(
    on_stripe: StripeEnvironments, db: Any, when: str
) -> None:
    live = on_stripe.api(livemode=True)
    payment = create(live, 3000, capture_method="manual")
    assert confirm_with_token(live, payment, card_token(on_stripe.stripe)).status_code == 200
    intent_id = processor_authorization(db, payment["id"])
    capture_path = f"/v1/payment_intents/{intent_id}/capture"
    fail_next(on_stripe.stripe, capture_path, when=when)
    headers = {"Idempotency-Key": f"capture-{when}"}
    down = live.post(f"/v1/payment-intents/{payment['id']}/capture", headers=headers)
    error = assert_error(down, 503, "processor_unavailable")
    assert error["type"] == "api_error" and int(down.headers["Retry-After"]) > 0
    assert live.get(f"/v1/payment-intents/{payment['id']}").json()["status"] == "requires_capture"
    again = live.post(f"/v1/payment-intents/{payment['id']}/capture", headers=headers)
    assert again.status_code == 200, again.text
    assert (again.json()["status"], again.json()["amount_received"]) == ("succeeded", 3000)
    captures = [entry for entry in double_requests(on_stripe.stripe) if entry["path"] == capture_path]
    assert [entry["status"] for entry in captures] == [500, 200]
    # one key for both tries: Stripe captured once (a capture lost on its way back is replayed)
    assert len({entry["idempotency_key"] for entry in captures}) == 1
    assert stripe_get(on_stripe.stripe, f"/v1/payment_intents/{intent_id}")["status"] == "succeeded"
    charge = charge_of(on_stripe.stripe, intent_id)
    assert (charge["captured"], charge["amount"], charge["amount_refunded"]) == (True, 3000, 0)


def test_a_card_saved_on_stripe_shows_no_identifier_of_stripes(on_stripe, db):
    sandbox = on_stripe.api(livemode=False)
    customer = sandbox.post("/v1/customers", json={"email": "ada@example.com"}).json()
    setup = sandbox.post(f"/v1/customers/{customer['id']}/setup-intents", json={})
    assert setup.status_code == 200, setup.text
    confirmed = httpx.post(
        f"{sandbox.base_url}/v1/setup-intents/{setup.json()['id']}/confirm",
        json={"client_secret": setup.json()["client_secret"], "card_token": card_token(on_stripe.stripe)},
        headers={"Authorization": f"Bearer {sandbox.keys.publishable_key}"},
        verify=TLS,
    )
    assert confirmed.status_code == 200, confirmed.text
    listed = sandbox.get(f"/v1/customers/{customer['id']}/payment-methods")
    (method,) = listed.json()["data"]
    assert (method["card"]["brand"], method["card"]["last4"]) == ("visa", "4242")
    (reference,) = db.execute(
        "SELECT processor_token FROM payment_methods WHERE id = %s", (method["id"],)
    ).fetchone()
    stripe_customer, _, stripe_card = reference.partition("/")
    at_stripe = stripe_get(on_stripe.stripe, f"/v1/customers/{stripe_customer}/sources/{stripe_card}")
    shown = confirmed.text + listed.text
    for value in (stripe_customer, stripe_card, at_stripe["fingerprint"]):
        assert value not in shown, value
    # the same number saved again is recognised as the same card (the fingerprint, digested, still matches)
    again = sandbox.post(f"/v1/customers/{customer['id']}/setup-intents", json={}).json()
    httpx.post(
        f"{sandbox.base_url}/v1/setup-intents/{again['id']}/confirm",
        json={"client_secret": again["client_secret"], "card_token": card_token(on_stripe.stripe)},
        headers={"Authorization": f"Bearer {sandbox.keys.publishable_key}"},
        verify=TLS,
    ).raise_for_status()
    assert len(sandbox.get(f"/v1/customers/{customer['id']}/payment-methods").json()["data"]) == 1
