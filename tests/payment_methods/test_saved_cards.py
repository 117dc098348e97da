"""A customer's saved cards: listed masked, one preferred, detached but kept (spec 4.A)."""

from __future__ import annotations

import httpx

from tests.harness import TLS, add_key
from tests.helpers import assert_error
from tests.payment_methods.support import (
    CHARGES_DECLINED,
    DISPUTED,
    SUCCEEDS,
    card,
    listed,
    new_customer,
    new_setup_intent,
    publishable,
    save_card,
)

MISSING_PM = "pm_000000000000000000000000"


def test_a_saved_card_is_listed_masked_without_the_processor_token(api, db):
    customer = new_customer(api)
    method = save_card(api, customer)
    assert method["id"].startswith("pm_") and len(method["id"]) == 27
    assert method["object"] == "payment_method" and method["type"] == "card"
    assert method["customer"] == customer and method["livemode"] is False
    assert isinstance(method["created"], int)
    assert method["card"] == {
        "brand": "visa",
        "last4": "4242",
        "exp_month": 12,
        "exp_year": 2099,
        "fingerprint": method["card"]["fingerprint"],
    }
    assert method["card"]["fingerprint"]
    assert set(method) == {
        "id",
        "object",
        "type",
        "customer",
        "card",
        "preferred",
        "merchant",
        "livemode",
        "created",
    }
    (token,) = db.execute(
        "SELECT processor_token FROM payment_methods WHERE id = %s", (method["id"],)
    ).fetchone()
    response = api.get(f"/v1/customers/{customer}/payment-methods")
    assert token and token not in response.text


def test_the_list_is_the_list_envelope_with_the_preferred_method(api):
    customer = new_customer(api)
    empty = listed(api, customer)
    assert empty == {
        "object": "list",
        "data": [],
        "has_more": False,
        "next_cursor": None,
        "preferred_payment_method": None,
    }
    first = save_card(api, customer)
    body = listed(api, customer)
    assert body["preferred_payment_method"] == first["id"]
    assert [item["id"] for item in body["data"]] == [first["id"]]


def test_the_first_saved_card_is_preferred_and_later_ones_are_not(api):
    customer = new_customer(api)
    first = save_card(api, customer, SUCCEEDS)
    second = save_card(api, customer, CHARGES_DECLINED)
    assert first["preferred"] is True and second["preferred"] is False
    assert listed(api, customer)["preferred_payment_method"] == first["id"]


def test_saving_the_same_card_twice_answers_the_method_already_saved(api, db):
    customer = new_customer(api)
    first = save_card(api, customer)
    again = save_card(api, customer)
    assert again["id"] == first["id"]
    assert [item["id"] for item in listed(api, customer)["data"]] == [first["id"]]
    (count,) = db.execute(
        "SELECT count(*) FROM payment_methods WHERE customer_id = %s", (customer,)
    ).fetchone()
    assert count == 1


def test_the_same_card_for_two_customers_is_two_methods_with_one_fingerprint(api):
    one, two = new_customer(api), new_customer(api)
    first, second = save_card(api, one), save_card(api, two)
    assert first["id"] != second["id"]
    assert first["card"]["fingerprint"] == second["card"]["fingerprint"]
    assert second["preferred"] is True  # each customer's first card


def test_the_list_pages_newest_first(api):
    customer = new_customer(api)
    saved = [save_card(api, customer, number)["id"] for number in (SUCCEEDS, CHARGES_DECLINED, DISPUTED)]
    first = api.get(f"/v1/customers/{customer}/payment-methods", params={"limit": 2}).json()
    assert [item["id"] for item in first["data"]] == [saved[2], saved[1]]
    assert first["has_more"] is True and first["preferred_payment_method"] == saved[0]
    rest = api.get(
        f"/v1/customers/{customer}/payment-methods", params={"limit": 2, "cursor": first["next_cursor"]}
    ).json()
    assert [item["id"] for item in rest["data"]] == [saved[0]]
    assert rest["has_more"] is False and rest["next_cursor"] is None
    assert_error(
        api.get(f"/v1/customers/{customer}/payment-methods", params={"limit": 0}),
        400,
        "parameter_invalid",
        "limit",
    )


def test_setting_the_preferred_card_takes_the_flag_from_the_previous_one(api, db):
    customer = new_customer(api)
    first = save_card(api, customer, SUCCEEDS)
    second = save_card(api, customer, CHARGES_DECLINED)
    response = api.post(f"/v1/customers/{customer}/payment-methods/{second['id']}/default")
    assert response.status_code == 200, response.text
    assert response.json() == {**second, "preferred": True}
    body = listed(api, customer)
    assert body["preferred_payment_method"] == second["id"]
    assert {item["id"]: item["preferred"] for item in body["data"]} == {
        first["id"]: False,
        second["id"]: True,
    }
    rows = db.execute(
        "SELECT id FROM payment_methods WHERE customer_id = %s AND preferred", (customer,)
    ).fetchall()
    assert rows == [(second["id"],)]
    # choosing the preferred card again changes nothing
    again = api.post(f"/v1/customers/{customer}/payment-methods/{second['id']}/default")
    assert again.status_code == 200 and again.json()["preferred"] is True


