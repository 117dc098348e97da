"""A payer at the hosted checkout, in a real Chromium: every path ends on a real page, and the payment's
status is then read over the API (a returning browser confirms nothing)."""

from __future__ import annotations

import json
import re

import httpx
from playwright.sync_api import expect

from tests.checkout.support import create_session, session_status
from tests.harness import TLS
from tests.payment_methods.support import new_customer, save_card
from tests.payments.support import (
    AUTHENTICATE,
    GENERIC_DECLINE,
    SUCCEEDS,
    create_payment,
    event_types,
    ledger_balance,
    wait_for,
)

PAY = re.compile(r"^Pay ")


def open_checkout(seller, shop_site, amount: int = 2000, **payment_fields):
    payment = create_payment(seller, amount, **payment_fields)
    checkout = create_session(
        seller,
        payment["id"],
        title="Two concert tickets",
        success_url=shop_site.success_url,
        cancel_url=shop_site.cancel_url,
    )
    return payment, checkout


def fill_card(page, number: str) -> None:
    page.get_by_label("Card number").fill(number)
    page.get_by_label("Expiry month").fill("12")
    page.get_by_label("Expiry year").fill("2034")
    page.get_by_label("Security code (CVC)").fill("123")


def payment_of(seller, payment) -> dict:
    body: dict = seller.get(f"/v1/payment-intents/{payment['id']}").json()
    return body


def test_paying_with_4242_by_keyboard_lands_on_the_shops_success_page(
    seller, shop_site, page, csp_violations
):
    payment, checkout = open_checkout(seller, shop_site, 2000)
    response = page.goto(checkout["checkout_url"])
    assert response is not None and response.status == 200
    expect(page.get_by_role("heading", name="Two concert tickets")).to_be_visible()
    expect(page.get_by_test_id("amount")).to_have_text("€20.00")
    expect(page.get_by_test_id("seller")).to_have_text("test installation")

    page.get_by_label("Card number").focus()
    page.keyboard.type("4242 4242 4242 4242")
    for value in ("12", "2034", "123"):
        page.keyboard.press("Tab")
        page.keyboard.type(value)
    expect(page.get_by_label("Security code (CVC)")).to_be_focused()
    page.keyboard.press("Enter")  # submits the form

    page.wait_for_url(shop_site.success_url)
    expect(page.get_by_role("heading")).to_have_text("Thank you for your order")
    assert payment_of(seller, payment)["status"] == "succeeded"
    assert payment_of(seller, payment)["amount_received"] == 2000
    assert session_status(seller, checkout) == "complete"
    assert csp_violations == []


def test_a_declined_card_shows_an_alert_and_another_card_then_pays(seller, shop_site, page, csp_violations):
    payment, checkout = open_checkout(seller, shop_site)
    page.goto(checkout["checkout_url"])
    fill_card(page, GENERIC_DECLINE)
    page.get_by_role("button", name=PAY).click()
    expect(page.get_by_role("alert")).to_have_text("The card was declined.")
    after_decline = payment_of(seller, payment)
    assert after_decline["status"] == "requires_payment_method"
    assert after_decline["last_payment_error"]["decline_code"] == "generic_decline"
    expect(page.get_by_label("Card number")).to_have_value("")  # the number is never echoed back

    fill_card(page, SUCCEEDS)
    page.get_by_role("button", name=PAY).click()
    page.wait_for_url(shop_site.success_url)
    assert payment_of(seller, payment)["status"] == "succeeded"
    assert session_status(seller, checkout) == "complete"
    assert csp_violations == []


