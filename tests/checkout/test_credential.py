"""The checkout URL is a credential (spec 4.N rule 3, part 5): never logged, useless once spent."""

from __future__ import annotations

import json
import time

import httpx

from tests.checkout.support import card_form, create_session, token_of
from tests.harness import TLS
from tests.payments.support import AUTHENTICATE, GENERIC_DECLINE, SUCCEEDS, create_payment


def _log_after(web, request_ids: list[str], timeout: float = 5) -> str:
    """The server writes its request line just after the response leaves; wait for all of them."""
    deadline = time.monotonic() + timeout
    while True:
        text = web.process.log_text()
        if all(request_id in text for request_id in request_ids) or time.monotonic() > deadline:
            return text
        time.sleep(0.05)


def test_no_checkout_token_ever_reaches_the_log(shop, web):
    first = create_session(shop, create_payment(shop)["id"])
    second = create_session(shop, create_payment(shop)["id"])
    url = first["checkout_url"]
    with httpx.Client(verify=TLS) as browser:  # keeps cookies, as a browser does across the bank's page
        responses = [
            browser.get(url),
            browser.post(url, data=card_form(GENERIC_DECLINE)),
            browser.post(url, data=card_form(AUTHENTICATE)),
        ]
        bank_page = responses[-1].headers["location"]
        responses.append(browser.post(bank_page, data={"decision": "approve"}))
        returned_to = responses[-1].headers["location"]
        assert token_of(first) not in returned_to  # the return address carries no credential
        responses.append(browser.get(returned_to))  # the return to the page
        responses.append(browser.get(url))  # spent
        responses.append(browser.get(f"{second['checkout_url']}/cancel"))
        responses.append(browser.post(second["checkout_url"], data=card_form(SUCCEEDS)))
        responses.append(browser.get(second["checkout_url"] + "x"))  # a wrong token
    request_ids = [response.headers["Request-Id"] for response in responses]

    log = _log_after(web, request_ids)
    for checkout in (first, second):
        token = token_of(checkout)
        assert token not in log
        assert token[:16] not in log
    routes = [
        entry["route"]
        for line in log.splitlines()
        if line.startswith("{")
        for entry in [json.loads(line)]
        if entry.get("event") == "request" and entry.get("request_id") in request_ids
    ]
    assert len(routes) == len(request_ids)
    assert set(routes) == {
        "/checkout/{token}",
        "/checkout/return/{checkout_session}",
        "/checkout/{token}/cancel",
        "/authenticate/{token}",
    }


def test_the_payment_and_its_events_never_hold_the_checkout_token(shop, db):
    payment = create_payment(shop)
    checkout = create_session(shop, payment["id"])
    with httpx.Client(verify=TLS) as browser:
        assert browser.post(checkout["checkout_url"], data=card_form(AUTHENTICATE)).status_code == 303
    token = token_of(checkout)
    stored = shop.get(f"/v1/payment-intents/{payment['id']}").json()
    assert stored["status"] == "requires_action"
    assert token not in json.dumps(stored)
    events = shop.get("/v1/events", params={"limit": 100}).json()
    assert token not in json.dumps(events)
    for table in ("payment_intents", "events", "checkout_sessions", "operations"):
        dump = db.execute(f"SELECT coalesce(string_agg(t::text, ' '), '') FROM {table} t").fetchone()[0]
        assert token not in dump, table


def test_a_spent_or_revoked_link_opens_nothing(shop):
    paid = create_session(shop, create_payment(shop)["id"])
    assert httpx.post(paid["checkout_url"], data=card_form(SUCCEEDS), verify=TLS).status_code == 303
    revoked = create_session(shop, create_payment(shop)["id"])
    assert shop.post(f"/v1/checkout-sessions/{revoked['id']}/expire").status_code == 200
    for checkout in (paid, revoked):
        page = httpx.get(checkout["checkout_url"], verify=TLS)
        assert page.status_code == 410
        assert "<form" not in page.text and checkout["title"] not in page.text
    # the revoked one takes no card either
    assert httpx.post(revoked["checkout_url"], data=card_form(SUCCEEDS), verify=TLS).status_code == 410
