"""A subscriber at the hosted checkout in a real Chromium: the page shows the amount, how often it
renews and who sells; it asks explicit consent to save the card and to renew, and without that consent
the browser does not send the form and nothing is charged."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from moneyrail.installations import service as installations
from tests.billing.support import customer, ok, price, subscribe
from tests.helpers import count_rows


@pytest.fixture
def subscriber(seller, bridge, shop_site):
    """The seller's sandbox with subscriptions on, and an incomplete subscription to pay."""

    async def work(session: Any) -> None:
        await installations.update_environment_settings(session, seller.keys.tenant, recurring_enabled=True)

    bridge.in_unit_of_work(work)
    plan = price(seller, 990, interval_count=3)
    created = subscribe(seller, plan["id"], customer(seller)["id"], quantity=3)
    checkout = ok(
        seller.post(
            "/v1/checkout-sessions",
            json={
                "subscription": created["id"],
                "title": "Coffee beans, every quarter",
                "success_url": shop_site.success_url,
                "cancel_url": shop_site.cancel_url,
            },
        )
    )
    return created, checkout


def test_a_subscriber_consents_by_keyboard_and_the_subscription_becomes_active(
    subscriber, seller, shop_site, db, page, csp_violations
):
    created, checkout = subscriber
    response = page.goto(checkout["checkout_url"])
    assert response is not None and response.status == 200
    expect(page.get_by_role("heading", name="Coffee beans, every quarter")).to_be_visible()
    expect(page.get_by_test_id("amount")).to_contain_text("€29.70")
    expect(page.get_by_test_id("frequency")).to_have_text("every 3 months")
    expect(page.get_by_test_id("seller")).to_have_text("test installation")
    consent = page.get_by_label(
        "I agree that test installation saves this card and charges it €29.70 every 3 months"
    )
    expect(consent).not_to_be_checked()

    page.get_by_label("Card number").fill("4242 4242 4242 4242")
    page.get_by_label("Expiry month").fill("12")
    page.get_by_label("Expiry year").fill("2034")
    page.get_by_label("Security code (CVC)").fill("123")
    page.get_by_role("button", name="Subscribe: pay €29.70").click()
    # the consent box is required: the browser keeps the payer on the page and sends nothing
    expect(page.get_by_role("heading", name="Coffee beans, every quarter")).to_be_visible()
    assert count_rows(db, "sandbox_processor_calls", seller.keys.installation_id) == 0

    consent.focus()
    page.keyboard.press("Space")
    expect(consent).to_be_checked()
    page.keyboard.press("Enter")
    page.wait_for_url(shop_site.success_url)
    expect(page.get_by_role("heading")).to_have_text("Thank you for your order")

    after = ok(seller.get(f"/v1/subscriptions/{created['id']}"))
    assert (after["status"], after["entitled"]) == ("active", True)
    assert after["access_until"] == created["current_period_end"]
    assert csp_violations == []


def test_the_hosted_page_of_a_subscription_has_no_save_card_box_of_its_own(subscriber, page):
    _, checkout = subscriber
    page.goto(checkout["checkout_url"])
    # one consent covers keeping the card and renewing; no separate optional box that could be left out
    expect(page.locator('input[name="save_card"]')).to_have_count(0)
    expect(page.locator('input[name="renew_consent"][required]')).to_have_count(1)
