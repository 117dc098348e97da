"""CONVENTIONS.md §2: cards of another installation, environment or customer answer like missing ones."""

from __future__ import annotations

import httpx

from tests.harness import TLS, add_key
from tests.helpers import assert_error
from tests.payment_methods.support import (
    confirm,
    listed,
    new_customer,
    new_setup_intent,
    publishable,
    save_card,
)

MISSING_CUSTOMER = "cus_000000000000000000000000"
MISSING_PM = "pm_000000000000000000000000"


def _customer_routes(client: httpx.Client, customer: str, method: str) -> list[httpx.Response]:
    return [
        client.get(f"/v1/customers/{customer}/payment-methods"),
        client.delete(f"/v1/customers/{customer}/payment-methods/{method}"),
        client.post(f"/v1/customers/{customer}/payment-methods/{method}/default"),
        client.post(f"/v1/customers/{customer}/setup-intents"),
        client.post(f"/v1/customers/{customer}/customer-sessions"),
        client.post(f"/v1/customers/{customer}/customer-sheet-sessions"),
    ]


def _same_error(foreign: httpx.Response, missing: httpx.Response, foreign_id: str, missing_id: str) -> None:
    assert foreign.status_code == missing.status_code == 404
    one, two = foreign.json()["error"], missing.json()["error"]
    for error in (one, two):
        error.pop("request_id")
    assert one["message"].replace(foreign_id, "ID") == two["message"].replace(missing_id, "ID")
    assert {**one, "message": ""} == {**two, "message": ""}


def _assert_invisible(stranger: httpx.Client, customer: str, method: str, setup_intent: str) -> None:
    for foreign, missing in zip(
        _customer_routes(stranger, customer, method),
        _customer_routes(stranger, MISSING_CUSTOMER, MISSING_PM),
        strict=True,
    ):
        _same_error(foreign, missing, customer, MISSING_CUSTOMER)
    _same_error(
        stranger.get(f"/v1/setup-intents/{setup_intent}"),
        stranger.get("/v1/setup-intents/seti_000000000000000000000000"),
        setup_intent,
        "seti_000000000000000000000000",
    )


def test_another_installation_sees_neither_the_customer_nor_its_cards(api, make_api):
    customer = new_customer(api)
    method = save_card(api, customer)
    setup_intent = new_setup_intent(api, customer)
    stranger = make_api()
    _assert_invisible(stranger, customer, method["id"], setup_intent["id"])
    # a publishable key of the other installation cannot confirm, even with the right secret
    with publishable(stranger) as client:
        assert_error(confirm(client, setup_intent), 404, "resource_missing", "setup_intent")
        session = api.post(f"/v1/customers/{customer}/customer-sessions").json()
        response = client.post(
            f"/v1/customer-sessions/{session['id']}/payment-methods",
            json={"client_secret": session["client_secret"]},
        )
        assert_error(response, 404, "resource_missing", "customer_session")
    assert listed(api, customer)["data"] == [method]


def test_the_live_environment_of_the_same_installation_sees_no_sandbox_card(api, web, bridge):
    customer = new_customer(api)
    method = save_card(api, customer)
    setup_intent = new_setup_intent(api, customer)
    live_key = add_key(bridge, type(api.keys.tenant)(api.keys.installation_id, True), ("*",))
    with httpx.Client(
        base_url=web.base_url, headers={"Authorization": f"Bearer {live_key}"}, verify=TLS
    ) as live:
        _assert_invisible(live, customer, method["id"], setup_intent["id"])
    assert listed(api, customer)["data"] == [method]


def test_a_card_of_another_customer_is_missing_for_this_one(api):
    owner, other = new_customer(api), new_customer(api)
    method = save_card(api, owner)
    save_card(api, other, "4000000000000341")
    for foreign, missing in (
        (
            api.delete(f"/v1/customers/{other}/payment-methods/{method['id']}"),
            api.delete(f"/v1/customers/{other}/payment-methods/{MISSING_PM}"),
        ),
        (
            api.post(f"/v1/customers/{other}/payment-methods/{method['id']}/default"),
            api.post(f"/v1/customers/{other}/payment-methods/{MISSING_PM}/default"),
        ),
    ):
        assert_error(foreign, 404, "resource_missing", "payment_method")
        _same_error(foreign, missing, method["id"], MISSING_PM)
    assert method["id"] not in {item["id"] for item in listed(api, other)["data"]}
    assert listed(api, owner)["data"] == [method]  # untouched, still preferred
