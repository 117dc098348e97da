"""Products and immutable prices over HTTP: creation, limits, quotes, archiving, keys and scopes."""

from __future__ import annotations

import pytest

from tests.billing.support import ok, post, price, product
from tests.harness import TLS, add_key
from tests.helpers import assert_error, count_rows

GRADUATED = [
    {"up_to": 5, "unit_amount": 1000, "flat_amount": 200},
    {"up_to": 10, "unit_amount": 800},
    {"up_to": None, "unit_amount": 500},
]


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/products", {"name": "Pro"}),
        ("/v1/prices", {"product": "prod_x", "currency": "eur", "interval": "month", "amount": 100}),
        ("/v1/subscriptions", {"price": "price_x", "customer": "cus_x"}),
    ],
)
def test_every_post_of_the_billing_group_requires_an_idempotency_key(api, db, path, body):
    assert_error(api.post(path, json=body), 400, "idempotency_key_required")
    assert count_rows(db, "products", api.keys.installation_id) == 0


def test_a_product_is_created_read_listed_updated_and_archived(api):
    created = ok(post(api, "/v1/products", {"name": "Pro", "description": "All features"}))
    assert created["id"].startswith("prod_") and created["object"] == "product"
    assert (created["active"], created["archived"], created["livemode"]) == (True, False, False)
    assert ok(api.get(f"/v1/products/{created['id']}")) == created
    assert [p["id"] for p in ok(api.get("/v1/products"))["data"]] == [created["id"]]
    updated = ok(post(api, f"/v1/products/{created['id']}/update", {"name": "Pro+", "active": False}))
    assert (updated["name"], updated["description"], updated["active"]) == ("Pro+", "All features", False)
    archived = ok(post(api, f"/v1/products/{created['id']}/archive"))
    assert (archived["archived"], archived["active"]) == (True, False)
    assert_error(
        post(api, f"/v1/products/{created['id']}/update", {"active": True}), 409, "resource_state_invalid"
    )


def test_a_repeated_product_creation_with_the_same_key_answers_the_same_product(api, db):
    first = post(api, "/v1/products", {"name": "Pro"}, key="same")
    again = post(api, "/v1/products", {"name": "Pro"}, key="same")
    assert again.json() == first.json() and again.headers["Idempotent-Replayed"] == "true"
    assert count_rows(db, "products", api.keys.installation_id) == 1


def test_prices_of_each_model_are_created_and_quoted_exactly(api):
    per_unit = price(api, 1500)
    assert (per_unit["pricing_model"], per_unit["interval"], per_unit["interval_count"]) == (
        "per_unit",
        "month",
        1,
    )
    assert ok(post(api, f"/v1/prices/{per_unit['id']}/quote", {"quantity": 3}))["amount"] == 4500
    graduated = price(
        api, None, pricing_model="graduated", tiers=GRADUATED, interval="year", interval_count=2
    )
    assert graduated["tiers"][1] == {"up_to": 10, "unit_amount": 800, "flat_amount": 0}
    quote = ok(post(api, f"/v1/prices/{graduated['id']}/quote", {"quantity": 12}))
    assert (quote["amount"], quote["currency"]) == (5000 + 200 + 4000 + 1000, "eur")
    volume = price(api, None, pricing_model="volume", tiers=GRADUATED)
    assert ok(post(api, f"/v1/prices/{volume['id']}/quote", {"quantity": 7}))["amount"] == 7 * 800
    assert ok(api.get(f"/v1/prices/{volume['id']}")) == volume
    assert len(ok(api.get("/v1/prices", params={"limit": 2}))["data"]) == 2


def test_a_price_is_immutable_and_archiving_closes_it_to_new_offers(api):
    created = price(api, 900)
    archived = ok(post(api, f"/v1/prices/{created['id']}/archive"))
    assert archived["active"] is False and archived["amount"] == 900
    assert api.post(
        f"/v1/prices/{created['id']}/update", json={}, headers={"Idempotency-Key": "k"}
    ).status_code in {
        404,
        405,
    }


