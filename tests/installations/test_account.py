"""GET /v1/account: the installation and its environment as the key sees them."""

from __future__ import annotations


def test_account_shows_the_installation_and_its_sandbox_settings(api):
    account = api.get("/v1/account").json()
    assert account["object"] == "account"
    assert account["id"] == api.keys.installation_id
    assert account["livemode"] is False
    assert account["kind"] == "direct"
    assert account["publishable_key"] == api.keys.publishable_key
    assert account["publishable_key"].startswith("pk_test_")
    assert account["settings"] == {
        "checkout_enabled": False,
        "recurring_enabled": False,
        "commission_basis_points": 0,
        "commission_fixed_amount": 0,
    }


def test_a_platform_installation_says_so(make_api):
    assert make_api(kind="platform").get("/v1/account").json()["kind"] == "platform"
