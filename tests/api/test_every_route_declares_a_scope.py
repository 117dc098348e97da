"""Every route of the app declares one scope, and the gate enforces it (CONVENTIONS.md §2).

The routes are read from the live /openapi.json, where each route's scope is its security requirement,
so a new route without a scope fails here whatever router it was added to.
"""

from __future__ import annotations

import re

import httpx
import pytest

from moneyrail.kit.scopes import AREAS, is_known_scope
from tests.harness import TLS, add_key
from tests.helpers import assert_error

PUBLIC_ROUTES = {
    ("get", "/healthz"),
    ("get", "/readyz"),
    # Stripe's webhooks carry no key of ours: each is authenticated by its Stripe-Signature instead
    ("post", "/processor/stripe/webhooks/{installation}/{environment}"),
}


@pytest.fixture(scope="module")
def operations(web):
    spec = httpx.get(f"{web.base_url}/openapi.json", verify=TLS).json()
    found = [
        (method, path, operation)
        for path, item in spec["paths"].items()
        for method, operation in item.items()
        if method in {"get", "post", "put", "patch", "delete"}
    ]
    assert len(found) >= 6, found  # the walk itself must see the app's routes
    return found


def _route_scope(operation) -> str | None:
    requirements = operation.get("security") or []
    scopes = [
        scope
        for requirement in requirements
        for scheme in ("ApiKey", "PublishableKey")
        for scope in requirement.get(scheme, [])
    ]
    assert len(scopes) <= 1, scopes
    return scopes[0] if scopes else None


def _is_client_side(operation) -> bool:
    return any("PublishableKey" in requirement for requirement in operation.get("security") or [])


def test_every_route_declares_exactly_one_known_scope_or_is_listed_public(operations):
    unscoped = {(method, path) for method, path, operation in operations if _route_scope(operation) is None}
    assert unscoped == PUBLIC_ROUTES
    for method, path, operation in operations:
        scope = _route_scope(operation)
        if scope is not None:
            assert is_known_scope(scope), (method, path, scope)
            expected_access = "read" if method == "get" else "write"
            assert scope == "*" or scope.endswith(":" + expected_access), (method, path, scope)


def _concrete(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "x_000000000000000000000000", path)


def test_every_scoped_route_refuses_a_missing_key_and_a_key_of_another_area(operations, web, tenant, bridge):
    checked = client_side_checked = 0
    for method, path, operation in operations:
        scope = _route_scope(operation)
        if scope is None:
            continue
        area = scope.partition(":")[0]
        other_area = sorted(AREAS - {area})[0]
        stranger = add_key(bridge, tenant.tenant, (f"{other_area}:write",))
        url = f"{web.base_url}{_concrete(path)}"
        kwargs = {"json": {}} if method in {"post", "put", "patch"} else {}
        assert_error(httpx.request(method.upper(), url, **kwargs, verify=TLS), 401, "authentication_required")
        refused = httpx.request(
            method.upper(), url, headers={"Authorization": f"Bearer {stranger}"}, **kwargs, verify=TLS
        )
        if _is_client_side(operation):
            # a client-side route takes the publishable key only: any secret key is refused outright
            assert_error(refused, 401, "invalid_api_key")
            all_scopes = add_key(bridge, tenant.tenant, ("*",))
            refused = httpx.request(
                method.upper(), url, headers={"Authorization": f"Bearer {all_scopes}"}, **kwargs, verify=TLS
            )
            assert_error(refused, 401, "invalid_api_key")
            client_side_checked += 1
        else:
            assert_error(refused, 403, "insufficient_scope")
        checked += 1
    assert checked >= 4
    assert client_side_checked >= 2  # confirming a payment and a setup intent
