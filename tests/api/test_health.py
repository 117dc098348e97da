"""GET /healthz says the process is up; GET /readyz says whether it can serve (the database answers), with
the broker in its detail."""

from __future__ import annotations

import time

import httpx

from tests.harness import OUTPUT_DIR, TLS, Process, free_port


def test_a_healthy_server_is_live_and_ready(web):
    assert httpx.get(f"{web.base_url}/healthz", verify=TLS).json() == {"status": "ok"}
    ready = httpx.get(f"{web.base_url}/readyz", verify=TLS)
    assert ready.status_code == 200
    assert ready.json()["checks"] == {"database": "ok", "broker": "ok"}


def _start_web(servers, name: str, **env: str) -> tuple[Process, str]:
    port = free_port()
    process = Process.start("web", servers, OUTPUT_DIR / f"{name}.log", MONEYRAIL_PORT=str(port), **env)
    base_url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx.get(f"{base_url}/healthz", verify=TLS)
            return process, base_url
        except httpx.TransportError:
            assert process.popen.poll() is None, process.log_text()
            time.sleep(0.1)
    process.stop()
    raise TimeoutError(process.log_text())


def test_a_redis_outage_leaves_web_ready_and_reports_the_broker_down(servers, tenant):
    """The outbox keeps accepted work in PostgreSQL, so readiness must not drop every pod with Redis."""
    process, base_url = _start_web(servers, "web-no-broker", REDIS_URL=f"redis://127.0.0.1:{free_port()}/0")
    try:
        assert httpx.get(f"{base_url}/healthz", verify=TLS).status_code == 200
        ready = httpx.get(f"{base_url}/readyz", verify=TLS)
        assert ready.status_code == 200
        body = ready.json()
        assert body["status"] == "degraded"
        assert body["checks"]["database"] == "ok"
        assert body["checks"]["broker"].startswith("down")
        # the API still takes requests during the outage
        created = httpx.post(
            f"{base_url}/v1/customers",
            headers={"Authorization": f"Bearer {tenant.secret}"},
            json={"email": "ada@example.com"},
            verify=TLS,
        )
        assert created.status_code == 200, created.text
        exposition = httpx.get(f"{base_url}/metrics", verify=TLS).text
        assert "moneyrail_broker_up 0.0" in exposition
    finally:
        process.stop()


def test_a_server_whose_database_is_unreachable_is_live_but_not_ready(servers):
    dead_database = f"postgresql://postgres@127.0.0.1:{free_port()}/moneyrail"
    process, base_url = _start_web(servers, "web-no-database", DATABASE_URL=dead_database)
    try:
        assert httpx.get(f"{base_url}/healthz", verify=TLS).status_code == 200
        ready = httpx.get(f"{base_url}/readyz", verify=TLS)
        assert ready.status_code == 503
        body = ready.json()
        assert body["status"] == "unavailable"
        assert body["checks"]["database"].startswith("down")
        assert body["checks"]["broker"] == "ok"
    finally:
        process.stop()


def test_openapi_documents_exactly_the_served_operations(web, api):
    spec = httpx.get(f"{web.base_url}/openapi.json", verify=TLS).json()
    assert spec["openapi"].startswith("3.")
    assert spec["components"]["securitySchemes"]["ApiKey"] == {
        "type": "http",
        "scheme": "bearer",
        "description": spec["components"]["securitySchemes"]["ApiKey"]["description"],
    }
    for path, item in spec["paths"].items():
        for method in item:
            concrete = path.replace("{customer}", "cus_000000000000000000000000")
            response = api.request(method.upper(), concrete, json={} if method == "post" else None)
            # every documented operation is routed (a 404 here would be a resource, not the route)
            assert not (response.status_code == 404 and "Unrecognized request URL" in response.text), path
            assert response.status_code != 405, (method, path)