@pytest.mark.parametrize(
    ("terms", "code", "param"),
    [
        ({"pricing_model": "volume", "amount": 100, "tiers": GRADUATED}, "tiers_invalid", "tiers"),
        ({"amount": 100, "tiers": GRADUATED}, "tiers_invalid", "tiers"),
        ({"amount": 100, "tiers": []}, "tiers_invalid", "tiers"),  # found by the contract fuzz: was a 500
        ({"pricing_model": "volume", "amount": None, "tiers": GRADUATED[:2]}, "tiers_invalid", "tiers"),
        (
            {
                "pricing_model": "graduated",
                "amount": None,
                "tiers": [GRADUATED[1], GRADUATED[0], GRADUATED[2]],
            },
            "tiers_invalid",
            "tiers",
        ),
        (
            {
                "pricing_model": "graduated",
                "amount": None,
                "tiers": [{"up_to": 5, "unit_amount": -1}, GRADUATED[2]],
            },
            "tiers_invalid",
            "tiers",
        ),
        (
            {
                "pricing_model": "graduated",
                "amount": None,
                "tiers": [{"up_to": i, "unit_amount": 1} for i in range(1, 51)] + [GRADUATED[2]],
            },
            "tiers_invalid",
            "tiers",
        ),
        ({"pricing_model": "volume", "amount": None}, "tiers_invalid", "tiers"),
        ({"amount": 0}, "amount_invalid", "amount"),
        ({"amount": 100_000_000}, "amount_invalid", "amount"),
        ({"interval_count": 13}, "parameter_invalid", "interval_count"),
        ({"interval_count": 0}, "parameter_invalid", "interval_count"),
        ({"interval": "week"}, "parameter_invalid", "interval"),
        ({"currency": "EUR"}, "currency_invalid", "currency"),
        ({"surprise": 1}, "parameter_unknown", "surprise"),
    ],
)
def test_a_price_breaking_a_rule_is_refused_with_its_code_and_writes_nothing(api, db, terms, code, param):
    owner = product(api)
    body = {"product": owner["id"], "currency": "eur", "interval": "month", "amount": 100} | terms
    assert_error(post(api, "/v1/prices", body), 400, code, param)
    assert count_rows(db, "prices", api.keys.installation_id) == 0


def test_a_price_for_a_missing_or_archived_product_is_refused(api, make_api):
    body = {"currency": "eur", "interval": "month", "amount": 100}
    assert_error(
        post(api, "/v1/prices", {"product": "prod_nothing"} | body), 400, "resource_missing", "product"
    )
    foreign = product(make_api())
    assert_error(
        post(api, "/v1/prices", {"product": foreign["id"]} | body), 400, "resource_missing", "product"
    )
    archived = product(api)
    ok(post(api, f"/v1/products/{archived['id']}/archive"))
    assert_error(
        post(api, "/v1/prices", {"product": archived["id"]} | body), 409, "resource_state_invalid", "product"
    )


def test_a_quote_outside_the_total_limits_is_amount_invalid(api):
    big = price(api, 99_999_999)
    assert_error(
        post(api, f"/v1/prices/{big['id']}/quote", {"quantity": 2}), 400, "amount_invalid", "quantity"
    )
    free = price(api, None, pricing_model="volume", tiers=[{"up_to": None, "unit_amount": 0}])
    assert_error(
        post(api, f"/v1/prices/{free['id']}/quote", {"quantity": 2}), 400, "amount_invalid", "quantity"
    )


def test_another_installations_catalog_answers_like_a_missing_id(api, make_api):
    theirs = price(make_api())
    assert_error(api.get(f"/v1/prices/{theirs['id']}"), 404, "resource_missing", "price")
    assert_error(api.get(f"/v1/products/{theirs['product']}"), 404, "resource_missing", "product")


def test_billing_routes_need_the_billing_scopes(api, bridge, web):
    import httpx

    reader = add_key(bridge, api.keys.tenant, ("billing:read",))
    other = add_key(bridge, api.keys.tenant, ("payments:write",))
    owned = product(api)
    with httpx.Client(
        base_url=web.base_url, headers={"Authorization": f"Bearer {reader}"}, verify=TLS
    ) as read_only:
        assert read_only.get(f"/v1/products/{owned['id']}").status_code == 200
        assert_error(post(read_only, "/v1/products", {"name": "x"}), 403, "insufficient_scope")
    with httpx.Client(
        base_url=web.base_url, headers={"Authorization": f"Bearer {other}"}, verify=TLS
    ) as unrelated:
        assert_error(unrelated.get("/v1/products"), 403, "insufficient_scope")
