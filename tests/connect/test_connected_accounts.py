"""Connected accounts over HTTP: creation, reading, requirements, single-use onboarding links (and
test_single_use_links.py), balance."""

from __future__ import annotations

import httpx

from tests.connect.support import (
    GOOD_BANK_ACCOUNT,
    create_account,
    onboarding_url,
    submit_onboarding,
)
from tests.harness import TLS, add_key
from tests.helpers import assert_error, count_rows
from tests.payments.support import event_types

DUE_AT_START = ["individual.first_name", "individual.last_name", "individual.dob", "tos_acceptance"]


def test_a_new_courier_can_receive_transfers_but_not_payouts_until_onboarded(api):
    account = create_account(api, "courier", display_name="Ada's bikes", metadata={"courier": "42"})
    assert account["object"] == "connected_account" and account["id"].startswith("acct_")
    assert (account["kind"], account["livemode"], account["display_name"]) == (
        "courier",
        False,
        "Ada's bikes",
    )
    assert account["external_account"] == {"object": "bank_account", "bank_last4": GOOD_BANK_ACCOUNT[-4:]}
    assert "account_number" not in str(account) and GOOD_BANK_ACCOUNT not in str(account)
    assert account["capabilities"] == {"transfers": "active", "payouts": "pending"}
    assert account["payouts_enabled"] is False and account["details_submitted"] is False
    assert account["requirements"]["currently_due"] == DUE_AT_START
    assert account["requirements"]["disabled_reason"] == "requirements.currently_due"
    assert api.get(f"/v1/connected-accounts/{account['id']}").json() == account
    assert event_types(api, account["id"]) == ["connected_account.created"]


def test_the_onboarding_page_collects_what_is_due_and_reading_the_account_shows_it(api):
    account = create_account(api, "driver")
    url = onboarding_url(api, account["id"])
    with httpx.Client(
        timeout=30, verify=TLS
    ) as browser:  # keeps the page session's cookie, as a browser does
        page = browser.get(url)
        assert page.status_code == 200
        assert "Tell us who you are" in page.text and GOOD_BANK_ACCOUNT[-4:] in page.text
        assert "<script" not in page.text
        assert "default-src 'none'" in page.headers["Content-Security-Policy"]
        assert page.headers["Referrer-Policy"] == "no-referrer"

        done = submit_onboarding(url, browser)
    assert done.status_code == 200 and "You are set up" in done.text
    read = api.get(f"/v1/connected-accounts/{account['id']}").json()
    assert read["payouts_enabled"] is True and read["details_submitted"] is True
    assert read["capabilities"] == {"transfers": "active", "payouts": "active"}
    requirements = api.get(f"/v1/connected-accounts/{account['id']}/requirements").json()
    assert requirements["object"] == "connected_account_requirements"
    assert requirements["currently_due"] == [] and requirements["past_due"] == []
    assert requirements["eventually_due"] == ["individual.verification.document"]
    assert event_types(api, account["id"]) == ["connected_account.created", "connected_account.updated"]


def test_an_onboarding_link_works_once(api):
    account = create_account(api)
    url = onboarding_url(api, account["id"])
    assert submit_onboarding(url).status_code == 200
    again = httpx.get(url, timeout=30, verify=TLS)
    assert again.status_code == 410 and "has been used" in again.text
    resubmitted = submit_onboarding(url, first_name="Mallory")
    assert resubmitted.status_code == 410
    assert api.get(f"/v1/connected-accounts/{account['id']}").json()["payouts_enabled"] is True


def test_a_mistake_on_the_form_keeps_the_link_and_changes_nothing(api):
    account = create_account(api)
    url = onboarding_url(api, account["id"])
    with httpx.Client(timeout=30, verify=TLS) as browser:
        for fields in ({"accept_tos": ""}, {"dob": "not a date"}, {"first_name": " "}, {"dob": "2030-01-01"}):
            data = {"first_name": "Ada", "last_name": "L", "dob": "1990-01-01"} | fields
            if fields.get("accept_tos") is None:
                data["accept_tos"] = "yes"
            else:
                data.pop("accept_tos")
            answer = browser.post(url, data=data)
            assert answer.status_code == 400 and 'role="alert"' in answer.text, fields
        read = api.get(f"/v1/connected-accounts/{account['id']}").json()
        assert read["requirements"]["currently_due"] == DUE_AT_START
        assert submit_onboarding(url, browser).status_code == 200  # the page session still works


