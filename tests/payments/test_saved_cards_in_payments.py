"""Payments with a customer's saved cards: consent to save, pay again with the saved card, isolation."""

from __future__ import annotations

import httpx

from tests.harness import TLS
from tests.helpers import assert_error, count_rows
from tests.payments.support import (
    DECLINES_LATER,
    GENERIC_DECLINE,
    SUCCEEDS,
    card,
    confirm,
    create_payment,
)


def new_customer(api, email: str = "ada@example.com") -> str:
    customer_id: str = api.post("/v1/customers", json={"email": email}).json()["id"]
    return customer_id


def saved_cards(api, customer_id: str) -> list[dict]:
    body = api.get(f"/v1/customers/{customer_id}/payment-methods").json()
    return body["data"]


def test_with_consent_the_card_is_saved_and_pays_the_next_payment(api):
    customer = new_customer(api)
    first = create_payment(api, 1500, customer=customer)
    confirmed = confirm(api, first, SUCCEEDS, save_payment_method=True)
    assert confirmed.json()["status"] == "succeeded"
    [saved] = saved_cards(api, customer)
    assert saved["card"]["last4"] == "4242" and saved["preferred"] is True
    assert saved["id"] == confirmed.json()["payment_method"]

    second = create_payment(api, 700, customer=customer, payment_method=saved["id"])
    assert second["status"] == "requires_confirmation"
    again = confirm(api, second, number=None)  # the saved card; the payer types nothing
    assert again.status_code == 200, again.text
    assert again.json()["status"] == "succeeded" and again.json()["payment_method"] == saved["id"]


def test_without_consent_or_after_a_decline_nothing_is_saved(api):
    customer = new_customer(api)
    assert confirm(api, create_payment(api, customer=customer), SUCCEEDS).json()["status"] == "succeeded"
    declined = confirm(api, create_payment(api, customer=customer), GENERIC_DECLINE, save_payment_method=True)
    assert_error(declined, 402, "card_declined")
    assert saved_cards(api, customer) == []


def test_consent_needs_a_customer(api, db):
    payment = create_payment(api)
    refused = confirm(api, payment, SUCCEEDS, save_payment_method=True)
    assert_error(refused, 400, "parameter_invalid", "save_payment_method")
    assert api.get(f"/v1/payment-intents/{payment['id']}").json()["status"] == "requires_payment_method"
    assert count_rows(db, "payment_methods", api.keys.installation_id) == 0


def test_another_customers_saved_card_is_a_missing_payment_method(api, make_api):
    owner, other = new_customer(api, "owner@example.com"), new_customer(api, "other@example.com")
    confirm(api, create_payment(api, customer=owner), SUCCEEDS, save_payment_method=True)
    [saved] = saved_cards(api, owner)
    refused = api.post(
        "/v1/payment-intents",
        json={"amount": 100, "currency": "eur", "customer": other, "payment_method": saved["id"]},
    )
    assert_error(refused, 400, "resource_missing", "payment_method")
    anonymous = create_payment(api)
    assert_error(
        confirm(api, anonymous, number=None, payment_method=saved["id"]),
        400,
        "resource_missing",
        "payment_method",
    )
    stranger = make_api()
    assert_error(
        stranger.post(
            "/v1/payment-intents", json={"amount": 100, "currency": "eur", "payment_method": saved["id"]}
        ),
        400,
        "resource_missing",
        "payment_method",
    )


def test_a_card_that_declines_later_can_be_saved_but_its_charges_are_declined(api):
    customer = new_customer(api)
    setup = api.post(f"/v1/customers/{customer}/setup-intents").json()
    saved = httpx.post(
        f"{api.base_url}/v1/setup-intents/{setup['id']}/confirm",
        json={"client_secret": setup["client_secret"], "card": card(DECLINES_LATER)},
        headers={"Authorization": f"Bearer {api.keys.publishable_key}"},
        verify=TLS,
    )
    assert saved.status_code == 200, saved.text
    method = saved.json()["payment_method"]
    payment = create_payment(api, 1200, customer=customer, payment_method=method)
    error = assert_error(confirm(api, payment, number=None), 402, "card_declined")
    assert error["decline_code"] == "generic_decline"
    assert api.get(f"/v1/payment-intents/{payment['id']}").json()["status"] == "requires_payment_method"


def test_the_card_that_declines_later_pays_the_payment_that_saves_it_and_then_declines(api):
    # CONVENTIONS.md §6: the charge made while saving it succeeds, every later charge of it declines
    customer = new_customer(api)
    first = create_payment(api, 1500, customer=customer)
    saving = confirm(api, first, DECLINES_LATER, save_payment_method=True)
    assert saving.status_code == 200, saving.text
    assert (saving.json()["status"], saving.json()["amount_received"]) == ("succeeded", 1500)
    [saved] = saved_cards(api, customer)
    assert saved["id"] == saving.json()["payment_method"] and saved["card"]["last4"] == "0341"

    later = create_payment(api, 700, customer=customer, payment_method=saved["id"])
    error = assert_error(confirm(api, later, number=None), 402, "card_declined")
    assert (error["type"], error["decline_code"]) == ("card_error", "generic_decline")
    after = api.get(f"/v1/payment-intents/{later['id']}").json()
    assert (after["status"], after["amount_received"]) == ("requires_payment_method", 0)
    assert after["last_payment_error"]["decline_code"] == "generic_decline"
    # chosen as a saved method on the confirmation itself: declined the same
    chosen = create_payment(api, 700, customer=customer)
    again = confirm(api, chosen, number=None, payment_method=saved["id"])
    assert assert_error(again, 402, "card_declined")["decline_code"] == "generic_decline"
    # typed again without saving it: not the charge that saves it, declined as before
    one_off = confirm(api, create_payment(api, 700, customer=customer), DECLINES_LATER)
    assert assert_error(one_off, 402, "card_declined")["decline_code"] == "generic_decline"


def test_confirming_needs_a_card_or_a_saved_method(api):
    payment = create_payment(api)
    assert_error(confirm(api, payment, number=None), 400, "parameter_missing", "payment_method")
    both = confirm(api, payment, SUCCEEDS, payment_method="pm_000000000000000000000000")
    assert_error(both, 400, "parameters_exclusive", "card")
