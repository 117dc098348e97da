"""The fiscal API's base (/fiscal/v1): its version, and the documented errors. Its operations are not
in the interface this service implements, so every other address under it says so."""

from __future__ import annotations

import httpx
import pytest

from tests.harness import TLS, add_key
from tests.helpers import assert_error


def test_the_base_answers_with_the_fiscal_version(api):
    response = api.get("/fiscal/v1")
    assert response.status_code == 200
    assert response.headers["Service-Version"] == "2026-08-29"
    assert response.headers["Request-Id"].startswith("req_")
    assert response.json() == {
        "object": "api",
        "api": "fiscal",
        "version": "2026-08-29",
        "livemode": False,
        "operations": [],
    }
    explicit = api.get("/fiscal/v1", headers={"Service-Version": "2026-08-29"})
    assert explicit.status_code == 200 and explicit.headers["Service-Version"] == "2026-08-29"


@pytest.mark.parametrize("version", ["2026-08-28", "2026-09-04", "2020-01-01", "latest"])
def test_another_apis_version_or_an_unknown_one_is_unsupported(api, version):
    response = api.get("/fiscal/v1", headers={"Service-Version": version})
    error = assert_error(response, 400, "unsupported_version", "Service-Version")
    assert "2026-08-29" in error["message"]
    assert response.headers["Service-Version"] == "2026-08-29"


def test_the_base_needs_a_secret_key(api, bridge):
    assert_error(httpx.get(f"{api.base_url}/fiscal/v1", verify=TLS), 401, "authentication_required")
    bogus = httpx.get(
        f"{api.base_url}/fiscal/v1", headers={"Authorization": "Bearer sk_test_nope"}, verify=TLS
    )
    assert_error(bogus, 401, "invalid_api_key")
    publishable = {"Authorization": f"Bearer {api.keys.publishable_key}"}
    assert httpx.get(f"{api.base_url}/fiscal/v1", headers=publishable, verify=TLS).status_code == 401
    narrow = add_key(bridge, api.keys.tenant, ("payments:read",))
    refused = httpx.get(
        f"{api.base_url}/fiscal/v1", headers={"Authorization": f"Bearer {narrow}"}, verify=TLS
    )
    assert_error(refused, 403, "insufficient_scope")


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/fiscal/v1/documents"), ("POST", "/fiscal/v1/documents"), ("GET", "/fiscal/v1/invoices/x")],
)
def test_operations_under_the_base_are_not_in_this_interface(api, method, path):
    response = api.request(method, path, json={} if method == "POST" else None)
    error = assert_error(response, 404, "resource_missing")
    assert "not part of this service's interface" in error["message"]
    assert response.headers["Service-Version"] == "2026-08-29"


def test_the_openapi_contract_shows_the_base_and_no_invented_operations(api):
    paths = httpx.get(f"{api.base_url}/openapi.json", verify=TLS).json()["paths"]
    fiscal = sorted(path for path in paths if path.startswith("/fiscal/"))
    assert fiscal == ["/fiscal/v1"]
