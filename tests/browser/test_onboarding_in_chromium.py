"""A courier on the hosted onboarding page in a real Chromium: the form by keyboard, a mistake shown as
an alert, the return to the platform, a used link refused, a reload in the page's own session and the
same link refused to another browser; the page runs under its strict CSP."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.connect.support import create_account


@pytest.fixture
def onboarding(seller, shop_site):
    """A courier of the seller's sandbox and a fresh onboarding link that returns to the shop."""
    account = create_account(seller, "courier", display_name="Ada on wheels")
    link = seller.post(
        f"/v1/connected-accounts/{account['id']}/onboarding-links", json={"return_url": shop_site.success_url}
    )
    assert link.status_code == 200, link.text
    return account, link.json()["url"]


def test_a_courier_onboards_by_keyboard_and_returns_to_the_platform(
    seller, shop_site, onboarding, page, csp_violations
):
    account, url = onboarding
    response = page.goto(url)
    assert response is not None and response.status == 200
    expect(page.get_by_role("heading", name="Tell us who you are")).to_be_visible()
    expect(page.get_by_test_id("platform")).to_have_text("test installation")
    expect(page.get_by_test_id("bank-last4")).to_have_text("3000")

    page.get_by_label("First name").focus()
    page.keyboard.type("Ada")
    page.keyboard.press("Tab")
    page.keyboard.type("Lovelace")
    page.get_by_label("Date of birth").fill("1990-12-10")
    page.get_by_label("I accept the services agreement").focus()
    page.keyboard.press("Space")
    expect(page.get_by_label("I accept the services agreement")).to_be_checked()
    page.get_by_role("button", name="Submit").press("Enter")

    expect(page.get_by_role("heading", name="You are set up")).to_be_visible()
    read = seller.get(f"/v1/connected-accounts/{account['id']}").json()
    assert read["payouts_enabled"] is True and read["requirements"]["currently_due"] == []
    page.get_by_role("link", name="Return to test installation").click()
    page.wait_for_url(shop_site.success_url)
    assert csp_violations == []

    again = page.goto(url)
    assert again is not None and again.status == 410
    expect(page.get_by_role("heading")).to_have_text("This onboarding link has been used")


def test_a_missing_agreement_is_announced_and_the_same_link_then_works(
    seller, onboarding, page, csp_violations
):
    account, url = onboarding
    page.goto(url)
    page.get_by_label("First name").fill("Grace")
    page.get_by_label("Last name").fill("Hopper")
    page.get_by_label("Date of birth").fill("1986-12-09")
    page.get_by_role("button", name="Submit").click()
    expect(page.get_by_role("alert")).to_have_text("Accept the services agreement to receive payouts.")
    assert seller.get(f"/v1/connected-accounts/{account['id']}").json()["payouts_enabled"] is False

    page.get_by_label("First name").fill("Grace")
    page.get_by_label("Last name").fill("Hopper")
    page.get_by_label("Date of birth").fill("1986-12-09")
    page.get_by_label("I accept the services agreement").check()
    page.get_by_role("button", name="Submit").click()
    expect(page.get_by_role("heading", name="You are set up")).to_be_visible()
    assert seller.get(f"/v1/connected-accounts/{account['id']}").json()["payouts_enabled"] is True
    assert csp_violations == []


def test_a_reload_goes_on_and_another_browser_is_told_to_ask_for_a_new_link(
    seller, onboarding, browser, page, csp_violations
):
    """The first open spends the link; Chromium keeps the page's own session (its cookie) for a reload
    and the form, and another browser opening the same link gets the page that says what to do."""
    account, url = onboarding
    first = page.goto(url)
    assert first is not None and first.status == 200
    reloaded = page.reload()
    assert reloaded is not None and reloaded.status == 200
    expect(page.get_by_role("heading", name="Tell us who you are")).to_be_visible()

    elsewhere = browser.new_context()
    try:
        other = elsewhere.new_page()
        second = other.goto(url)
        assert second is not None and second.status == 410
        expect(other.get_by_role("heading")).to_have_text("This onboarding link has already been opened")
        expect(other.get_by_role("alert")).to_contain_text("Ask the platform for a new link")
    finally:
        elsewhere.close()
    assert seller.get(f"/v1/connected-accounts/{account['id']}").json()["payouts_enabled"] is False

    page.get_by_label("First name").fill("Ada")
    page.get_by_label("Last name").fill("Lovelace")
    page.get_by_label("Date of birth").fill("1990-12-10")
    page.get_by_label("I accept the services agreement").check()
    page.get_by_role("button", name="Submit").click()
    expect(page.get_by_role("heading", name="You are set up")).to_be_visible()
    assert seller.get(f"/v1/connected-accounts/{account['id']}").json()["payouts_enabled"] is True
    assert csp_violations == []
