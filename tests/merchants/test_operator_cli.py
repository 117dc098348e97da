"""The operator registers OAuth redirect URIs per environment, like return URLs, and the API honours them."""

from __future__ import annotations

import json

from tests.helpers import assert_error
from tests.installations.test_cli import moneyrail
from tests.merchants.support import pkce


def connection_body(redirect_uri: str) -> dict[str, str]:
    return {
        "redirect_uri": redirect_uri,
        "code_challenge": pkce().challenge,
        "code_challenge_method": "S256",
        "state": "s",
    }


def test_oauth_redirect_uris_are_registered_per_environment_by_the_operator(servers, api):
    installation = api.keys.installation_id
    uri = "https://platform.example/oauth/callback"
    assert_error(
        api.post("/v1/merchant-connections", json=connection_body(uri)),
        400,
        "url_not_registered",
        "redirect_uri",
    )
    done = moneyrail(
        servers,
        "settings",
        "set",
        "-i",
        installation,
        "--env",
        "sandbox",
        "--oauth-redirect-uri",
        uri,
        "--json",
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["oauth_redirect_uris"] == [uri]
    assert api.post("/v1/merchant-connections", json=connection_body(uri)).status_code == 200
    live = json.loads(
        moneyrail(servers, "settings", "show", "-i", installation, "--env", "live", "--json").stdout
    )
    assert live["oauth_redirect_uris"] == []  # the live environment registers its own

    refused = moneyrail(
        servers, "settings", "set", "-i", installation, "--oauth-redirect-uri", "javascript:alert(1)"
    )
    assert refused.returncode != 0
    shown = json.loads(moneyrail(servers, "settings", "show", "-i", installation, "--json").stdout)
    assert shown["oauth_redirect_uris"] == [uri]
