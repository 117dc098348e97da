"""The operator CLI, run as a real process against the test database."""

from __future__ import annotations

import json
import subprocess

import httpx

from tests.harness import TLS, run_moneyrail
from tests.helpers import refused_within_key_cache_lifetime


def moneyrail(servers, *args: str) -> subprocess.CompletedProcess[str]:
    return run_moneyrail(servers, *args)


def test_an_operator_creates_an_installation_and_a_scoped_key_that_works_over_http(servers, web):
    created = moneyrail(
        servers, "installations", "create", "--name", "Acme Market", "--kind", "platform", "--json"
    )
    assert created.returncode == 0, created.stderr
    installation = json.loads(created.stdout)
    assert installation["id"].startswith("inst_") and installation["kind"] == "platform"

    issued = moneyrail(
        servers,
        "keys",
        "create",
        "-i",
        installation["id"],
        "--scope",
        "customers:write",
        "--scope",
        "account:read",
        "--name",
        "backend",
        "--json",
    )
    assert issued.returncode == 0, issued.stderr
    key = json.loads(issued.stdout)
    assert key["secret"].startswith("sk_test_") and key["scopes"] == ["account:read", "customers:write"]

    headers = {"Authorization": f"Bearer {key['secret']}"}
    assert (
        httpx.get(f"{web.base_url}/v1/account", headers=headers, verify=TLS).json()["id"]
        == installation["id"]
    )

    listed = json.loads(moneyrail(servers, "keys", "list", "-i", installation["id"], "--json").stdout)
    assert [k["id"] for k in listed] == [key["id"]]
    assert "secret" not in listed[0] and key["secret"] not in json.dumps(listed)

    revoked = moneyrail(servers, "keys", "revoke", key["id"])
    assert revoked.returncode == 0 and "revoked" in revoked.stdout
    # the web process remembers keys for a few seconds (key_cache_seconds): refused within that lifetime
    assert refused_within_key_cache_lifetime(f"{web.base_url}/v1/account", headers).status_code == 401


def test_human_output_is_readable_and_shows_a_live_key_once(servers):
    installation = json.loads(
        moneyrail(servers, "installations", "create", "--name", "Shop", "--json").stdout
    )
    issued = moneyrail(servers, "keys", "create", "-i", installation["id"], "--env", "live", "--scope", "*")
    assert issued.returncode == 0, issued.stderr
    assert "shown once" in issued.stdout and "sk_live_" in issued.stdout
    listed = moneyrail(servers, "keys", "list", "-i", installation["id"])
    assert "live" in listed.stdout and "sk_live_" not in listed.stdout


def test_settings_are_set_per_environment(servers, web):
    installation = json.loads(
        moneyrail(servers, "installations", "create", "--name", "Shop", "--json").stdout
    )
    updated = moneyrail(
        servers,
        "settings",
        "set",
        "-i",
        installation["id"],
        "--env",
        "sandbox",
        "--checkout",
        "--recurring",
        "--return-url",
        "https://shop.example/ok",
        "--return-url",
        "https://shop.example/cancel",
        "--commission-bps",
        "250",
        "--commission-fixed",
        "30",
        "--json",
    )
    assert updated.returncode == 0, updated.stderr
    sandbox = json.loads(updated.stdout)
    assert sandbox["checkout_enabled"] and sandbox["recurring_enabled"]
    assert sandbox["return_urls"] == ["https://shop.example/ok", "https://shop.example/cancel"]
    assert (sandbox["commission_basis_points"], sandbox["commission_fixed_amount"]) == (250, 30)
    live = json.loads(
        moneyrail(servers, "settings", "show", "-i", installation["id"], "--env", "live", "--json").stdout
    )
    assert live["checkout_enabled"] is False and live["return_urls"] == []


def test_bad_operator_input_is_refused_with_a_message_and_changes_nothing(servers):
    installation = json.loads(
        moneyrail(servers, "installations", "create", "--name", "Shop", "--json").stdout
    )
    unknown_scope = moneyrail(servers, "keys", "create", "-i", installation["id"], "--scope", "cats:write")
    assert unknown_scope.returncode == 1 and "unknown scopes: cats:write" in unknown_scope.stderr
    missing = moneyrail(servers, "keys", "create", "-i", "inst_nope", "--scope", "*")
    assert missing.returncode == 1 and "No installation" in missing.stderr
    bad_commission = moneyrail(
        servers, "settings", "set", "-i", installation["id"], "--commission-bps", "10001"
    )
    assert bad_commission.returncode == 1 and "basis points" in bad_commission.stderr
    bad_url = moneyrail(
        servers, "settings", "set", "-i", installation["id"], "--return-url", "javascript:alert(1)"
    )
    assert bad_url.returncode == 1
    bad_kind = moneyrail(servers, "installations", "create", "--name", "X", "--kind", "bank")
    assert bad_kind.returncode == 1 and "kind must be" in bad_kind.stderr
    keys = json.loads(moneyrail(servers, "keys", "list", "-i", installation["id"], "--json").stdout)
    assert keys == []
    settings = json.loads(moneyrail(servers, "settings", "show", "-i", installation["id"], "--json").stdout)
    assert settings["commission_basis_points"] == 0 and settings["return_urls"] == []
