"""GET /healthz says the process is up; GET /readyz says whether the database and broker answer."""

from __future__ import annotations

import httpx

from tests.harness import OUTPUT_DIR, Process, free_port


def test_a_healthy_server_is_live_and_ready(web):
    assert httpx.get(f"{web.base_url}/healthz").json() == {"status": "ok"}
    ready = httpx.get(f"{web.base_url}/readyz")
    assert ready.status_code == 200
    assert ready.json()["checks"] == {"database": "ok", "broker": "ok"}


def test_a_server_whose_broker_is_unreachable_is_live_but_not_ready(servers):
    port = free_port()
    dead_broker = f"redis://127.0.0.1:{free_port()}/0"
    process = Process.start(
        "web", servers, OUTPUT_DIR / "web-no-broker.log", MONEYRAIL_PORT=str(port), REDIS_URL=dead_broker
    )
    base_url = f"http://127.0.0.1:{port}"
    try:
        import time

        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                live = httpx.get(f"{base_url}/healthz")
                break
            except httpx.TransportError:
                time.sleep(0.1)
        assert live.status_code == 200
        ready = httpx.get(f"{base_url}/readyz")
        assert ready.status_code == 503
        body = ready.json()
        assert body["status"] == "unavailable"
        assert body["checks"]["database"] == "ok"
        assert body["checks"]["broker"].startswith("down")
    finally:
        process.stop()


def test_openapi_documents_exactly_the_served_operations(web, api):
    spec = httpx.get(f"{web.base_url}/openapi.json").json()
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
