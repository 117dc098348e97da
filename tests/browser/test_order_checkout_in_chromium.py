"""The commerce order flow's checkout in a real Chromium (spec 4.B rule 3): the server creates the order,
its manual-capture payment and the bind; the payer authorizes on the hosted page; the merchant's side
captures when preparation starts, or cancels the order and so releases the authorization."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.checkout.support import create_session, session_status
from tests.commerce.support import TOTAL, act, bound_order
from tests.payments.support import AUTHENTICATE, SUCCEEDS

PAY = re.compile(r"^Pay ")


def order_checkout(seller, shop_site):
    order, payment = bound_order(seller)
    checkout = create_session(
        seller,
        payment["id"],
        title="Order: two pizzas and a tiramisu",
        success_url=shop_site.success_url,
        cancel_url=shop_site.cancel_url,
    )
    return order, payment, checkout


def fill_card(page, number: str) -> None:
    page.get_by_label("Card number").fill(number)
    page.get_by_label("Expiry month").fill("12")
    page.get_by_label("Expiry year").fill("2034")
    page.get_by_label("Security code (CVC)").fill("123")


def status_of(seller, payment) -> str:
    status: str = seller.get(f"/v1/payment-intents/{payment['id']}").json()["status"]
    return status


def test_the_payer_authorizes_the_order_and_starting_preparation_captures_it(
    seller, shop_site, page, csp_violations
):
    order, payment, checkout = order_checkout(seller, shop_site)
    page.goto(checkout["checkout_url"])
    expect(page.get_by_role("heading", name="Order: two pizzas and a tiramisu")).to_be_visible()
    expect(page.get_by_test_id("amount")).to_have_text("€23.50")
    fill_card(page, SUCCEEDS)
    page.get_by_role("button", name=PAY).click()
    page.wait_for_url(shop_site.success_url)
    expect(page.get_by_role("heading")).to_have_text("Thank you for your order")

    # the returning browser confirmed nothing: the payment is authorized, not captured, and the order waits
    assert status_of(seller, payment) == "requires_capture"
    assert session_status(seller, checkout) == "complete"
    assert seller.get(f"/commerce/v1/orders/{order['id']}").json() == order

    started = act(seller, order, "start-preparation")
    assert started.status_code == 200, started.text
    assert started.json()["status"] == "preparing"
    captured = seller.get(f"/v1/payment-intents/{payment['id']}").json()
    assert captured["status"] == "succeeded" and captured["amount_received"] == TOTAL
    assert csp_violations == []


def test_bank_authentication_in_the_order_flow_authorizes_then_the_order_is_cancelled_and_released(
    seller, shop_site, page, csp_violations
):
    order, payment, checkout = order_checkout(seller, shop_site)
    page.goto(checkout["checkout_url"])
    fill_card(page, AUTHENTICATE)
    page.get_by_role("button", name=PAY).click()
    page.wait_for_url(re.compile(r".*/authenticate/[0-9A-Za-z]+$"))
    # while the payer is at the bank, the expire operation is not the way out of an order
    refused = seller.post(f"/v1/checkout-sessions/{checkout['id']}/expire")
    assert refused.status_code == 409 and "Cancel the order" in refused.json()["error"]["message"]
    assert session_status(seller, checkout) == "open"
    page.get_by_role("button", name="Complete authentication").click()
    page.wait_for_url(shop_site.success_url)
    assert status_of(seller, payment) == "requires_capture"

    # cancelling the order releases the authorization
    canceled = act(seller, order, "cancel")
    assert canceled.status_code == 200, canceled.text
    assert canceled.json()["status"] == "canceled"
    assert status_of(seller, payment) == "canceled"
    assert csp_violations == []


def test_an_order_cancelled_while_the_payer_is_on_the_page_cannot_be_paid(
    seller, shop_site, page, csp_violations
):
    order, payment, checkout = order_checkout(seller, shop_site)
    page.goto(checkout["checkout_url"])
    fill_card(page, SUCCEEDS)
    assert act(seller, order, "cancel").json()["status"] == "canceled"  # the shop cancels meanwhile
    page.get_by_role("button", name=PAY).click()
    expect(page.get_by_role("heading")).to_have_text("This payment is no longer available")
    assert status_of(seller, payment) == "canceled"
    assert seller.get(f"/v1/payment-intents/{payment['id']}").json()["amount_received"] == 0
    assert csp_violations == []
