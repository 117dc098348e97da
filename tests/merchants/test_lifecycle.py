"""After the connection: revoking, restarting consent, requirements and the activation page, and the
payments a merchant may take (spec 4.D; CONVENTIONS.md §13)."""

from __future__ import annotations

import httpx

from tests.harness import TLS
from tests.helpers import assert_error, count_rows
from tests.merchants.support import (
    RETURN_URL,
    approve,
    assert_oauth_error,
    business_form,
    connect,
    decide,
    exchange,
    redirect_params,
    register_redirect_uris,
    restart_consent,
    start_connection,
)
from tests.payments.support import confirm, create_payment, event_types


def open_onboarding(api, merchant_id: str, return_url: str = RETURN_URL) -> httpx.Response:
    return api.post(f"/v1/merchants/{merchant_id}/onboarding-sessions", json={"return_url": return_url})


def test_revoking_ends_only_this_applications_access(platform, make_api, bridge):
    other_platform = make_api()
    register_redirect_uris(bridge, other_platform.keys)
    mine = connect(platform, business_name="Same Bakery")
    theirs = connect(other_platform, business_name="Same Bakery")  # the same business, another application
    assert mine["id"] != theirs["id"]

    revoked = platform.delete(f"/v1/merchants/{mine['id']}")
    assert revoked.status_code == 200, revoked.text
    body = revoked.json()
    assert body["connection_status"] == "revoked" and body["consent"]["status"] == "revoked"
    assert set(body["capabilities"].values()) == {"inactive"}
    assert body["requirements"]["disabled_reason"] == "consent.revoked"
    assert event_types(platform, mine["id"])[-1] == "merchant.revoked"
    assert other_platform.get(f"/v1/merchants/{theirs['id']}").json()["connection_status"] == "active"
    assert create_payment(other_platform, 1000, merchant=theirs["id"])["merchant"] == theirs["id"]

    assert_error(platform.delete(f"/v1/merchants/{mine['id']}"), 409, "resource_state_invalid")
    refused = platform.post(
        "/v1/payment-intents", json={"amount": 1000, "currency": "eur", "merchant": mine["id"]}
    )
    error = assert_error(refused, 400, "parameter_invalid", "merchant")
    assert "revoked" in error["message"]


def test_a_code_approved_before_a_revocation_no_longer_connects(platform):
    started = start_connection(platform)
    code = approve(started)
    merchant_id = platform.get("/v1/merchants").json()["data"][0]["id"]
    assert platform.delete(f"/v1/merchants/{merchant_id}").status_code == 200
    assert_oauth_error(exchange(platform, code, started.pkce.verifier), 400, "invalid_grant")
    assert platform.get(f"/v1/merchants/{merchant_id}").json()["connection_status"] == "revoked"


def test_consent_restarts_for_a_revoked_merchant_with_the_same_id(platform):
    merchant = connect(platform)
    platform.delete(f"/v1/merchants/{merchant['id']}")
    started = restart_consent(platform, merchant["id"])
    assert started.connection["object"] == "merchant_connection"
    assert platform.get(f"/v1/merchants/{merchant['id']}").json()["connection_status"] == "pending"
    code = approve(started, business_name="Luigi's Pizzeria, again")
    token = exchange(platform, code, started.pkce.verifier).json()
    assert token["merchant"] == merchant["id"]
    again = platform.get(f"/v1/merchants/{merchant['id']}").json()
    assert again["connection_status"] == "active"
    assert again["business_profile"]["name"] == "Luigi's Pizzeria, again"


def test_consent_restarts_for_a_denied_merchant_and_the_old_link_stops_working(platform):
    first = start_connection(platform)
    decide(first.url, {"decision": "deny"})
    merchant_id = platform.get("/v1/merchants").json()["data"][0]["id"]
    second = restart_consent(platform, merchant_id)
    third = restart_consent(platform, merchant_id)  # restarting a pending one: the earlier link ends
    assert httpx.get(second.url, timeout=30, verify=TLS).status_code == 410
    code = approve(third)
    assert exchange(platform, code, third.pkce.verifier).json()["merchant"] == merchant_id


def test_consent_does_not_restart_for_an_active_merchant(platform, db):
    merchant = connect(platform)
    before = count_rows(db, "merchant_connections", platform.keys.installation_id)
    started = platform.post(
        f"/v1/merchants/{merchant['id']}/consent-sessions",
        json={
            "redirect_uri": "https://platform.example/oauth/callback",
            "code_challenge": "a" * 43,
            "code_challenge_method": "S256",
            "state": "s",
        },
    )
    assert_error(started, 409, "resource_state_invalid")
    assert count_rows(db, "merchant_connections", platform.keys.installation_id) == before


