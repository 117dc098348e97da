"""An onboarding link opens once (CONVENTIONS.md §13, issue 30.3): the first open spends it, the page goes
on in that browser's own short session (a reload, the form's post), and any other open answers 410 with
the page that says to ask for a new link, changing nothing."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import httpx

from tests.connect.support import ONBOARDING_FORM, create_account, onboarding_url
from tests.harness import TLS
from tests.payments.support import event_types


def link_row(db: Any, account_id: str) -> Any:
    """The stored link whole, whatever its columns: to see that a refused open changed nothing."""
    return db.execute(
        "SELECT to_jsonb(l) FROM onboarding_links l WHERE connected_account_id = %s", (account_id,)
    ).fetchone()[0]


def assert_hosted_page(answer: httpx.Response) -> None:
    assert "default-src 'none'" in answer.headers["content-security-policy"]
    assert "script-src" not in answer.headers["content-security-policy"]
    assert answer.headers["referrer-policy"] == "no-referrer"


def test_the_first_open_spends_the_link_and_the_page_goes_on_in_its_own_session(api, db):
    account = create_account(api)
    url = onboarding_url(api, account["id"])
    with httpx.Client(timeout=30, verify=TLS) as browser:
        first = browser.get(url)
        assert first.status_code == 200 and "Tell us who you are" in first.text
        assert_hosted_page(first)
        cookie = first.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=lax" in cookie
        assert f"path={urlsplit(url).path.lower()}" in cookie
        reload = browser.get(url)
        assert reload.status_code == 200 and "Tell us who you are" in reload.text
        assert "set-cookie" not in reload.headers  # the same session goes on
        opened = link_row(db, account["id"])

        with httpx.Client(timeout=30, verify=TLS) as stranger:
            second = stranger.get(url)
            posted = stranger.post(url, data=ONBOARDING_FORM | {"first_name": "Mallory"})
        assert second.status_code == 410, second.text
        assert "already been opened" in second.text and "Ask the platform for a new link" in second.text
        assert_hosted_page(second)
        assert "set-cookie" not in second.headers
        assert posted.status_code == 410 and "already been opened" in posted.text
        assert link_row(db, account["id"]) == opened  # the 410s changed nothing
        read = api.get(f"/v1/connected-accounts/{account['id']}").json()
        assert read["payouts_enabled"] is False
        assert event_types(api, account["id"]) == ["connected_account.created"]

        without_agreement = {name: value for name, value in ONBOARDING_FORM.items() if name != "accept_tos"}
        mistake = browser.post(url, data=without_agreement)
        assert mistake.status_code == 400 and 'role="alert"' in mistake.text  # the form again, same session
        done = browser.post(url, data=ONBOARDING_FORM)
        assert done.status_code == 200 and "You are set up" in done.text
        assert browser.get(url).status_code == 410  # submitted: used up, in its own browser too

    assert api.get(f"/v1/connected-accounts/{account['id']}").json()["payouts_enabled"] is True


def test_a_first_open_by_the_forms_post_also_spends_the_link(api):
    account = create_account(api)
    url = onboarding_url(api, account["id"])
    with httpx.Client(timeout=30, verify=TLS) as browser:
        mistake = browser.post(url, data={"first_name": "Ada"})
        assert mistake.status_code == 400 and "set-cookie" in mistake.headers
        assert httpx.get(url, timeout=30, verify=TLS).status_code == 410
        assert browser.post(url, data=ONBOARDING_FORM).status_code == 200


def test_the_page_session_outlives_the_links_five_minutes_for_thirty(api):
    account = create_account(api)
    url = onboarding_url(api, account["id"])
    with httpx.Client(timeout=30, verify=TLS) as browser:
        assert browser.get(url).status_code == 200
        api.post("/v1/test-helpers/clock/advance", json={"seconds": 10 * 60})
        assert browser.get(url).status_code == 200  # opened in time: the session goes on
        api.post("/v1/test-helpers/clock/advance", json={"seconds": 21 * 60})
        late = browser.post(url, data=ONBOARDING_FORM)
        assert late.status_code == 410 and "expired" in late.text
    assert api.get(f"/v1/connected-accounts/{account['id']}").json()["payouts_enabled"] is False


def test_the_cookie_is_secure_where_the_service_is_served_over_https(api):
    url = onboarding_url(api, create_account(api)["id"])
    # the test server trusts its loopback proxy's X-Forwarded-Proto, as behind a TLS-terminating proxy
    first = httpx.get(url, headers={"X-Forwarded-Proto": "https"}, timeout=30, verify=TLS)
    assert first.status_code == 200
    assert "secure" in [part.strip().lower() for part in first.headers["set-cookie"].split(";")]
