"""What merchant tests share: registering redirect URIs, PKCE pairs, and the OAuth flow over HTTP as an
application and a merchant's browser walk it."""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx

from moneyrail.installations import service as installations
from tests.harness import TLS, AsyncBridge, TenantKeys

REDIRECT_URI = "https://platform.example/oauth/callback"
RETURN_URL = "https://platform.example/merchants/activated"


def register_redirect_uris(
    bridge: AsyncBridge,
    keys: TenantKeys,
    redirect_uris: tuple[str, ...] = (REDIRECT_URI,),
    return_urls: tuple[str, ...] = (RETURN_URL,),
) -> None:
    async def work(session: Any) -> None:
        await installations.update_environment_settings(
            session, keys.tenant, oauth_redirect_uris=list(redirect_uris), return_urls=list(return_urls)
        )

    bridge.in_unit_of_work(work)


@dataclass(frozen=True)
class Pkce:
    verifier: str
    challenge: str


def pkce() -> Pkce:
    verifier = secrets.token_urlsafe(48)  # 64 characters of the RFC 7636 alphabet
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return Pkce(verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode())


@dataclass(frozen=True)
class Started:
    connection: dict[str, Any]
    pkce: Pkce
    state: str

    @property
    def url(self) -> str:
        url: str = self.connection["url"]
        return url


def start_connection(api: httpx.Client, redirect_uri: str = REDIRECT_URI, **overrides: Any) -> Started:
    verifier = pkce()
    state = secrets.token_urlsafe(16)
    body = {
        "redirect_uri": redirect_uri,
        "code_challenge": verifier.challenge,
        "code_challenge_method": "S256",
        "state": state,
    } | overrides
    response = api.post("/v1/merchant-connections", json=body)
    assert response.status_code == 200, response.text
    return Started(response.json(), verifier, state)


def restart_consent(api: httpx.Client, merchant_id: str, redirect_uri: str = REDIRECT_URI) -> Started:
    verifier = pkce()
    state = secrets.token_urlsafe(16)
    response = api.post(
        f"/v1/merchants/{merchant_id}/consent-sessions",
        json={
            "redirect_uri": redirect_uri,
            "code_challenge": verifier.challenge,
            "code_challenge_method": "S256",
            "state": state,
        },
    )
    assert response.status_code == 200, response.text
    return Started(response.json(), verifier, state)


def business_form(decision: str = "approve", **fields: str) -> dict[str, str]:
    return {
        "decision": decision,
        "business_name": "Luigi's Pizzeria",
        "business_url": "https://luigi.example",
        "support_email": "help@luigi.example",
        **fields,
    }


def decide(url: str, form: dict[str, str], browser: httpx.Client | None = None) -> httpx.Response:
    """The merchant's browser posts the consent form (its action is the page's own address): `browser`
    (a client that keeps the page session's cookie, after it opened the link), or a fresh one whose
    post is the link's first open."""
    if browser is not None:
        return browser.post(url, data=form, follow_redirects=False)
    return httpx.post(url, data=form, follow_redirects=False, timeout=30, verify=TLS)


def redirect_params(response: httpx.Response) -> dict[str, str]:
    assert response.status_code in (302, 303), response.text
    location = response.headers["location"]
    return {key: values[0] for key, values in parse_qs(urlsplit(location).query).items()}


def approve(started: Started, browser: httpx.Client | None = None, **fields: str) -> str:
    response = decide(started.url, business_form(**fields), browser)
    params = redirect_params(response)
    assert response.headers["location"].startswith(REDIRECT_URI + "?")
    assert params["state"] == started.state
    return params["code"]


def exchange(
    api: httpx.Client,
    code: str,
    verifier: str,
    redirect_uri: str = REDIRECT_URI,
    *,
    key: str | None = None,
    **extra: str,
) -> httpx.Response:
    """The application's server at the token endpoint: form-encoded, the secret key as Bearer."""
    return httpx.post(
        f"{api.base_url}/oauth/token",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "code_verifier": verifier,
            "redirect_uri": redirect_uri,
            **extra,
        },
        headers={"Authorization": f"Bearer {key or api.headers['authorization'].split()[1]}"},
        timeout=30,
        verify=TLS,
    )


def connect(api: httpx.Client, **fields: str) -> dict[str, Any]:
    """The whole flow: connection, approval, code exchange. Answers the merchant as the API reads it."""
    started = start_connection(api)
    code = approve(started, **fields)
    token = exchange(api, code, started.pkce.verifier)
    assert token.status_code == 200, token.text
    merchant: dict[str, Any] = api.get(f"/v1/merchants/{token.json()['merchant']}").json()
    return merchant


def assert_oauth_error(response: httpx.Response, status: int, error: str) -> dict[str, Any]:
    """RFC 6749 §5.2: `{"error", "error_description"}`, not the API's envelope."""
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert body["error"] == error, body
    assert set(body) <= {"error", "error_description", "error_uri", "state"}, body
    assert response.headers["cache-control"] == "no-store"
    return body


def form_action(page_html: str) -> str:
    match = re.search(r'<form method="post" action="([^"]+)"', page_html)
    assert match is not None, page_html
    return match.group(1).replace("&amp;", "&")
