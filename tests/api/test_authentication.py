"""CONVENTIONS.md §2: bearer keys, scopes, publishable keys on server routes."""

from __future__ import annotations

import httpx

from tests.harness import TLS, add_key
from tests.helpers import assert_error, count_rows, refused_within_key_cache_lifetime


def test_a_request_without_a_key_is_refused(web):
    response = httpx.get(f"{web.base_url}/v1/account", verify=TLS)
    error = assert_error(response, 401, "authentication_required")
    assert error["type"] == "authentication_error"


def test_a_non_bearer_authorization_is_refused(web, tenant):
    response = httpx.get(
        f"{web.base_url}/v1/account", headers={"Authorization": f"Basic {tenant.secret}"}, verify=TLS
    )
    assert_error(response, 401, "authentication_required")


def test_an_unknown_key_is_refused_and_not_echoed(web):
    bogus = "sk_test_" + "x" * 32
    response = httpx.get(
        f"{web.base_url}/v1/account", headers={"Authorization": f"Bearer {bogus}"}, verify=TLS
    )
    assert_error(response, 401, "invalid_api_key")
    assert bogus not in response.text


def test_a_publishable_key_cannot_call_a_server_route(web, tenant, db):
    response = httpx.post(
        f"{web.base_url}/v1/customers",
        json={"email": "a@example.com"},
        headers={"Authorization": f"Bearer {tenant.publishable_key}"},
        verify=TLS,
    )
    assert_error(response, 401, "invalid_api_key")
    assert count_rows(db, "customers", tenant.installation_id) == 0


def test_a_revoked_key_stops_working_within_the_key_cache_lifetime(web, tenant, bridge):
    """The web process remembers keys for `key_cache_seconds` (5 s by default): a key revoked by another
    process (here the test's, as the CLI would) is refused within that lifetime, never later."""
    from moneyrail.installations import service

    headers = {"Authorization": f"Bearer {tenant.secret}"}
    assert (
        httpx.get(f"{web.base_url}/v1/account", headers=headers, verify=TLS).status_code == 200
    )  # now remembered

    async def revoke(session):
        await service.revoke_api_key(session, tenant.key_id)

    bridge.in_unit_of_work(revoke)
    assert_error(
        refused_within_key_cache_lifetime(f"{web.base_url}/v1/account", headers), 401, "invalid_api_key"
    )


def test_a_key_without_the_route_scope_is_forbidden_and_writes_nothing(web, tenant, bridge, db):
    reader = add_key(bridge, tenant.tenant, ("customers:read",))
    response = httpx.post(
        f"{web.base_url}/v1/customers",
        json={"email": "a@example.com"},
        headers={"Authorization": f"Bearer {reader}"},
        verify=TLS,
    )
    error = assert_error(response, 403, "insufficient_scope")
    assert error["type"] == "permission_error"
    assert "customers:write" in error["message"]
    assert count_rows(db, "customers", tenant.installation_id) == 0


def test_write_scope_implies_read_and_star_grants_all(web, tenant, bridge):
    writer = add_key(bridge, tenant.tenant, ("customers:write",))
    headers = {"Authorization": f"Bearer {writer}"}
    assert httpx.get(f"{web.base_url}/v1/customers", headers=headers, verify=TLS).status_code == 200
    assert httpx.post(f"{web.base_url}/v1/customers", json={}, headers=headers, verify=TLS).status_code == 200
    # customers:write does not reach another area
    assert_error(
        httpx.get(f"{web.base_url}/v1/account", headers=headers, verify=TLS), 403, "insufficient_scope"
    )
    everything = add_key(bridge, tenant.tenant, ("*",))
    assert httpx.get(
        f"{web.base_url}/v1/account", headers={"Authorization": f"Bearer {everything}"}, verify=TLS
    ).is_success


def test_read_scope_does_not_imply_write(web, tenant, bridge):
    reader = add_key(bridge, tenant.tenant, ("customers:read",))
    headers = {"Authorization": f"Bearer {reader}"}
    assert httpx.get(f"{web.base_url}/v1/customers", headers=headers, verify=TLS).status_code == 200
    assert_error(
        httpx.post(f"{web.base_url}/v1/customers", json={}, headers=headers, verify=TLS),
        403,
        "insufficient_scope",
    )
