"""A live installation on Stripe, paid at its hosted checkout in a real Chromium: the page loads
localstripe's fake Stripe.js (through the double, MONEYRAIL_STRIPE_JS_URL), the payer types the card into
its field, Stripe.js sends the card from the browser to Stripe, and the form posts Stripe's token only. No
card number reaches moneyrail: not in any request the browser sends it, not in its log, not in its
database. The subscription checkout likewise."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, Request, expect, sync_playwright

from moneyrail.installations import service as installations
from tests.billing.support import customer, ok, price, subscribe
from tests.checkout.support import enable_checkout
from tests.harness import OUTPUT_DIR
from tests.stripe_environments.conftest import StripeEnvironments, stripe_js_url

PAN = "4242424242424242"


@dataclass
class LiveCheckout:
    shop: Any  # the installation's live API client
    payment: dict[str, Any]
    checkout: dict[str, Any]
    subscription: dict[str, Any] | None = None


@pytest.fixture
def live_shop(on_stripe: StripeEnvironments, shop_site: Any) -> Any:
    shop = on_stripe.api(livemode=True)
    enable_checkout(on_stripe.bridge, shop.keys, (shop_site.success_url, shop_site.cancel_url))
    return shop


@pytest.fixture
def one_payment(live_shop: Any, shop_site: Any) -> LiveCheckout:
    payment = ok(
        live_shop.post(
            "/v1/payment-intents", json={"amount": 4200, "currency": "eur", "capture_method": "manual"}
        )
    )
    checkout = ok(
        live_shop.post(
            "/v1/checkout-sessions",
            json={
                "payment_intent": payment["id"],
                "title": "Order 42",
                "success_url": shop_site.success_url,
                "cancel_url": shop_site.cancel_url,
            },
        )
    )
    return LiveCheckout(live_shop, payment, checkout)


@pytest.fixture
def first_instalment(live_shop: Any, on_stripe: StripeEnvironments, shop_site: Any) -> LiveCheckout:
    async def work(session: Any) -> None:
        await installations.update_environment_settings(
            session, live_shop.keys.tenant, recurring_enabled=True
        )

    on_stripe.bridge.in_unit_of_work(work)
    plan = price(live_shop, 990)
    created = subscribe(live_shop, plan["id"], customer(live_shop)["id"])
    checkout = ok(
        live_shop.post(
            "/v1/checkout-sessions",
            json={
                "subscription": created["id"],
                "title": "Coffee beans, every month",
                "success_url": shop_site.success_url,
                "cancel_url": shop_site.cancel_url,
            },
        )
    )
    payment = ok(live_shop.get(f"/v1/payment-intents/{checkout['payment_intent']}"))
    return LiveCheckout(live_shop, payment, checkout, created)


@pytest.fixture
def browser(chromium: str, on_stripe: StripeEnvironments) -> Iterator[Browser]:
    """The browser of tests/browser/conftest.py, for a seller on Stripe (set up before it starts)."""
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(headless=True, executable_path=chromium, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


def sent_requests(page: Page) -> list[Request]:
    sent: list[Request] = []

    def record(request: Request) -> None:
        sent.append(request)

    page.on("request", record)
    return sent


def type_card_into_stripe_js(page: Page) -> None:
    """localstripe's fake card field: its own inputs (real Stripe.js's is a frame of js.stripe.com)."""
    field = page.locator("#card-element")
    expect(field.get_by_placeholder("number")).to_be_visible()
    field.get_by_placeholder("number").press_sequentially(PAN)
    field.get_by_placeholder("exp_month").press_sequentially("12")
    field.get_by_placeholder("exp_year").press_sequentially("34")
    field.get_by_placeholder("cvc").press_sequentially("123")
    field.get_by_placeholder("postal_code").press_sequentially("75001")


def assert_no_card_number_reached_moneyrail(
    sent: list[Request], on_stripe: StripeEnvironments, db: Any, installation: str
) -> None:
    to_moneyrail = [request for request in sent if request.url.startswith(on_stripe.web.base_url)]
    assert to_moneyrail
    for request in to_moneyrail:
        assert PAN not in request.url and PAN not in (request.post_data or ""), request.url
    (form_post,) = [request for request in to_moneyrail if request.method == "POST"]
    posted = form_post.post_data or ""
    assert "card_token=tok_" in posted and "card_number" not in posted
    # the card went from the browser to Stripe's API base, and only there
    (to_stripe,) = [request for request in sent if PAN in (request.post_data or "")]
    assert to_stripe.url == f"{on_stripe.stripe.double}/v1/tokens"
    assert PAN not in (OUTPUT_DIR / "web-stripe.log").read_text(errors="replace")
    for table in ("payment_methods", "payment_intents", "checkout_sessions", "events"):
        rows = db.execute(
            f"SELECT row_to_json(t)::text FROM {table} t WHERE installation_id = %s",
            (installation,),
        ).fetchall()
        assert rows or table == "checkout_sessions", table
        assert not [row for (row,) in rows if PAN in row], table
    methods = db.execute(
        "SELECT last4, brand FROM payment_methods WHERE installation_id = %s", (installation,)
    ).fetchall()
    assert methods and all(method == ("4242", "visa") for method in methods)


def expected_policy(page_nonce: str, on_stripe: StripeEnvironments, shop_origin: str) -> str:
    stripe_origin = on_stripe.stripe.double
    return (
        f"default-src 'none'; script-src 'nonce-{page_nonce}' {stripe_origin}; "
        f"connect-src {stripe_origin}; frame-src {stripe_origin}; style-src 'nonce-{page_nonce}'; "
        f"img-src 'self' data:; form-action 'self' {on_stripe.web.base_url} {shop_origin}; "
        "frame-ancestors 'none'; base-uri 'none'"
    )


def test_a_live_checkout_on_stripe_is_paid_through_stripe_js_and_no_card_number_reaches_moneyrail(
    one_payment, on_stripe, shop_site, db, page, csp_violations
):
    sent = sent_requests(page)
    response = page.goto(one_payment.checkout["checkout_url"])
    assert response is not None and response.status == 200
    # the browser hides a nonce from the attribute (nonce hiding), not from the property
    nonce = page.locator("script").first.evaluate("(script) => script.nonce")
    assert nonce
    assert response.headers["content-security-policy"] == expected_policy(
        nonce, on_stripe, shop_site.base_url
    )
    assert page.locator("script").evaluate_all("(all) => all.map((s) => s.src)") == [
        stripe_js_url(on_stripe.stripe),
        f"{on_stripe.web.base_url}/assets/stripe-card.js",
    ]
    expect(page.get_by_role("heading", name="Order 42")).to_be_visible()
    # the page's own fields for card data are gone: Stripe.js's field takes the card
    expect(page.get_by_label("Card number")).to_have_count(0)

    type_card_into_stripe_js(page)
    page.get_by_role("button", name="Pay €42.00").click()
    page.wait_for_url(shop_site.success_url)
    expect(page.get_by_role("heading")).to_have_text("Thank you for your order")

    shop = one_payment.shop
    paid = ok(shop.get(f"/v1/payment-intents/{one_payment.payment['id']}"))
    assert (paid["status"], paid["amount_capturable"]) == ("requires_capture", 4200)  # a manual capture
    assert ok(shop.get(f"/v1/checkout-sessions/{one_payment.checkout['id']}"))["status"] == "complete"
    assert_no_card_number_reached_moneyrail(sent, on_stripe, db, shop.keys.installation_id)
    assert csp_violations == []


def test_a_live_subscription_checkout_on_stripe_is_paid_through_stripe_js(
    first_instalment, on_stripe, shop_site, db, page, csp_violations
):
    sent = sent_requests(page)
    response = page.goto(first_instalment.checkout["checkout_url"])
    assert response is not None and response.status == 200
    expect(page.get_by_test_id("frequency")).to_have_text("every month")
    type_card_into_stripe_js(page)
    page.get_by_label(
        "I agree that test installation saves this card and charges it €9.90 every month"
    ).check()
    page.get_by_role("button", name="Subscribe: pay €9.90").click()
    page.wait_for_url(shop_site.success_url)

    shop = first_instalment.shop
    assert first_instalment.subscription is not None
    after = ok(shop.get(f"/v1/subscriptions/{first_instalment.subscription['id']}"))
    assert (after["status"], after["entitled"]) == ("active", True), json.dumps(after)
    paid = ok(shop.get(f"/v1/payment-intents/{first_instalment.payment['id']}"))
    assert paid["status"] == "succeeded"
    assert_no_card_number_reached_moneyrail(sent, on_stripe, db, shop.keys.installation_id)
    assert csp_violations == []
