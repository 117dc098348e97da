"""The hosted page over plain HTTP (no browser): what it shows, what it refuses, where it sends the payer."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.checkout.support import (
    CANCEL_URL,
    SUCCESS_URL,
    card_form,
    create_session,
    session_status,
    token_of,
)
from tests.harness import TLS
from tests.payment_methods.support import new_customer, save_card
from tests.payments.support import (
    AUTHENTICATE,
    DISPUTE_LATER,
    GENERIC_DECLINE,
    INSUFFICIENT_FUNDS,
    SUCCEEDS,
    create_payment,
    event_types,
    ledger_balance,
)


def test_the_page_shows_title_amount_and_seller_with_a_labelled_card_form(shop):
    payment = create_payment(shop, 2000)
    checkout = create_session(shop, payment["id"], title="Order 42: two tickets")
    page = httpx.get(checkout["checkout_url"], verify=TLS)
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    html = page.text
    assert "Order 42: two tickets" in html
    assert "€20.00" in html
    assert "test installation" in html  # the seller: the installation's name
    for field_id, name in (
        ("card-number", "card_number"),
        ("exp-month", "exp_month"),
        ("exp-year", "exp_year"),
        ("cvc", "cvc"),
    ):
        assert f'<label for="{field_id}">' in html
        assert re.search(rf'<input[^>]*id="{field_id}"[^>]*name="{name}"', html)
    assert f'action="/checkout/{token_of(checkout)}"' in html
    # anonymous: no saved cards, no consent to save
    assert 'type="radio"' not in html and "save_card" not in html
    # nothing secret, nothing from elsewhere
    for secret in (shop.keys.secret, shop.keys.publishable_key, payment["client_secret"]):
        assert secret not in html
    assert "<script" not in html
    assert not re.search(r'(src|href)="https?://', html)


def test_the_page_has_a_strict_content_security_policy(shop, web):
    checkout = create_session(shop, create_payment(shop)["id"])
    page = httpx.get(checkout["checkout_url"], verify=TLS)
    policy = page.headers["Content-Security-Policy"]
    directives = {part.split()[0]: part.split()[1:] for part in policy.split("; ")}
    assert directives["default-src"] == ["'none'"]
    assert "script-src" not in directives  # no script at all
    (nonce,) = re.findall(r"'nonce-([^']+)'", policy)
    assert directives["style-src"] == [f"'nonce-{nonce}'"]
    assert f'<style nonce="{nonce}">' in page.text
    # a form may post here and be redirected to the bank's page (here) and the shop's return pages only
    assert directives["form-action"] == ["'self'", web.base_url, "https://shop.example"]
    assert directives["frame-ancestors"] == ["'none'"]
    assert page.headers["Referrer-Policy"] == "no-referrer"
    assert page.headers["Cache-Control"] == "no-store"
    assert page.headers["X-Content-Type-Options"] == "nosniff"
    # a second rendering has another nonce
    again = httpx.get(checkout["checkout_url"], verify=TLS).headers["Content-Security-Policy"]
    assert again != policy


def test_paying_with_4242_completes_the_session_and_sends_the_payer_to_success_url(shop, db):
    payment = create_payment(shop, 2000)
    checkout = create_session(shop, payment["id"])
    paid = httpx.post(checkout["checkout_url"], data=card_form("4242 4242 4242 4242"), verify=TLS)
    assert paid.status_code == 303
    assert paid.headers["location"] == SUCCESS_URL
    assert session_status(shop, checkout) == "complete"
    after = shop.get(f"/v1/payment-intents/{payment['id']}").json()
    assert after["status"] == "succeeded" and after["amount_received"] == 2000
    assert ledger_balance(db, shop.keys.installation_id, "balance:pending") == 2000
    assert event_types(shop, checkout["id"]) == ["checkout.session.completed"]
    completed = db.execute(
        "SELECT completed_at IS NOT NULL FROM checkout_sessions WHERE id = %s", (checkout["id"],)
    ).fetchone()
    assert completed == (True,)

    # the link is spent: the page is gone, a repeated post charges nothing and goes to success_url
    gone = httpx.get(checkout["checkout_url"], verify=TLS)
    assert gone.status_code == 410 and "<form" not in gone.text
    again = httpx.post(checkout["checkout_url"], data=card_form(SUCCEEDS), verify=TLS)
    assert again.status_code == 303 and again.headers["location"] == SUCCESS_URL
    assert shop.get(f"/v1/payment-intents/{payment['id']}").json()["amount_received"] == 2000
    assert ledger_balance(db, shop.keys.installation_id, "balance:pending") == 2000


@pytest.mark.parametrize(
    ("number", "message"),
    [(GENERIC_DECLINE, "The card was declined."), (INSUFFICIENT_FUNDS, "insufficient funds")],
)
def test_a_decline_shows_the_form_again_with_an_alert_and_another_card_then_pays(shop, number, message):
    payment = create_payment(shop)
    checkout = create_session(shop, payment["id"])
    declined = httpx.post(checkout["checkout_url"], data=card_form(number), verify=TLS)
    assert declined.status_code == 402
    alert = re.search(r'<p class="error" role="alert"[^>]*>([^<]+)</p>', declined.text)
    assert alert is not None and message in alert.group(1)
    assert "<form" in declined.text and number not in declined.text  # the card number is never echoed
    after = shop.get(f"/v1/payment-intents/{payment['id']}").json()
    assert after["status"] == "requires_payment_method"  # the decline is recorded on the payment
    assert after["last_payment_error"]["code"] == "card_declined"
    assert session_status(shop, checkout) == "open"

    paid = httpx.post(checkout["checkout_url"], data=card_form(SUCCEEDS), verify=TLS)
    assert paid.status_code == 303 and paid.headers["location"] == SUCCESS_URL
    assert shop.get(f"/v1/payment-intents/{payment['id']}").json()["status"] == "succeeded"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"card_number": ""}, "Enter the card number."),
        ({"card_number": "4242"}, "12 to 19 digits"),
        ({"exp_month": "13"}, "expiry month"),
        ({"exp_year": "3"}, "expiry year"),
        ({"cvc": "12a"}, "security code"),
    ],
)
def test_a_malformed_card_is_refused_on_the_page_and_records_nothing(shop, changes, message):
    payment = create_payment(shop)
    checkout = create_session(shop, payment["id"])
    refused = httpx.post(checkout["checkout_url"], data=card_form(SUCCEEDS, **changes), verify=TLS)
    assert refused.status_code == 400
    assert 'role="alert"' in refused.text and message in refused.text
    after = shop.get(f"/v1/payment-intents/{payment['id']}").json()
    assert after["status"] == "requires_payment_method" and after["last_payment_error"] is None
    assert event_types(shop, payment["id"]) == ["payment_intent.created"]


def test_bank_authentication_returns_to_the_page_which_believes_only_the_payment(shop):
    payment = create_payment(shop, 4500)
    checkout = create_session(shop, payment["id"])
    token = token_of(checkout)
    return_address = f"{shop.base_url}/checkout/return/{checkout['id']}"
    with httpx.Client(verify=TLS) as browser:
        started = browser.post(checkout["checkout_url"], data=card_form(AUTHENTICATE))
        assert started.status_code == 303
        bank_page = started.headers["location"]
        assert "/authenticate/" in bank_page
        assert shop.get(f"/v1/payment-intents/{payment['id']}").json()["status"] == "requires_action"

        # a forged return confirms nothing: the payment is still waiting for the bank
        forged = browser.get(
            return_address, params={"payment_intent": payment["id"], "redirect_status": "succeeded"}
        )
        assert forged.status_code == 303 and forged.headers["location"] == bank_page
        assert session_status(shop, checkout) == "open"

        approved = browser.post(bank_page, data={"decision": "approve"})
        assert approved.status_code == 303
        back = approved.headers["location"]
        assert back.startswith(f"{return_address}?") and token not in back
        returned = browser.get(back)
    # the bank page's form-action allows this site only, so the page forwards to success_url itself
    assert returned.status_code == 200
    assert f'<meta http-equiv="refresh" content="0; url={SUCCESS_URL}">' in returned.text
    assert session_status(shop, checkout) == "complete"
    assert shop.get(f"/v1/payment-intents/{payment['id']}").json()["status"] == "succeeded"


def test_a_failed_bank_authentication_shows_the_form_again_to_try_another_card(shop):
    payment = create_payment(shop)
    checkout = create_session(shop, payment["id"])
    with httpx.Client(verify=TLS) as browser:
        bank_page = browser.post(checkout["checkout_url"], data=card_form(AUTHENTICATE)).headers["location"]
        failed = browser.post(bank_page, data={"decision": "fail"})
        assert failed.status_code == 303
        returned = browser.get(failed.headers["location"])
    assert returned.status_code == 402
    assert 'role="alert"' in returned.text and "authenticate" in returned.text
    assert "<form" in returned.text
    paid = httpx.post(checkout["checkout_url"], data=card_form(SUCCEEDS), verify=TLS)
    assert paid.headers["location"] == SUCCESS_URL


def test_a_return_without_the_payers_link_moves_nothing_unless_the_payment_is_paid(shop):
    payment = create_payment(shop)
    checkout = create_session(shop, payment["id"])
    return_address = f"{shop.base_url}/checkout/return/{checkout['id']}"
    forged = httpx.get(
        return_address, params={"payment_intent": payment["id"], "redirect_status": "succeeded"}, verify=TLS
    )
    assert forged.status_code == 200 and "<form" not in forged.text and "Return to the shop" in forged.text
    assert session_status(shop, checkout) == "open"
    assert shop.get(f"/v1/payment-intents/{payment['id']}").json()["status"] == "requires_payment_method"
    # once the payment is paid (here through the page), any return completes the session
    assert httpx.post(checkout["checkout_url"], data=card_form(SUCCEEDS), verify=TLS).status_code == 303
    assert httpx.get(return_address, verify=TLS).status_code == 200
    assert session_status(shop, checkout) == "complete"
    assert (
        httpx.get(f"{shop.base_url}/checkout/return/cs_000000000000000000000000", verify=TLS).status_code
        == 404
    )


def test_the_cancel_link_goes_to_cancel_url_and_leaves_the_session_open(shop):
    payment = create_payment(shop)
    checkout = create_session(shop, payment["id"])
    left = httpx.get(f"{checkout['checkout_url']}/cancel", verify=TLS)
    assert left.status_code == 303 and left.headers["location"] == CANCEL_URL
    assert session_status(shop, checkout) == "open"
    assert shop.get(f"/v1/payment-intents/{payment['id']}").json()["status"] == "requires_payment_method"


def test_a_customers_saved_cards_are_offered_masked_preferred_first_and_selected(shop):
    customer = new_customer(shop, email="ada@example.com")
    first = save_card(shop, customer, SUCCEEDS)
    second = save_card(shop, customer, DISPUTE_LATER)
    assert shop.post(f"/v1/customers/{customer}/payment-methods/{second['id']}/default").status_code == 200
    payment = create_payment(shop, 1500, customer=customer)
    checkout = create_session(shop, payment["id"])
    html = httpx.get(checkout["checkout_url"], verify=TLS).text
    radios = re.findall(r'<input type="radio"[^>]*value="([^"]+)"([^>]*)>', html)
    assert [value for value, _ in radios] == [second["id"], first["id"], "new"]
    assert "checked" in radios[0][1] and "checked" not in radios[1][1]
    assert "ending in 0259" in html and "ending in 4242" in html and "12/2099" in html
    assert first["card"]["fingerprint"] not in html
    assert 'name="save_card"' in html  # a new card may be saved, with consent

    paid = httpx.post(checkout["checkout_url"], data={"payment_method": first["id"]}, verify=TLS)
    assert paid.status_code == 303 and paid.headers["location"] == SUCCESS_URL
    after = shop.get(f"/v1/payment-intents/{payment['id']}").json()
    assert after["status"] == "succeeded" and after["payment_method"] == first["id"]


def test_a_saved_card_of_another_customer_is_refused_and_charges_nothing(shop):
    ada = new_customer(shop, email="ada@example.com")
    bob = new_customer(shop, email="bob@example.com")
    bobs_card = save_card(shop, bob)
    save_card(shop, ada)
    payment = create_payment(shop, customer=ada)
    checkout = create_session(shop, payment["id"])
    refused = httpx.post(checkout["checkout_url"], data={"payment_method": bobs_card["id"]}, verify=TLS)
    assert refused.status_code == 400 and 'role="alert"' in refused.text
    after = shop.get(f"/v1/payment-intents/{payment['id']}").json()
    assert after["status"] == "requires_payment_method" and after["amount_received"] == 0
    # an anonymous checkout takes no saved card at all
    anonymous = create_session(shop, create_payment(shop)["id"])
    refused = httpx.post(anonymous["checkout_url"], data={"payment_method": bobs_card["id"]}, verify=TLS)
    assert refused.status_code == 400


def test_an_unknown_link_is_a_404_page(web):
    page = httpx.get(f"{web.base_url}/checkout/{'x' * 43}", verify=TLS)
    assert page.status_code == 404
    assert "not valid" in page.text and "<form" not in page.text
    assert page.headers["content-type"].startswith("text/html")
    for suffix in ("/cancel",):
        assert httpx.get(f"{web.base_url}/checkout/{'x' * 43}{suffix}", verify=TLS).status_code == 404
    assert (
        httpx.post(f"{web.base_url}/checkout/{'x' * 43}", data=card_form(SUCCEEDS), verify=TLS).status_code
        == 404
    )


def test_a_payment_cancelled_by_the_shop_closes_the_page(shop):
    payment = create_payment(shop)
    checkout = create_session(shop, payment["id"])
    assert shop.post(f"/v1/payment-intents/{payment['id']}/cancel").status_code == 200
    page = httpx.get(checkout["checkout_url"], verify=TLS)
    assert page.status_code == 410 and "<form" not in page.text
    assert httpx.post(checkout["checkout_url"], data=card_form(SUCCEEDS), verify=TLS).status_code == 410


def test_after_a_declined_new_card_the_form_offers_a_new_card_again(shop):
    customer = new_customer(shop, email="ada@example.com")
    save_card(shop, customer, SUCCEEDS)
    checkout = create_session(shop, create_payment(shop, customer=customer)["id"])
    declined = httpx.post(checkout["checkout_url"], data=card_form(GENERIC_DECLINE), verify=TLS)
    assert declined.status_code == 402
    radios = dict(re.findall(r'<input type="radio"[^>]*value="([^"]+)"([^>]*)>', declined.text))
    assert "checked" in radios["new"]
    assert [value for value, attributes in radios.items() if "checked" in attributes] == ["new"]


def test_two_pays_at_the_same_moment_charge_once(shop, db):
    payment = create_payment(shop, 3000)
    checkout = create_session(shop, payment["id"])

    def pay(_: int) -> httpx.Response:
        return httpx.post(checkout["checkout_url"], data=card_form(SUCCEEDS), timeout=30, verify=TLS)

    with ThreadPoolExecutor(max_workers=4) as pool:
        answers = list(pool.map(pay, range(4)))
    # every click ends on the shop's success page: the first pays, the others find it paid
    assert [answer.status_code for answer in answers] == [303] * 4
    assert {answer.headers["location"] for answer in answers} == {SUCCESS_URL}
    after = shop.get(f"/v1/payment-intents/{payment['id']}").json()
    assert (after["status"], after["amount_received"]) == ("succeeded", 3000)
    assert ledger_balance(db, shop.keys.installation_id, "world:card_network") == -3000
    assert event_types(shop, payment["id"]).count("payment_intent.succeeded") == 1
    # a reload of the form's post after the fact charges nothing either
    assert pay(0).headers["location"] == SUCCESS_URL
    assert ledger_balance(db, shop.keys.installation_id, "world:card_network") == -3000
