"""The hosted checkout where Stripe runs (a live environment, a sandbox on Stripe's test mode), over plain
HTTP: the page loads Stripe.js (localstripe's fake, through the double) with the environment's publishable
key and a script of its own, under a Content-Security-Policy that allows that and nothing else; its form
takes Stripe's token and refuses typed card fields unread; a card that asks for bank authentication is let
go with a clear message. The same page in Chromium: tests/browser/test_stripe_checkout_in_chromium.py."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from moneyrail.checkout import service as checkout_service
from moneyrail.processor.stripe import StripeProcessor
from tests.checkout.support import (
    SUCCESS_URL,
    card_form,
    create_session,
    enable_checkout,
    session_status,
)
from tests.harness import OUTPUT_DIR, TLS
from tests.helpers import count_rows
from tests.processor.stripe.servers import SECRET_KEY
from tests.stripe_environments.conftest import StripeEnvironments, stripe_js_url
from tests.stripe_environments.support import (
    SUCCEEDS,
    card_token,
    confirm_with_token,
    double_requests,
    processor_authorization,
    stripe_get,
)

AUTHENTICATION = "4000002500003155"  # localstripe asks for 3-D Secure on it


def shop_on_stripe(on_stripe: StripeEnvironments, *, livemode: bool) -> Any:
    api = on_stripe.api(livemode=livemode)
    enable_checkout(on_stripe.bridge, api.keys)
    return api


def payment_and_checkout(api: Any, **fields: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    created = api.post("/v1/payment-intents", json={"amount": 4200, "currency": "eur", **fields})
    assert created.status_code == 200, created.text
    payment: dict[str, Any] = created.json()
    return payment, create_session(api, payment["id"])


def directives(page: httpx.Response) -> dict[str, list[str]]:
    policy = page.headers["Content-Security-Policy"]
    return {part.split()[0]: part.split()[1:] for part in policy.split("; ")}


def payment_status(api: Any, payment: dict[str, Any]) -> str:
    status: str = api.get(f"/v1/payment-intents/{payment['id']}").json()["status"]
    return status


def test_the_page_loads_stripe_js_and_its_own_script_under_a_policy_that_allows_only_them(on_stripe):
    live = shop_on_stripe(on_stripe, livemode=True)
    _, checkout = payment_and_checkout(live)
    page = httpx.get(checkout["checkout_url"], verify=TLS)
    assert page.status_code == 200, page.text
    html = page.text
    (nonce,) = set(re.findall(r'nonce="([^"]+)"', html))
    scripts = re.findall(r"<script[^>]*>", html)
    assert scripts == [
        f'<script src="{stripe_js_url(on_stripe.stripe)}" nonce="{nonce}">',
        f'<script src="/assets/stripe-card.js" nonce="{nonce}">',
    ]
    assert re.findall(r"<script[^>]*>([^<]*)</script>", html) == ["", ""]  # no inline script
    assert 'data-publishable-key="pk_live_moneyrail_tests"' in html
    assert '<input type="hidden" name="card_token" id="card-token" value="">' in html
    # no field of the page's own takes card data
    for name in ("card_number", "exp_month", "exp_year", "cvc"):
        assert f'name="{name}"' not in html
    stripe_origin = on_stripe.stripe.double
    assert directives(page) == {
        "default-src": ["'none'"],
        "script-src": [f"'nonce-{nonce}'", stripe_origin],
        "connect-src": [stripe_origin],  # the API base, where Stripe.js sends the card
        "frame-src": [stripe_origin],  # real Stripe.js's card field is a frame of its own origin
        "style-src": [f"'nonce-{nonce}'"],
        "img-src": ["'self'", "data:"],
        "form-action": ["'self'", on_stripe.web.base_url, "https://shop.example"],
        "frame-ancestors": ["'none'"],
        "base-uri": ["'none'"],
    }
    assert page.headers["Referrer-Policy"] == "no-referrer"

    script = httpx.get(f"{on_stripe.web.base_url}/assets/stripe-card.js", verify=TLS)
    assert script.status_code == 200
    assert script.headers["content-type"].startswith("text/javascript")
    assert script.headers["X-Content-Type-Options"] == "nosniff"
    assert "createToken" in script.text


def test_a_stripe_token_pays_the_checkout_and_the_payment_is_authorized_at_stripe(on_stripe, db):
    live = shop_on_stripe(on_stripe, livemode=True)
    payment, checkout = payment_and_checkout(live, capture_method="manual")
    paid = httpx.post(
        checkout["checkout_url"],
        data={"payment_method": "new", "card_token": card_token(on_stripe.stripe)},
        verify=TLS,
    )
    assert paid.status_code == 303, paid.text
    assert paid.headers["location"] == SUCCESS_URL
    assert session_status(live, checkout) == "complete"
    assert payment_status(live, payment) == "requires_capture"
    intent = stripe_get(on_stripe.stripe, f"/v1/payment_intents/{processor_authorization(db, payment['id'])}")
    assert (intent["status"], intent["amount"]) == ("requires_capture", 4200)


@pytest.mark.parametrize("livemode", [True, False], ids=["live", "sandbox-on-stripe"])
@pytest.mark.parametrize("with_token", [False, True], ids=["typed-only", "typed-and-token"])
def test_typed_card_fields_are_refused_unread_and_nothing_is_charged_or_recorded(
    on_stripe, db, livemode, with_token
):
    shop = shop_on_stripe(on_stripe, livemode=livemode)
    payment, checkout = payment_and_checkout(shop)
    form = card_form(SUCCEEDS)
    if with_token:
        form["card_token"] = card_token(on_stripe.stripe)
    calls_before = len(double_requests(on_stripe.stripe))
    refused = httpx.post(checkout["checkout_url"], data=form, verify=TLS)
    assert refused.status_code == 400
    assert "Card numbers are not accepted on this page" in refused.text
    assert 'role="alert"' in refused.text and "Nothing was charged" in refused.text
    assert SUCCEEDS not in refused.text
    # the page again, with Stripe.js's field to pay with
    assert 'id="card-element"' in refused.text and 'name="card_number"' not in refused.text
    # nothing asked of Stripe, nothing recorded
    assert len(double_requests(on_stripe.stripe)) == calls_before
    assert payment_status(shop, payment) == "requires_payment_method"
    assert session_status(shop, checkout) == "open"
    assert count_rows(db, "payment_methods", shop.keys.installation_id) == 0
    events = shop.get("/v1/events", params={"limit": 100}).json()["data"]
    assert [event["type"] for event in events if event["type"].startswith("payment_intent.")] == [
        "payment_intent.created"
    ]
    assert SUCCEEDS not in (OUTPUT_DIR / "web-stripe.log").read_text(errors="replace")


def test_a_card_that_asks_for_bank_authentication_is_let_go_and_another_card_pays(on_stripe, db):
    live = shop_on_stripe(on_stripe, livemode=True)
    payment, checkout = payment_and_checkout(live)
    asked = httpx.post(
        checkout["checkout_url"],
        data={"payment_method": "new", "card_token": card_token(on_stripe.stripe, AUTHENTICATION)},
        verify=TLS,
    )
    assert asked.status_code == 402, asked.text
    assert "Your bank asks you to confirm this payment in its own check (3-D Secure)" in asked.text
    assert 'id="card-element"' in asked.text  # the form again, for another card
    # Stripe's intent for it was let go: canceled, nothing held
    at_stripe = stripe_get(on_stripe.stripe, "/v1/payment_intents?limit=100")["data"]
    (let_go,) = [intent for intent in at_stripe if intent["metadata"].get("reference") == payment["id"]]
    assert let_go["status"] == "canceled"
    shown = live.get(f"/v1/payment-intents/{payment['id']}").json()
    assert (shown["status"], shown["last_payment_error"]["decline_code"]) == (
        "requires_payment_method",
        "authentication_failed",
    )
    assert shown["amount_capturable"] == 0 and shown["amount_received"] == 0

    paid = httpx.post(
        checkout["checkout_url"],
        data={"payment_method": "new", "card_token": card_token(on_stripe.stripe)},
        verify=TLS,
    )
    assert paid.status_code == 303 and paid.headers["location"] == SUCCESS_URL
    assert payment_status(live, payment) == "succeeded"


def test_a_payment_waiting_for_stripes_authentication_is_not_sent_to_the_simulators_bank_page(on_stripe):
    live = shop_on_stripe(on_stripe, livemode=True)
    payment, checkout = payment_and_checkout(live)
    # confirmed client side by the shop's own Stripe.js page: Stripe waits for handleCardAction there
    confirmed = confirm_with_token(live, payment, card_token(on_stripe.stripe, AUTHENTICATION))
    assert confirmed.json()["status"] == "requires_action", confirmed.text
    page = httpx.get(checkout["checkout_url"], verify=TLS)
    assert page.status_code == 200
    assert "Your bank asks you to confirm this payment" in page.text
    assert "<form" not in page.text and "/authenticate/" not in page.text


def test_without_a_publishable_key_the_page_takes_no_new_card_and_runs_no_script(on_stripe):
    live = on_stripe.api(livemode=True, with_publishable_key=False)  # the secret key only
    enable_checkout(on_stripe.bridge, live.keys)
    payment, checkout = payment_and_checkout(live)
    page = httpx.get(checkout["checkout_url"], verify=TLS)
    assert page.status_code == 200
    assert "This shop cannot take a new card here yet" in page.text
    assert "<script" not in page.text and 'name="card_number"' not in page.text
    assert "script-src" not in directives(page)
    posted = httpx.post(checkout["checkout_url"], data={"payment_method": "new"}, verify=TLS)
    assert posted.status_code == 400 and "Enter your card details" in posted.text
    assert payment_status(live, payment) == "requires_payment_method"


def test_a_sandbox_on_stripe_leaves_its_due_sessions_to_the_sweep_which_cancels_at_stripe(on_stripe, db):
    """A clock advance settles no session of a sandbox on Stripe's test mode (the cancel would go out
    inside the advance's transaction); the scheduler's sweep settles it on that sandbox's clock, the
    payment's cancel made at Stripe in phases."""
    sandbox = shop_on_stripe(on_stripe, livemode=False)
    payment, checkout = payment_and_checkout(sandbox)
    confirmed = confirm_with_token(sandbox, payment, card_token(on_stripe.stripe, AUTHENTICATION))
    assert confirmed.json()["status"] == "requires_action", confirmed.text
    advanced = sandbox.post("/v1/test-helpers/clock/advance", json={"seconds": 31 * 60})
    assert advanced.status_code == 200, advanced.text
    assert advanced.json()["work_done"]["checkout.expiry"] == 0
    assert session_status(sandbox, checkout) == "open"

    stripe = StripeProcessor(SECRET_KEY, api_base=on_stripe.stripe.double)
    try:
        settled = on_stripe.bridge.run(
            checkout_service.sweep(on_stripe.bridge.sessionmaker, processor=stripe)
        )
    finally:
        on_stripe.bridge.run(stripe.aclose())
    assert settled >= 1
    assert session_status(sandbox, checkout) == "expired"
    after = sandbox.get(f"/v1/payment-intents/{payment['id']}").json()
    assert (after["status"], after["cancellation_reason"]) == ("canceled", "abandoned")
    intent = stripe_get(on_stripe.stripe, f"/v1/payment_intents/{processor_authorization(db, payment['id'])}")
    assert intent["status"] == "canceled"
