"""Per-key rate limits: 429 `rate_limited` with Retry-After, set per installation by the operator, never
stored under an Idempotency-Key, and failing open when Redis is away."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import Api
from tests.harness import (
    OUTPUT_DIR,
    TLS,
    Process,
    add_key,
    create_tenant,
    free_port,
    run_moneyrail,
    wait_until_ready,
)
from tests.helpers import assert_error


def set_rate_limit(servers: Any, installation_id: str, limit: int) -> dict[str, Any]:
    """As the operator does it: `moneyrail settings set --rate-limit`."""
    result = run_moneyrail(
        servers,
        *("settings", "set", "-i", installation_id, "--env", "sandbox", "--rate-limit", str(limit), "--json"),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    shown: dict[str, Any] = json.loads(result.stdout)
    return shown


def burst(client: httpx.Client, count: int) -> list[httpx.Response]:
    return [client.get("/v1/customers") for _ in range(count)]


def test_a_key_over_its_limit_gets_429_with_retry_after_then_recovers(servers, api):
    assert set_rate_limit(servers, api.keys.installation_id, 3)["rate_limit_per_second"] == 3
    responses = burst(api, 8)
    statuses = [response.status_code for response in responses]
    assert statuses[:3] == [200, 200, 200] and 429 in statuses[3:], statuses
    refused = next(response for response in responses if response.status_code == 429)
    error = assert_error(refused, 429, "rate_limited")
    assert error["type"] == "rate_limit_error" and "3 per second" in error["message"]
    retry_after = int(refused.headers["Retry-After"])
    assert 1 <= retry_after <= 2
    time.sleep(retry_after + 1)
    assert api.get("/v1/customers").status_code == 200


def test_each_key_has_its_own_budget(servers, web, api, bridge):
    set_rate_limit(servers, api.keys.installation_id, 2)
    assert 429 in [response.status_code for response in burst(api, 6)]
    other_key = add_key(bridge, api.keys.tenant, ("*",))
    with httpx.Client(
        base_url=web.base_url, headers={"Authorization": f"Bearer {other_key}"}, verify=TLS
    ) as other:
        assert [response.status_code for response in burst(other, 2)] == [200, 200]


def test_a_429_is_never_stored_so_the_same_idempotency_key_runs_after_the_wait(servers, api, db):
    set_rate_limit(servers, api.keys.installation_id, 2)
    burst(api, 4)
    limited = api.post("/v1/customers", json={"name": "Later"}, headers={"Idempotency-Key": "after-429"})
    assert_error(limited, 429, "rate_limited")
    assert db.execute(
        "SELECT count(*) FROM idempotency_records WHERE installation_id = %s", (api.keys.installation_id,)
    ).fetchone() == (0,)
    time.sleep(int(limited.headers["Retry-After"]) + 1)
    created = api.post("/v1/customers", json={"name": "Later"}, headers={"Idempotency-Key": "after-429"})
    assert created.status_code == 200, created.text
    assert "Idempotent-Replayed" not in created.headers and created.json()["name"] == "Later"


def test_zero_lifts_the_limit_and_minus_one_returns_to_the_default(servers, api):
    assert set_rate_limit(servers, api.keys.installation_id, 0)["rate_limit_per_second"] == 0
    assert {response.status_code for response in burst(api, 30)} == {200}
    assert set_rate_limit(servers, api.keys.installation_id, -1)["rate_limit_per_second"] is None


@pytest.fixture
def web_without_redis(servers: Any) -> Iterator[str]:
    """A web process whose Redis is not there (nothing listens on its port), with a tight limit."""
    port = free_port()
    process = Process.start(
        "web",
        servers,
        OUTPUT_DIR / "web-without-redis.log",
        MONEYRAIL_PORT=str(port),
        REDIS_URL=f"redis://127.0.0.1:{free_port()}/0",
        MONEYRAIL_RATE_LIMIT_PER_SECOND="1",
        MONEYRAIL_LOG_JSON="true",
    )
    base_url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:  # /readyz reports the broker down: wait for the process itself
        try:
            if httpx.get(f"{base_url}/healthz", timeout=2, verify=TLS).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        assert process.popen.poll() is None, process.log_text()[-3000:]
        assert time.monotonic() < deadline, process.log_text()[-3000:]
        time.sleep(0.1)
    try:
        yield base_url
        process.stop()
        assert "rate_limit_unchecked" in process.log_text()
    finally:
        process.stop()


def test_a_redis_outage_does_not_block_payments_it_is_logged_and_counted(web_without_redis, bridge):
    keys = create_tenant(bridge)
    with Api(web_without_redis, keys) as client:
        created = [
            client.post("/v1/payment-intents", json={"amount": 1000 + n, "currency": "eur"}) for n in range(5)
        ]
        assert [response.status_code for response in created] == [200] * 5, created[-1].text
        assert {response.status_code for response in burst(client, 5)} == {200}
        metrics = client.get("/metrics")
        assert metrics.status_code == 200, metrics.text
    unchecked = re.search(r"^moneyrail_rate_limit_unchecked_total ([0-9.e+]+)$", metrics.text, re.MULTILINE)
    assert unchecked is not None and float(unchecked.group(1)) >= 10


@pytest.fixture
def second_web(servers: Any) -> Iterator[str]:
    """Another web process on the same PostgreSQL and Redis: a fleet of two."""
    port = free_port()
    process = Process.start("web", servers, OUTPUT_DIR / "web-second.log", MONEYRAIL_PORT=str(port))
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_until_ready(base_url, process)
        yield base_url
    finally:
        process.stop()


def test_two_web_processes_enforce_one_budget_per_key(servers, web, second_web, api):
    """The window lives in Redis: a key's requests spread over a fleet still get its limit, not n times it."""
    set_rate_limit(servers, api.keys.installation_id, 4)
    headers = {"Authorization": f"Bearer {api.keys.secret}"}
    with httpx.Client(base_url=second_web, headers=headers, verify=TLS) as other:
        for _attempt in range(3):  # a second boundary in the middle of a burst lets the next one through
            statuses = [(api if n % 2 else other).get("/v1/customers").status_code for n in range(12)]
            if statuses.count(200) <= 4:
                break
            time.sleep(1.5)
        assert statuses.count(200) <= 4 and statuses.count(429) == 12 - statuses.count(200), statuses
