"""One JSON log line per request, and no secret ever reaches the log."""

from __future__ import annotations

import json
import time

import httpx

from tests.harness import TLS, add_key


def _request_lines(log_text: str) -> list[dict]:
    lines = []
    for line in log_text.splitlines():
        if line.startswith("{"):
            entry = json.loads(line)
            if entry.get("event") == "request":
                lines.append(entry)
    return lines


def log_after(web, request_ids: list[str], timeout: float = 5) -> str:
    """The server writes its line just after the response leaves; wait for it."""
    deadline = time.monotonic() + timeout
    while True:
        text = web.process.log_text()
        if all(request_id in text for request_id in request_ids) or time.monotonic() > deadline:
            return text
        time.sleep(0.05)


def test_each_request_logs_one_line_with_id_installation_route_status_latency(api, web):
    response = api.get("/v1/customers/cus_000000000000000000000000")
    request_id = response.headers["Request-Id"]
    entries = [e for e in _request_lines(log_after(web, [request_id])) if e.get("request_id") == request_id]
    assert len(entries) == 1
    entry = entries[0]
    assert entry["installation"] == api.keys.installation_id
    assert entry["route"] == "/v1/customers/{customer}"
    assert entry["method"] == "GET"
    assert entry["status"] == 404
    assert entry["latency_ms"] >= 0
    assert entry["level"] == "info"


def test_secrets_never_reach_the_log(api, web, bridge):
    card_number = "4242424242424242"
    other_secret = add_key(bridge, api.keys.tenant, ("customers:read",))
    marker_ids = []
    # a valid call, a refused scope, an invalid key, and a card number in a refused body
    for response in (
        api.get("/v1/account"),
        httpx.post(
            f"{web.base_url}/v1/customers",
            json={},
            headers={"Authorization": f"Bearer {other_secret}"},
            verify=TLS,
        ),
        httpx.get(
            f"{web.base_url}/v1/account",
            headers={"Authorization": "Bearer sk_test_leakedleakedleaked"},
            verify=TLS,
        ),
        api.post("/v1/customers", json={"card": {"number": card_number, "cvc": "123"}}),
        api.post("/v1/customers", json={"name": card_number}),
    ):
        marker_ids.append(response.headers["Request-Id"])
    log_text = log_after(web, marker_ids)
    for request_id in marker_ids:
        assert request_id in log_text  # the calls were logged ...
    for secret in (api.keys.secret, other_secret, "sk_test_leakedleakedleaked", "Bearer", card_number):
        assert secret not in log_text  # ... and none of their secrets


def test_the_remembered_series_name_each_route_as_route_template_does():
    from fastapi.routing import iter_route_contexts

    from moneyrail.api.middleware import _series, route_template
    from moneyrail.app import create_app

    class Unhashable:  # as FastAPI's routes: compared by value, so not hashable
        __hash__ = None

        def __init__(self, path_format: str) -> None:
            self.path_format = path_format

    routes = [
        context for context in iter_route_contexts(create_app().routes) if hasattr(context, "path_format")
    ]
    routes += [Unhashable("/customers"), Unhashable("/v1/customers"), None]
    for route in routes:
        for path in ("/v1/x", "/commerce/v1/x", "/fiscal/v1/x", "/checkout/x", "/v1"):
            scope = {"method": "POST", "path": path, "route": route}
            for _ in range(2):  # the second time from what was remembered
                assert _series(scope, 200)[0] == route_template(scope)
