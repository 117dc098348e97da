"""CONVENTIONS.md §1: Service-Version per API, Request-Id on every response."""

from __future__ import annotations

from tests.harness import TLS
from tests.helpers import assert_error


def test_absent_version_is_served_by_the_current_payments_version(api):
    response = api.get("/v1/account")
    assert response.status_code == 200
    assert response.headers["Service-Version"] == "2026-08-28"


def test_known_version_is_echoed(api):
    response = api.get("/v1/account", headers={"Service-Version": "2026-08-28"})
    assert response.status_code == 200
    assert response.headers["Service-Version"] == "2026-08-28"


def test_unknown_version_is_refused_before_anything_runs(api, db):
    before = db.execute("SELECT count(*) FROM customers").fetchone()[0]
    response = api.post(
        "/v1/customers", json={"email": "a@example.com"}, headers={"Service-Version": "2020-01-01"}
    )
    assert_error(response, 400, "unsupported_version", "Service-Version")
    assert response.headers["Service-Version"] == "2026-08-28"
    assert db.execute("SELECT count(*) FROM customers").fetchone()[0] == before


def test_each_api_has_its_own_version(api):
    commerce = api.get("/commerce/v1/orders/ord_x")
    assert commerce.headers["Service-Version"] == "2026-09-04"
    fiscal = api.get("/fiscal/v1/documents", headers={"Service-Version": "2026-08-29"})
    assert fiscal.headers["Service-Version"] == "2026-08-29"
    # the payments version means nothing to the commerce API
    wrong = api.get("/commerce/v1/orders/ord_x", headers={"Service-Version": "2026-08-28"})
    assert_error(wrong, 400, "unsupported_version", "Service-Version")


def test_every_response_carries_a_fresh_request_id(api, web):
    import httpx

    seen = set()
    for response in (
        api.get("/v1/account"),
        api.get("/v1/customers/cus_doesnotexist"),
        httpx.get(f"{web.base_url}/healthz", verify=TLS),
        httpx.get(f"{web.base_url}/v1/account", verify=TLS),
    ):
        request_id = response.headers["Request-Id"]
        assert request_id.startswith("req_") and len(request_id) == len("req_") + 24
        seen.add(request_id)
    assert len(seen) == 4


def test_paths_outside_the_apis_carry_no_service_version(web):
    import httpx

    response = httpx.get(f"{web.base_url}/healthz", verify=TLS)
    assert response.status_code == 200
    assert "Service-Version" not in response.headers
