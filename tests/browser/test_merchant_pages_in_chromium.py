"""A merchant in a real Chromium: the OAuth consent page (approve, deny, leave a requirement due) and the
activation page, each ending on the application's own page; the outcome is then read over the API."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import expect

from tests.merchants.support import exchange, register_redirect_uris, start_connection


@pytest.fixture
def platform_site(api, bridge, shop_site):
    """The platform's callback and activation pages are on the shop's test site (before the browser).

    The activation page returns to the shop's success page, a return URL the `seller` fixture registers.
    """
    callback = f"{shop_site.base_url}/oauth/callback"
    register_redirect_uris(bridge, api.keys, (callback,), (shop_site.success_url, shop_site.cancel_url))
    return api, callback, shop_site.success_url


def landed_query(page) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(urlsplit(page.url).query).items()}


def test_a_merchant_approves_on_the_consent_page_and_the_application_connects_it(
    platform_site, page, csp_violations
):
    api, callback, _ = platform_site
    started = start_connection(api, callback)
    response = page.goto(started.url)
    assert response is not None and response.status == 200
    expect(page.get_by_role("heading", level=1)).to_have_text("Connect your business to test installation")
    expect(page.get_by_role("listitem")).to_have_count(4)

    page.get_by_label("Business name").fill("Luigi's Pizzeria")
    page.get_by_label("Website (optional)").fill("https://luigi.example")
    page.get_by_label("Support e-mail (optional)").focus()
    page.keyboard.type("help@luigi.example")
    page.keyboard.press("Enter")  # the first submit button: Connect

    page.wait_for_url(f"{callback}?*")
    query = landed_query(page)
    assert query["state"] == started.state and "code" in query
    token = exchange(api, query["code"], started.pkce.verifier, callback)
    assert token.status_code == 200, token.text
    merchant = api.get(f"/v1/merchants/{token.json()['merchant']}").json()
    assert merchant["connection_status"] == "active"
    assert merchant["business_profile"]["name"] == "Luigi's Pizzeria"
    assert csp_violations == []


def test_a_merchant_denies_and_the_application_hears_access_denied(platform_site, page, csp_violations):
    api, callback, _ = platform_site
    started = start_connection(api, callback)
    page.goto(started.url)
    page.get_by_role("button", name="Deny").click()
    page.wait_for_url(f"{callback}?*")
    query = landed_query(page)
    assert query["error"] == "access_denied" and query["state"] == started.state
    assert api.get("/v1/merchants").json()["data"][0]["connection_status"] == "denied"
    assert csp_violations == []


def test_a_requirement_left_due_is_completed_on_the_activation_page(platform_site, page, csp_violations):
    api, callback, activated = platform_site
    started = start_connection(api, callback)
    page.goto(started.url)
    page.get_by_label("Business name").fill("Taco Truck")
    page.get_by_label("Leave an onboarding requirement due (a bank account)").check()
    page.get_by_role("button", name="Connect").click()
    page.wait_for_url(f"{callback}?*")
    merchant_id = exchange(api, landed_query(page)["code"], started.pkce.verifier, callback).json()[
        "merchant"
    ]
    assert api.get(f"/v1/merchants/{merchant_id}").json()["capabilities"]["payments"] == "pending"

    onboarding = api.post(f"/v1/merchants/{merchant_id}/onboarding-sessions", json={"return_url": activated})
    assert onboarding.status_code == 200, onboarding.text
    page.goto(onboarding.json()["url"])
    expect(page.get_by_test_id("business")).to_have_text("Taco Truck")
    expect(page.get_by_role("listitem")).to_have_text(["A bank account to receive payouts"])
    page.get_by_label("Bank account number").fill("12")
    page.get_by_role("button", name="Activate").click()
    expect(page.get_by_role("alert")).to_contain_text("bank account number")
    page.get_by_label("Bank account number").fill("000123456789")
    page.get_by_role("button", name="Activate").click()
    page.wait_for_url(activated)
    merchant = api.get(f"/v1/merchants/{merchant_id}").json()
    assert set(merchant["capabilities"].values()) == {"active"}
    assert merchant["requirements"]["currently_due"] == []
    assert csp_violations == []
