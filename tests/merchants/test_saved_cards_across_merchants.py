"""Saved cards across merchants (spec 4.N rule 7): a card belongs to the payment account it was saved
on. A platform installation's payments all run on the platform's account, so a customer's consented card
is reused between its merchants; in the direct model each merchant has its own account, and its cards are
not shared with another merchant (nor with the installation's own payments)."""

from __future__ import annotations

import pytest

from tests.checkout.support import create_session, enable_checkout
from tests.harness import TLS
from tests.helpers import assert_error
from tests.merchants.support import connect, register_redirect_uris
from tests.payment_methods.support import new_customer
from tests.payments.support import SUCCEEDS, confirm, create_payment


@pytest.fixture
def two_merchants(make_api, bridge, request):
    """An installation of the given kind with two connected merchants and checkout enabled."""

    def make(kind: str):
        api = make_api(kind=kind)
        register_redirect_uris(bridge, api.keys)
        enable_checkout(bridge, api.keys)
        return (
            api,
            connect(api, business_name="Pasta Place")["id"],
            connect(api, business_name="Taco Truck")["id"],
        )

    return make


def pay_and_save(api, customer: str, merchant: str) -> str:
    payment = create_payment(api, 1500, customer=customer, merchant=merchant)
    confirmed = confirm(api, payment, SUCCEEDS, save_payment_method=True)
    assert confirmed.status_code == 200 and confirmed.json()["status"] == "succeeded", confirmed.text
    method_id: str = confirmed.json()["payment_method"]
    return method_id


def checkout_page(api, payment_id: str):
    import httpx

    return httpx.get(create_session(api, payment_id)["checkout_url"], timeout=30, verify=TLS)


def test_in_a_platform_installation_a_consented_card_is_reused_between_its_merchants(two_merchants):
    api, pasta, tacos = two_merchants("platform")
    customer = new_customer(api)
    method = pay_and_save(api, customer, pasta)
    [listed] = api.get(f"/v1/customers/{customer}/payment-methods").json()["data"]
    assert listed["id"] == method and listed["merchant"] is None  # the platform's own account

    # another merchant of the platform: the saved card pays, offered on its checkout page too
    at_tacos = create_payment(api, 900, customer=customer, merchant=tacos)
    page = checkout_page(api, at_tacos["id"])
    assert f'value="{method}"' in page.text and "ending in 4242" in page.text
    paid = confirm(api, at_tacos, number=None, payment_method=method)
    assert paid.status_code == 200, paid.text
    assert paid.json()["status"] == "succeeded" and paid.json()["payment_method"] == method
    # and given at creation
    direct_use = create_payment(api, 700, customer=customer, merchant=tacos, payment_method=method)
    assert direct_use["status"] == "requires_confirmation"


def test_in_the_direct_model_a_merchants_saved_card_is_not_shared_with_another_merchant(two_merchants):
    api, pasta, tacos = two_merchants("direct")
    customer = new_customer(api)
    method = pay_and_save(api, customer, pasta)
    [listed] = api.get(f"/v1/customers/{customer}/payment-methods").json()["data"]
    assert listed["id"] == method and listed["merchant"] == pasta  # Pasta Place's own account

    at_tacos = create_payment(api, 900, customer=customer, merchant=tacos)
    page = checkout_page(api, at_tacos["id"])
    assert page.status_code == 200 and method not in page.text and "ending in 4242" not in page.text
    refused = confirm(api, at_tacos, number=None, payment_method=method)
    assert_error(refused, 400, "resource_missing", "payment_method")
    at_creation = api.post(
        "/v1/payment-intents",
        json={
            "amount": 700,
            "currency": "eur",
            "customer": customer,
            "merchant": tacos,
            "payment_method": method,
        },
    )
    assert_error(at_creation, 400, "resource_missing", "payment_method")
    # nor with the installation's own payments, which run on its own account
    own = api.post(
        "/v1/payment-intents",
        json={"amount": 700, "currency": "eur", "customer": customer, "payment_method": method},
    )
    assert_error(own, 400, "resource_missing", "payment_method")

    # on its own merchant's account it is reused, and the same card typed again is the same method
    at_pasta = create_payment(api, 800, customer=customer, merchant=pasta, payment_method=method)
    assert confirm(api, at_pasta, number=None).json()["status"] == "succeeded"
    pay_and_save(api, customer, pasta)
    # typed and saved at Taco Truck, it is a second method, on Taco Truck's account
    pay_and_save(api, customer, tacos)
    accounts = {
        m["id"]: m["merchant"] for m in api.get(f"/v1/customers/{customer}/payment-methods").json()["data"]
    }
    assert len(accounts) == 2 and accounts[method] == pasta
    assert sorted(accounts.values()) == sorted([pasta, tacos])
