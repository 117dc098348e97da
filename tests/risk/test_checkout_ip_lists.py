"""IP value lists apply to payments confirmed on the hosted checkout page: the page request's client
address (the socket peer, or the forwarded client when the peer is a proxy named in
MONEYRAIL_FORWARDED_ALLOW_IPS, which the suite's web process sets to loopback) is screened as a
client-side confirmation's is. Over HTTP, the page's form posted as a browser
posts it, with a real worker and scheduler beside the web process."""

from __future__ import annotations

import httpx
import pytest

from tests.checkout.support import SUCCESS_URL, card_form, create_session, enable_checkout
from tests.harness import TLS
from tests.payments.support import SUCCEEDS, create_payment
from tests.web_process import another_web_process

from .test_risk import processor_calls, review_of, value_list

LISTED_PAYER = "203.0.113.7"
OTHER_PAYER = "198.51.100.9"


@pytest.fixture
def shop(api, bridge):
    enable_checkout(bridge, api.keys)
    return api


def pay_on_page(
    checkout: dict, forwarded_for: str | None = None, base_url: str | None = None
) -> httpx.Response:
    """The payer presses Pay; a reverse proxy on loopback names the payer in X-Forwarded-For.
    `base_url`: another web process of the same database than the one that made the page's address."""
    headers = {"X-Forwarded-For": forwarded_for} if forwarded_for else {}
    url = checkout["checkout_url"]
    if base_url is not None:
        url = base_url + "/" + url.split("/", 3)[3]
    return httpx.post(url, data=card_form(SUCCEEDS), headers=headers, timeout=30, verify=TLS)


def test_a_payer_at_a_blocked_address_is_declined_on_the_checkout_page(shop, db, money_stack):
    value_list(shop, "ip_address", "block", LISTED_PAYER)
    payment = create_payment(shop, 2600)
    checkout = create_session(shop, payment["id"])

    blocked = pay_on_page(checkout, forwarded_for=LISTED_PAYER)
    assert blocked.status_code == 402, blocked.text
    declined = shop.get(f"/v1/payment-intents/{payment['id']}").json()
    assert declined["status"] == "requires_payment_method"
    assert declined["last_payment_error"]["decline_code"] == "fraudulent"
    assert processor_calls(db, shop.keys.installation_id, "authorize") == 0  # nothing authorized

    # the address is what was listed: the same card from another address pays
    paid = pay_on_page(checkout, forwarded_for=OTHER_PAYER)
    assert (paid.status_code, paid.headers["location"]) == (303, SUCCESS_URL)
    assert shop.get(f"/v1/payment-intents/{payment['id']}").json()["status"] == "succeeded"
    assert processor_calls(db, shop.keys.installation_id, "authorize") == 1


def test_a_payer_at_an_address_in_a_review_list_is_held_for_review_from_the_socket_peer(
    shop, db, money_stack
):
    value_list(shop, "ip_address", "review", "127.0.0.1")  # no proxy header: the socket peer counts
    payment = create_payment(shop, 1900)
    checkout = create_session(shop, payment["id"])

    assert pay_on_page(checkout).status_code == 303
    held = shop.get(f"/v1/payment-intents/{payment['id']}").json()
    assert (held["status"], held["amount_capturable"]) == ("requires_capture", 1900)
    review = review_of(shop, payment["id"])
    assert (review["reason"], review["matched"]["item_type"], review["open"]) == (
        "value_list",
        "ip_address",
        True,
    )
    assert processor_calls(db, shop.keys.installation_id, "capture") == 0

    approved = shop.post(f"/v1/radar/reviews/{review['id']}/approve")
    assert approved.status_code == 200, approved.text
    assert shop.get(f"/v1/payment-intents/{payment['id']}").json()["status"] == "succeeded"
    assert processor_calls(db, shop.keys.installation_id, "capture") == 1


def test_a_payer_from_an_unlisted_address_is_not_screened_by_the_ip_list(shop, db, money_stack):
    value_list(shop, "ip_address", "review", LISTED_PAYER)
    payment = create_payment(shop, 1200)
    checkout = create_session(shop, payment["id"])
    assert pay_on_page(checkout, forwarded_for=OTHER_PAYER).status_code == 303
    assert shop.get(f"/v1/payment-intents/{payment['id']}").json()["status"] == "succeeded"
    assert shop.get("/v1/radar/reviews").json()["data"] == []


def test_a_web_process_with_no_trusted_proxy_ignores_the_forwarded_address(shop, db, servers, money_stack):
    # MONEYRAIL_FORWARDED_ALLOW_IPS unset: X-Forwarded-For is anyone's to write, so it is not believed and
    # the socket's peer (loopback, unlisted) is screened, not the listed address the header names
    with another_web_process(servers, "web-no-proxy") as base_url:
        value_list(shop, "ip_address", "block", LISTED_PAYER)
        payment = create_payment(shop, 1300)
        checkout = create_session(shop, payment["id"])
        paid = pay_on_page(checkout, forwarded_for=LISTED_PAYER, base_url=base_url)
        assert (paid.status_code, paid.headers["location"]) == (303, SUCCESS_URL)
        assert shop.get(f"/v1/payment-intents/{payment['id']}").json()["status"] == "succeeded"