def test_bank_authentication_goes_to_the_bank_and_back_to_the_shop(seller, shop_site, page, csp_violations):
    payment, checkout = open_checkout(seller, shop_site, 4500)
    page.goto(checkout["checkout_url"])
    fill_card(page, AUTHENTICATE)
    page.get_by_role("button", name=PAY).click()
    page.wait_for_url(re.compile(r".*/authenticate/[0-9A-Za-z]+$"))
    expect(page.get_by_test_id("amount")).to_have_text("€45.00")
    assert payment_of(seller, payment)["status"] == "requires_action"

    page.get_by_role("button", name="Complete authentication").click()
    page.wait_for_url(shop_site.success_url)
    expect(page.get_by_role("heading")).to_have_text("Thank you for your order")
    assert payment_of(seller, payment)["status"] == "succeeded"
    assert session_status(seller, checkout) == "complete"
    assert csp_violations == []


def test_a_saved_card_is_preselected_and_pays(seller, shop_site, page, csp_violations):
    customer = new_customer(seller, email="ada@example.com")
    saved = save_card(seller, customer, SUCCEEDS)  # through the setup-intent API
    payment, checkout = open_checkout(seller, shop_site, 1500, customer=customer)
    page.goto(checkout["checkout_url"])
    choice = page.get_by_label(re.compile(r"^Visa ending in 4242, expires 12/2099"))
    expect(choice).to_be_checked()
    expect(page.get_by_label("Card number")).to_be_hidden()  # a new card only when chosen
    page.get_by_role("button", name=PAY).click()
    page.wait_for_url(shop_site.success_url)
    after = payment_of(seller, payment)
    assert after["status"] == "succeeded" and after["payment_method"] == saved["id"]
    assert session_status(seller, checkout) == "complete"
    assert csp_violations == []


def test_consent_saves_the_card_and_the_next_checkout_offers_it(seller, shop_site, page, csp_violations):
    customer = new_customer(seller, email="ada@example.com")
    first, first_checkout = open_checkout(seller, shop_site, 1200, customer=customer)
    page.goto(first_checkout["checkout_url"])
    expect(page.get_by_role("radio")).to_have_count(0)  # nothing saved yet
    fill_card(page, SUCCEEDS)
    page.get_by_label(re.compile("^Save this card")).check()
    page.get_by_role("button", name=PAY).click()
    page.wait_for_url(shop_site.success_url)
    assert payment_of(seller, first)["status"] == "succeeded"
    saved = seller.get(f"/v1/customers/{customer}/payment-methods").json()["data"]
    assert [(card["card"]["last4"], card["preferred"]) for card in saved] == [("4242", True)]

    second, second_checkout = open_checkout(seller, shop_site, 800, customer=customer)
    page.goto(second_checkout["checkout_url"])
    expect(page.get_by_label(re.compile(r"^Visa ending in 4242"))).to_be_checked()
    page.get_by_role("button", name=PAY).click()
    page.wait_for_url(shop_site.success_url)
    after = payment_of(seller, second)
    assert after["status"] == "succeeded" and after["payment_method"] == saved[0]["id"]
    assert csp_violations == []


def test_without_consent_a_new_card_is_not_kept(seller, shop_site, page):
    customer = new_customer(seller, email="bob@example.com")
    payment, checkout = open_checkout(seller, shop_site, customer=customer)
    page.goto(checkout["checkout_url"])
    fill_card(page, SUCCEEDS)
    expect(page.get_by_label(re.compile("^Save this card"))).not_to_be_checked()
    page.get_by_role("button", name=PAY).click()
    page.wait_for_url(shop_site.success_url)
    assert payment_of(seller, payment)["status"] == "succeeded"
    assert seller.get(f"/v1/customers/{customer}/payment-methods").json()["data"] == []


def test_an_anonymous_checkout_shows_no_saved_cards_and_no_consent(seller, shop_site, page):
    customer = new_customer(seller, email="ada@example.com")
    save_card(seller, customer, SUCCEEDS)  # the installation has saved cards, for someone
    payment, checkout = open_checkout(seller, shop_site)  # no customer
    page.goto(checkout["checkout_url"])
    expect(page.get_by_label("Card number")).to_be_visible()
    expect(page.get_by_role("radio")).to_have_count(0)
    expect(page.get_by_role("checkbox")).to_have_count(0)
    expect(page.get_by_text("ending in")).to_have_count(0)
    fill_card(page, SUCCEEDS)
    page.get_by_role("button", name=PAY).click()
    page.wait_for_url(shop_site.success_url)
    assert payment_of(seller, payment)["status"] == "succeeded"


