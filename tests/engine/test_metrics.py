"""Prometheus metrics from web and workers: operations by type and status, attempts, queue depth,
dead letters, latency histograms."""

from __future__ import annotations

import re
import time

import httpx

from moneyrail.engine.metrics import GAUGED_STATUSES
from moneyrail.engine.policy import operation_types
from tests.engine.conftest import create_probe, wait_for_operation
from tests.harness import OUTPUT_DIR, TLS, Process, free_port, wait_until_ready
from tests.stacks import start_scheduler, start_worker


def _sample(text: str, name: str, **labels: str) -> float | None:
    for line in text.splitlines():
        if line.startswith(name) and all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return None


def test_the_web_process_reports_engine_state_and_request_latency(api, bridge, web):
    create_probe(bridge, api.keys.tenant)  # no worker runs in this module's stack: it stays pending
    text = httpx.get(f"{web.base_url}/metrics", verify=TLS).text
    assert (_sample(text, "moneyrail_operations", type="probe_transfer", status="pending") or 0) >= 1
    assert _sample(text, "moneyrail_dead_letters") is not None
    assert _sample(text, "moneyrail_oldest_due_operation_seconds") is not None
    assert _sample(text, "moneyrail_queue_depth", queue="money") is not None
    assert _sample(text, "moneyrail_broker_up") == 1
    # no scheduler runs in this stack: nobody leads, and the relay owes the probe its publication
    assert _sample(text, "moneyrail_scheduler_leaders") == 0
    time.sleep(1.1)
    text = httpx.get(f"{web.base_url}/metrics", verify=TLS).text
    assert (_sample(text, "moneyrail_relay_lag_seconds") or 0) >= 1
    api.get("/v1/account")
    text = httpx.get(f"{web.base_url}/metrics", verify=TLS).text
    assert (
        _sample(text, "moneyrail_http_request_duration_seconds_count", route="/v1/account", status="200") or 0
    ) >= 1


def test_every_known_operation_type_and_status_has_a_sample_zero_when_none_waits(web):
    text = httpx.get(f"{web.base_url}/metrics", verify=TLS).text
    sampled = {}
    for match in re.finditer(
        r"^moneyrail_operations\{(?P<labels>[^}]*)\} (?P<value>\S+)$", text, re.MULTILINE
    ):
        labels = dict(re.findall(r'(\w+)="([^"]*)"', match["labels"]))
        sampled[(labels["type"], labels["status"])] = float(match["value"])
    # the types the service registers (this test process also knows the engine tests' probe types)
    known = [operation_type for operation_type in operation_types() if not operation_type.startswith("probe")]
    assert "transfer" in known and "reconciliation" in known
    expected = {(operation_type, status) for operation_type in known for status in GAUGED_STATUSES}
    assert expected <= sampled.keys(), sorted(expected - sampled.keys())
    # nothing reconciles in this session's tests: a dashboard reads 0, not "No data"
    assert sampled[("reconciliation", "running")] == 0


def test_metrics_can_require_a_token(servers):
    port = free_port()
    process = Process.start(
        "web",
        servers,
        OUTPUT_DIR / "web-metrics-token.log",
        MONEYRAIL_PORT=str(port),
        MONEYRAIL_METRICS_TOKEN="s3cret",
    )
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_until_ready(base_url, process)
        assert httpx.get(f"{base_url}/metrics", verify=TLS).status_code == 401
        assert (
            httpx.get(
                f"{base_url}/metrics", headers={"Authorization": "Bearer wrong"}, verify=TLS
            ).status_code
            == 401
        )
        assert (
            httpx.get(
                f"{base_url}/metrics", headers={"Authorization": "Bearer s3cret"}, verify=TLS
            ).status_code
            == 200
        )
    finally:
        process.stop()


def test_workers_export_attempts_and_latency(api, bridge, servers, web):
    port = free_port()
    worker = start_worker(servers, name="worker-metrics", MONEYRAIL_WORKER_METRICS_PORT=str(port))
    scheduler = start_scheduler(servers, name="scheduler-metrics")
    try:
        operation_id = create_probe(bridge, api.keys.tenant)
        wait_for_operation(api, operation_id, {"succeeded"})
        deadline = time.monotonic() + 20
        text = ""
        while time.monotonic() < deadline:
            try:
                text = httpx.get(f"http://127.0.0.1:{port}/", verify=TLS).text
                if "moneyrail_operation_attempts_total" in text:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        assert (
            _sample(text, "moneyrail_operation_attempts_total", type="probe_transfer", outcome="succeeded")
            or 0
        ) >= 1
        assert (
            _sample(
                text, "moneyrail_operation_latency_seconds_count", type="probe_transfer", status="succeeded"
            )
            or 0
        ) >= 1
        assert "dramatiq_messages_total" in text
        # the scheduler that relayed the probe leads, and the web process sees it
        assert (
            _sample(httpx.get(f"{web.base_url}/metrics", verify=TLS).text, "moneyrail_scheduler_leaders") == 1
        )
    finally:
        worker.stop()
        scheduler.stop()


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2, verify=TLS).status_code == 200
    except httpx.TransportError:
        return False


def test_the_worker_metrics_listen_on_the_configured_address(servers):
    port = free_port()
    # 127.0.0.2 is loopback too on Linux, but another address than 127.0.0.1: what binds one refuses the other
    worker = start_worker(
        servers,
        name="worker-metrics-host",
        MONEYRAIL_WORKER_METRICS_PORT=str(port),
        MONEYRAIL_WORKER_METRICS_HOST="127.0.0.2",
    )
    try:
        deadline = time.monotonic() + 30
        while not _answers(f"http://127.0.0.2:{port}/") and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _answers(f"http://127.0.0.2:{port}/"), worker.log_text()[-2000:]
        assert not _answers(f"http://127.0.0.1:{port}/")
    finally:
        worker.stop()
