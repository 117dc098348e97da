"""A merchant's consent link and activation link open once (CONVENTIONS.md §13, issue 30.3): the first
open spends the link, its page goes on in that browser's own short session, and any other open answers
410 with the page that says to get a new link, changing nothing."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import httpx

from tests.harness import TLS
from tests.merchants.support import (
    REDIRECT_URI,
    RETURN_URL,
    approve,
    business_form,
    connect,
    decide,
    redirect_params,
    start_connection,
)
from tests.payments.support import event_types


def stored(db: Any, table: str, installation_id: str) -> Any:
    """The tenant's rows of `table` whole, whatever their columns: to see that a refusal changed nothing."""
    return db.execute(
        f"SELECT jsonb_agg(to_jsonb(t) ORDER BY t.id) FROM {table} t WHERE installation_id = %s",
        (installation_id,),
    ).fetchone()[0]


def assert_opened_elsewhere(answer: httpx.Response) -> None:
    assert answer.status_code == 410, answer.text
    assert "already been opened" in answer.text and "get a new one" in answer.text
    assert "default-src 'none'" in answer.headers["content-security-policy"]
    assert "set-cookie" not in answer.headers and "location" not in answer.headers


def test_a_consent_link_opens_once_and_its_page_goes_on_in_its_own_session(platform, db):
    started = start_connection(platform)
    installation = platform.keys.installation_id
    with httpx.Client(timeout=30, verify=TLS) as browser:
        first = browser.get(started.url)
        assert first.status_code == 200 and "Connect your business to" in first.text
        cookie = first.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=lax" in cookie and "path=/oauth/authorize" in cookie
        assert "form-action 'self' https://platform.example" in first.headers["content-security-policy"]
        assert browser.get(started.url).status_code == 200  # a reload
        before = (stored(db, "merchant_connections", installation), stored(db, "merchants", installation))

        with httpx.Client(timeout=30, verify=TLS) as stranger:
            assert_opened_elsewhere(stranger.get(started.url))
            assert_opened_elsewhere(decide(started.url, business_form(business_name="Mallory"), stranger))
        after = (stored(db, "merchant_connections", installation), stored(db, "merchants", installation))
        assert after == before  # the 410s changed nothing
        merchant = platform.get("/v1/merchants").json()["data"][0]
        assert merchant["consent"]["status"] == "pending"
        assert event_types(platform, merchant["id"]) == ["merchant.created"]

        mistake = decide(started.url, business_form(business_name=" "), browser)
        assert mistake.status_code == 400 and "business name" in mistake.text
        approve(started, browser)  # the form's post works in the session: a code for the application
    named = platform.get(f"/v1/merchants/{merchant['id']}").json()["business_profile"]["name"]
    assert named == "Luigi's Pizzeria"


def test_two_consent_links_in_one_browser_keep_a_session_each(platform):
    first, second = start_connection(platform), start_connection(platform)
    with httpx.Client(timeout=30, verify=TLS) as browser:
        assert browser.get(first.url).status_code == 200
        assert browser.get(second.url).status_code == 200  # the same path, another cookie
        assert browser.get(first.url).status_code == 200
        assert redirect_params(decide(first.url, {"decision": "deny"}, browser))["error"] == "access_denied"
        location = decide(second.url, business_form(), browser).headers["location"]
        assert location.startswith(REDIRECT_URI + "?code=")


def test_an_activation_link_opens_once_and_its_page_goes_on_in_its_own_session(platform, db):
    merchant = connect(platform, leave_requirement_due="yes")
    created = platform.post(
        f"/v1/merchants/{merchant['id']}/onboarding-sessions", json={"return_url": RETURN_URL}
    )
    url = created.json()["url"]
    installation = platform.keys.installation_id
    with httpx.Client(timeout=30, verify=TLS) as browser:
        first = browser.get(url)
        assert first.status_code == 200 and "A bank account to receive payouts" in first.text
        assert f"path={urlsplit(url).path.lower()}" in first.headers["set-cookie"].lower()
        assert browser.get(url).status_code == 200  # a reload
        before = stored(db, "merchant_onboarding_sessions", installation)

        with httpx.Client(timeout=30, verify=TLS) as stranger:
            assert_opened_elsewhere(stranger.get(url))
            assert_opened_elsewhere(stranger.post(url, data={"bank_account": "000123456789"}))
        assert stored(db, "merchant_onboarding_sessions", installation) == before
        due = platform.get(f"/v1/merchants/{merchant['id']}").json()["requirements"]["currently_due"]
        assert due == ["external_account"]

        done = browser.post(url, data={"bank_account": "000123456789"}, follow_redirects=False)
        assert done.status_code == 303 and done.headers["location"] == RETURN_URL
    assert platform.get(f"/v1/merchants/{merchant['id']}").json()["requirements"]["currently_due"] == []