def test_setting_the_preferred_card_refuses_unknown_parameters(api):
    customer = new_customer(api)
    method = save_card(api, customer)
    response = api.post(f"/v1/customers/{customer}/payment-methods/{method['id']}/default", json={"x": 1})
    assert_error(response, 400, "parameter_unknown", "x")


def test_detaching_answers_the_method_without_customer_and_keeps_the_row(api, db):
    customer = new_customer(api)
    kept = save_card(api, customer, SUCCEEDS)
    method = save_card(api, customer, CHARGES_DECLINED)
    response = api.delete(f"/v1/customers/{customer}/payment-methods/{method['id']}")
    assert response.status_code == 200, response.text
    assert response.json() == {**method, "customer": None, "preferred": False}
    assert [item["id"] for item in listed(api, customer)["data"]] == [kept["id"]]
    row = db.execute(
        "SELECT customer_id, detached_at IS NOT NULL FROM payment_methods WHERE id = %s", (method["id"],)
    ).fetchone()
    assert row == (customer, True)  # kept for the payments that used it


def test_detaching_the_preferred_card_leaves_no_preferred_card(api):
    customer = new_customer(api)
    preferred = save_card(api, customer, SUCCEEDS)
    other = save_card(api, customer, CHARGES_DECLINED)
    api.delete(f"/v1/customers/{customer}/payment-methods/{preferred['id']}")
    body = listed(api, customer)
    assert body["preferred_payment_method"] is None
    assert [(item["id"], item["preferred"]) for item in body["data"]] == [(other["id"], False)]
    # and another card can be made preferred
    api.post(f"/v1/customers/{customer}/payment-methods/{other['id']}/default")
    assert listed(api, customer)["preferred_payment_method"] == other["id"]


def test_a_detached_card_can_be_neither_detached_again_nor_preferred(api):
    customer = new_customer(api)
    method = save_card(api, customer)
    api.delete(f"/v1/customers/{customer}/payment-methods/{method['id']}")
    assert_error(
        api.delete(f"/v1/customers/{customer}/payment-methods/{method['id']}"),
        404,
        "resource_missing",
        "payment_method",
    )
    assert_error(
        api.post(f"/v1/customers/{customer}/payment-methods/{method['id']}/default"),
        404,
        "resource_missing",
        "payment_method",
    )


def test_a_card_saved_again_after_detaching_is_a_new_preferred_method(api):
    customer = new_customer(api)
    old = save_card(api, customer)
    api.delete(f"/v1/customers/{customer}/payment-methods/{old['id']}")
    new = save_card(api, customer)
    assert new["id"] != old["id"] and new["preferred"] is True
    assert new["card"]["fingerprint"] == old["card"]["fingerprint"]


def test_unknown_customers_and_methods_are_404(api):
    missing_customer = "cus_000000000000000000000000"
    for response in (
        api.get(f"/v1/customers/{missing_customer}/payment-methods"),
        api.delete(f"/v1/customers/{missing_customer}/payment-methods/{MISSING_PM}"),
        api.post(f"/v1/customers/{missing_customer}/payment-methods/{MISSING_PM}/default"),
    ):
        assert_error(response, 404, "resource_missing", "customer")
    customer = new_customer(api)
    assert_error(
        api.delete(f"/v1/customers/{customer}/payment-methods/{MISSING_PM}"),
        404,
        "resource_missing",
        "payment_method",
    )
    assert_error(
        api.post(f"/v1/customers/{customer}/payment-methods/{MISSING_PM}/default"),
        404,
        "resource_missing",
        "payment_method",
    )


def test_a_read_only_key_lists_cards_but_cannot_change_them(api, web, bridge):
    customer = new_customer(api)
    method = save_card(api, customer)
    reader = httpx.Client(
        base_url=web.base_url,
        headers={"Authorization": f"Bearer {add_key(bridge, api.keys.tenant, ('customers:read',))}"},
        verify=TLS,
    )
    with reader:
        assert reader.get(f"/v1/customers/{customer}/payment-methods").status_code == 200
        assert_error(
            reader.delete(f"/v1/customers/{customer}/payment-methods/{method['id']}"),
            403,
            "insufficient_scope",
        )
        assert_error(
            reader.post(f"/v1/customers/{customer}/payment-methods/{method['id']}/default"),
            403,
            "insufficient_scope",
        )
    assert listed(api, customer)["data"][0]["customer"] == customer


def test_the_same_card_saved_with_a_new_expiry_updates_the_saved_method(api):
    customer = new_customer(api)
    first = save_card(api, customer)
    setup_intent = new_setup_intent(api, customer)
    with publishable(api) as client:
        response = client.post(
            f"/v1/setup-intents/{setup_intent['id']}/confirm",
            json={"client_secret": setup_intent["client_secret"], "card": card(exp_month=3, exp_year=2031)},
        )
    assert response.json()["payment_method"] == first["id"]
    (renewed,) = listed(api, customer)["data"]
    assert renewed == {**first, "card": {**first["card"], "exp_month": 3, "exp_year": 2031}}
