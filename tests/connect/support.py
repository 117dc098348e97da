"""What connected-account tests share: creating accounts and onboarding them over the hosted page."""

from __future__ import annotations

from typing import Any

import httpx

from tests.harness import TLS

CLOSED_BANK_ACCOUNT = "000111111116"
GOOD_BANK_ACCOUNT = "DE89370400440532013000"


def create_account(api: httpx.Client, kind: str = "courier", **fields: Any) -> dict[str, Any]:
    body = {"kind": kind, "external_account": {"account_number": GOOD_BANK_ACCOUNT}} | fields
    response = api.post("/v1/connected-accounts", json=body)
    assert response.status_code == 200, response.text
    created: dict[str, Any] = response.json()
    return created


def onboarding_url(api: httpx.Client, account_id: str, **fields: Any) -> str:
    response = api.post(f"/v1/connected-accounts/{account_id}/onboarding-links", json=fields)
    assert response.status_code == 200, response.text
    url: str = response.json()["url"]
    return url


ONBOARDING_FORM = {"first_name": "Ada", "last_name": "Lovelace", "dob": "1990-12-10", "accept_tos": "yes"}


def submit_onboarding(url: str, browser: httpx.Client | None = None, **fields: str) -> httpx.Response:
    """The form's post: from `browser` (a client that keeps the page session's cookie), or as the
    link's first open from a fresh one."""
    if browser is not None:
        return browser.post(url, data=ONBOARDING_FORM | fields)
    return httpx.post(url, data=ONBOARDING_FORM | fields, timeout=30, verify=TLS)


def onboarded_account(api: httpx.Client, kind: str = "courier", **fields: Any) -> dict[str, Any]:
    account = create_account(api, kind, **fields)
    assert submit_onboarding(onboarding_url(api, account["id"])).status_code == 200
    return account