def test_a_requirement_left_due_holds_payments_until_the_activation_page_is_completed(platform):
    merchant = connect(platform, leave_requirement_due="yes")
    assert merchant["connection_status"] == "active"
    assert merchant["capabilities"] == {
        "payments": "pending",
        "transfers": "active",
        "payouts": "pending",
        "refunds": "active",
    }
    assert merchant["requirements"] == {
        "currently_due": ["external_account"],
        "past_due": [],
        "disabled_reason": "requirements.currently_due",
    }
    refused = platform.post(
        "/v1/payment-intents", json={"amount": 1000, "currency": "eur", "merchant": merchant["id"]}
    )
    error = assert_error(refused, 400, "parameter_invalid", "merchant")
    assert "onboarding session" in error["message"]

    created = open_onboarding(platform, merchant["id"])
    assert created.status_code == 200, created.text
    session = created.json()
    assert session["object"] == "merchant_onboarding_session" and session["status"] == "open"
    assert session["merchant"] == merchant["id"] and session["return_url"] == RETURN_URL
    assert session["url"].startswith(f"{platform.base_url}/onboarding/merchants/")
    with httpx.Client(
        timeout=30, verify=TLS
    ) as browser:  # keeps the page session's cookie, as a browser does
        page = browser.get(session["url"])
        assert page.status_code == 200 and "A bank account to receive payouts" in page.text
        assert "<script" not in page.text and "default-src 'none'" in page.headers["content-security-policy"]

        wrong = browser.post(session["url"], data={"bank_account": "12ab"})
        assert wrong.status_code == 400 and "bank account number" in wrong.text
        done = browser.post(session["url"], data={"bank_account": "000123456789"}, follow_redirects=False)
        assert done.status_code == 303 and done.headers["location"] == RETURN_URL

    active = platform.get(f"/v1/merchants/{merchant['id']}").json()
    assert set(active["capabilities"].values()) == {"active"}
    assert active["requirements"]["currently_due"] == [] and active["requirements"]["disabled_reason"] is None
    assert create_payment(platform, 1000, merchant=merchant["id"])["merchant"] == merchant["id"]
    reused = httpx.get(session["url"], timeout=30, verify=TLS)
    assert reused.status_code == 410  # the link works once
    assert_error(open_onboarding(platform, merchant["id"]), 409, "resource_state_invalid")


def test_an_onboarding_session_needs_a_registered_return_url_and_an_active_merchant(platform, db):
    merchant = connect(platform, leave_requirement_due="yes")
    assert_error(
        open_onboarding(platform, merchant["id"], "https://evil.example/back"),
        400,
        "url_not_registered",
        "return_url",
    )
    assert count_rows(db, "merchant_onboarding_sessions", platform.keys.installation_id) == 0
    pending = start_connection(platform)
    decide(pending.url, business_form())
    pending_id = platform.get("/v1/merchants").json()["data"][0]["id"]
    assert_error(open_onboarding(platform, pending_id), 409, "resource_state_invalid")
    assert_error(
        open_onboarding(platform, "mer_000000000000000000000000"), 404, "resource_missing", "merchant"
    )


def test_an_onboarding_link_expires_on_the_sandbox_clock(platform):
    merchant = connect(platform, leave_requirement_due="yes")
    session = open_onboarding(platform, merchant["id"]).json()
    platform.post("/v1/test-helpers/clock/advance", json={"seconds": 30 * 60})
    assert httpx.get(session["url"], timeout=30, verify=TLS).status_code == 410
    posted = httpx.post(
        session["url"], data={"bank_account": "000123456789"}, follow_redirects=False, timeout=30, verify=TLS
    )
    assert posted.status_code == 410
    assert platform.get(f"/v1/merchants/{merchant['id']}").json()["requirements"]["currently_due"] == [
        "external_account"
    ]


def test_a_payment_for_an_active_merchant_records_it(platform):
    merchant = connect(platform)
    payment = create_payment(platform, 2500, merchant=merchant["id"])
    assert payment["merchant"] == merchant["id"]
    confirmed = confirm(platform, payment)
    assert confirmed.status_code == 200 and confirmed.json()["merchant"] == merchant["id"]
    assert platform.get(f"/v1/payment-intents/{payment['id']}").json()["merchant"] == merchant["id"]


def test_a_pending_or_unknown_merchant_cannot_take_payments(platform, db):
    started = start_connection(platform)
    redirect_params(decide(started.url, business_form()))  # approved, but the code is not exchanged
    pending_id = platform.get("/v1/merchants").json()["data"][0]["id"]
    before = count_rows(db, "payment_intents", platform.keys.installation_id)
    pending = platform.post(
        "/v1/payment-intents", json={"amount": 1000, "currency": "eur", "merchant": pending_id}
    )
    assert_error(pending, 400, "parameter_invalid", "merchant")
    unknown = platform.post(
        "/v1/payment-intents",
        json={"amount": 1000, "currency": "eur", "merchant": "mer_000000000000000000000000"},
    )
    assert_error(unknown, 400, "resource_missing", "merchant")
    assert count_rows(db, "payment_intents", platform.keys.installation_id) == before