def test_an_expired_session_shows_a_clear_page_and_takes_no_card(seller, shop_site, page):
    payment, checkout = open_checkout(seller, shop_site)
    page.goto(checkout["checkout_url"])
    fill_card(page, SUCCEEDS)  # the payer starts, then leaves the tab open
    advanced = seller.post("/v1/test-helpers/clock/advance", json={"seconds": 31 * 60})
    assert advanced.status_code == 200 and advanced.json()["work_done"]["checkout.expiry"] == 1

    with page.expect_navigation() as navigation:
        page.get_by_role("button", name=PAY).click()
    assert navigation.value is not None and navigation.value.status == 410
    expect(page.get_by_role("heading")).to_have_text("This checkout has expired")
    expect(page.locator("form")).to_have_count(0)
    after = payment_of(seller, payment)
    assert after["status"] == "canceled" and after["amount_received"] == 0
    assert session_status(seller, checkout) == "expired"

    reopened = page.goto(checkout["checkout_url"])
    assert reopened is not None and reopened.status == 410
    expect(page.locator("form")).to_have_count(0)


def _checkout_posts(log_text: str) -> int:
    count = 0
    for line in log_text.splitlines():
        if line.startswith("{"):
            entry = json.loads(line)
            if entry.get("event") == "request" and entry.get("method") == "POST":
                count += entry.get("route") == "/checkout/{token}"
    return count


def test_a_double_click_on_pay_charges_once(seller, shop_site, page, web, db):
    payment, checkout = open_checkout(seller, shop_site, 3000)
    page.goto(checkout["checkout_url"])
    fill_card(page, SUCCEEDS)
    posts_before = _checkout_posts(web.process.log_text())
    box = page.get_by_role("button", name=PAY).bounding_box()
    assert box is not None
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    # Two clicks 20 ms apart, as an impatient payer does: the second lands while the first post is
    # in flight (a payment takes longer than that), so the browser posts the form a second time.
    page.mouse.click(x, y)
    page.wait_for_timeout(20)
    page.mouse.click(x, y)
    # (the first navigation is aborted by the second: poll the address rather than await a navigation)
    expect(page).to_have_url(shop_site.success_url, timeout=15_000)
    expect(page.get_by_role("heading")).to_have_text("Thank you for your order")

    after = payment_of(seller, payment)
    assert after["status"] == "succeeded"
    assert after["amount_received"] == 3000
    assert ledger_balance(db, seller.keys.installation_id, "balance:pending") == 3000
    assert ledger_balance(db, seller.keys.installation_id, "world:card_network") == -3000
    assert event_types(seller, payment["id"]).count("payment_intent.succeeded") == 1
    assert event_types(seller, checkout["id"]) == ["checkout.session.completed"]
    # The browser posted at least once; whether the second click beat the first answer depends on the
    # machine's load, so two posts at the same moment are proven over HTTP as well
    # (tests/checkout/test_page.py::test_two_pays_at_the_same_moment_charge_once).
    assert wait_for(lambda: _checkout_posts(web.process.log_text()) - posts_before >= 1, timeout=10)


def test_the_cancel_link_returns_to_the_shop_and_charges_nothing(seller, shop_site, page):
    payment, checkout = open_checkout(seller, shop_site)
    page.goto(checkout["checkout_url"])
    page.get_by_role("link", name="Cancel and return to the shop").click()
    page.wait_for_url(shop_site.cancel_url)
    expect(page.get_by_role("heading")).to_have_text("Your order is not paid")
    assert payment_of(seller, payment)["status"] == "requires_payment_method"
    assert session_status(seller, checkout) == "open"  # until it expires: the back button finds the form
    assert httpx.get(checkout["checkout_url"], verify=TLS).status_code == 200