def test_an_onboarding_link_expires_after_five_minutes_on_the_sandbox_clock(api):
    account = create_account(api)
    link = api.post(f"/v1/connected-accounts/{account['id']}/onboarding-links").json()
    assert link["expires_at"] - link["created"] in (299, 300, 301)
    api.post("/v1/test-helpers/clock/advance", json={"seconds": 301})
    assert httpx.get(link["url"], timeout=30, verify=TLS).status_code == 410
    assert submit_onboarding(link["url"]).status_code == 410
    assert api.get(f"/v1/connected-accounts/{account['id']}").json()["payouts_enabled"] is False


def test_unknown_onboarding_links_are_not_found(web):
    assert httpx.get(f"{web.base_url}/onboarding/nosuchtoken", timeout=30, verify=TLS).status_code == 404


def test_a_return_url_must_be_registered_exactly(api, db):
    account = create_account(api)
    refused = api.post(
        f"/v1/connected-accounts/{account['id']}/onboarding-links",
        json={"return_url": "https://evil.example/"},
    )
    assert_error(refused, 400, "url_not_registered", "return_url")
    assert count_rows(db, "onboarding_links", api.keys.installation_id) == 0


def test_bad_input_is_refused_and_writes_nothing(api, db):
    cases = [
        ({"kind": "pilot", "external_account": {"account_number": GOOD_BANK_ACCOUNT}}, "kind"),
        ({"kind": "courier"}, "external_account"),
        (
            {"kind": "courier", "external_account": {"account_number": "12"}},
            "external_account[account_number]",
        ),
        ({"kind": "courier", "external_account": {"account_number": GOOD_BANK_ACCOUNT}, "ssn": "1"}, "ssn"),
    ]
    for body, param in cases:
        answer = api.post("/v1/connected-accounts", json=body)
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"]["param"] == param, answer.text
    assert count_rows(db, "connected_accounts", api.keys.installation_id) == 0


def test_another_installations_account_looks_like_one_that_does_not_exist(api, make_api):
    foreign = create_account(make_api())
    for path in ("", "/requirements", "/balance"):
        assert_error(
            api.get(f"/v1/connected-accounts/{foreign['id']}{path}"),
            404,
            "resource_missing",
            "connected_account",
        )
    assert_error(
        api.post(f"/v1/connected-accounts/{foreign['id']}/onboarding-links"),
        404,
        "resource_missing",
        "connected_account",
    )
    assert foreign["id"] not in [item["id"] for item in api.get("/v1/connected-accounts").json()["data"]]


def test_accounts_are_listed_newest_first_and_filtered_by_kind(api):
    courier = create_account(api, "courier")
    driver = create_account(api, "driver")
    listed = api.get("/v1/connected-accounts").json()
    assert [item["id"] for item in listed["data"]] == [driver["id"], courier["id"]]
    drivers = api.get("/v1/connected-accounts", params={"kind": "driver"}).json()["data"]
    assert [item["id"] for item in drivers] == [driver["id"]]
    first = api.get("/v1/connected-accounts", params={"limit": 1}).json()
    assert first["has_more"] is True
    rest = api.get("/v1/connected-accounts", params={"cursor": first["next_cursor"]}).json()
    assert [item["id"] for item in rest["data"]] == [courier["id"]]


def test_a_new_account_has_an_empty_balance(api):
    account = create_account(api)
    balance = api.get(f"/v1/connected-accounts/{account['id']}/balance").json()
    assert balance == {
        "object": "balance",
        "livemode": False,
        "connected_account": account["id"],
        "available": [],
        "pending": [],
    }


def test_connected_account_routes_need_the_accounts_scope(web, api, bridge):
    payments_only = add_key(bridge, api.keys.tenant, ("payments:write",))
    reader = add_key(bridge, api.keys.tenant, ("accounts:read",))
    account = create_account(api)
    with httpx.Client(
        base_url=web.base_url, headers={"Authorization": f"Bearer {payments_only}"}, verify=TLS
    ) as client:
        assert_error(client.get("/v1/connected-accounts"), 403, "insufficient_scope")
    with httpx.Client(
        base_url=web.base_url, headers={"Authorization": f"Bearer {reader}"}, verify=TLS
    ) as client:
        assert client.get(f"/v1/connected-accounts/{account['id']}").status_code == 200
        denied = client.post("/v1/connected-accounts", json={"kind": "courier"})
        assert_error(denied, 403, "insufficient_scope")
