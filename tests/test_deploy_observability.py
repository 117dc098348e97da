"""deploy/prometheus/alerts.yaml and deploy/grafana/moneyrail.json: valid, tested, and about real metrics.

The rules are checked and unit-tested by `promtool` (Debian's `prometheus` package; `.ci/run` installs it
under CI, where its absence fails these tests). Every metric that a rule or a dashboard query names must
appear in the real exposition of a running web process and worker.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.engine.conftest import create_probe, wait_for_operation
from tests.harness import TLS, free_port
from tests.stacks import start_scheduler, start_worker

ROOT = Path(__file__).resolve().parents[1]
ALERTS = ROOT / "deploy" / "prometheus" / "alerts.yaml"
ALERT_TESTS = ROOT / "deploy" / "prometheus" / "alerts.test.yaml"
DASHBOARD = ROOT / "deploy" / "grafana" / "moneyrail.json"
METRIC_NAME = re.compile(r"\bmoneyrail_[a-z0-9_]+\b")
# What the issue asks the rules to watch, by alert name.
REQUIRED_ALERTS = {
    "MoneyrailDeadLetters",
    "MoneyrailOldestDueOperationGrowing",
    "MoneyrailRelayLagging",
    "MoneyrailSchedulerWithoutLeader",
    "MoneyrailHigh5xxRate",
    "MoneyrailWebhookFailureRate",
}


@pytest.fixture(scope="module")
def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("promtool is missing under CI: .ci/run installs Debian's `prometheus` package")
        pytest.skip("promtool not installed (apt-get install prometheus)")
    return found


def test_alert_rules_pass_promtool_check(promtool: str) -> None:
    checked = subprocess.run([promtool, "check", "rules", str(ALERTS)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_alert_rules_fire_as_their_unit_tests_expect(promtool: str) -> None:
    tested = subprocess.run(
        [promtool, "test", "rules", ALERT_TESTS.name], cwd=ALERT_TESTS.parent, capture_output=True, text=True
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_every_required_alert_exists_and_is_unit_tested() -> None:
    names = set(re.findall(r"^\s*- alert: (\w+)", ALERTS.read_text(), re.MULTILINE))
    assert names >= REQUIRED_ALERTS, f"missing alerts: {sorted(REQUIRED_ALERTS - names)}"
    tested = set(re.findall(r"alertname: (\w+)", ALERT_TESTS.read_text()))
    assert names <= tested, f"alerts without a promtool unit test: {sorted(names - tested)}"


def dashboard_queries() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    return [target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])]


def test_every_dashboard_panel_has_a_query() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["panels"]
    for panel in dashboard["panels"]:
        assert panel.get("targets"), f"panel {panel['title']!r} queries nothing"
        for target in panel["targets"]:
            assert METRIC_NAME.search(target["expr"]), f"panel {panel['title']!r}: {target['expr']}"


def exposed_sample_names(exposition: str) -> set[str]:
    """Names of the samples, and of every declared family with its samples' suffixes: a gauge family
    with nothing to report now (no pending operation) is exported all the same."""
    names: set[str] = set()
    for line in exposition.splitlines():
        if line.startswith("# TYPE "):
            _, _, family, kind = line.split(" ", 3)
            suffixes = {"histogram": ("_bucket", "_count", "_sum"), "counter": ("_total",)}.get(kind, ())
            names |= {family, *(family + suffix for suffix in suffixes)}
        elif line and not line.startswith("#"):
            names.add(re.split(r"[{ ]", line, maxsplit=1)[0])
    return names


def test_every_metric_in_the_alerts_and_the_dashboard_is_exported(api, bridge, servers, web) -> None:
    """The web process's /metrics and a worker's exposition, after one operation ran through them."""
    port = free_port()
    worker = start_worker(servers, name="worker-observability", MONEYRAIL_WORKER_METRICS_PORT=str(port))
    scheduler = start_scheduler(servers, name="scheduler-observability")
    try:
        operation_id = create_probe(bridge, api.keys.tenant)
        wait_for_operation(api, operation_id, {"succeeded"})
        api.get("/v1/account")
        exported = exposed_sample_names(httpx.get(f"{web.base_url}/metrics", verify=TLS).text)
        deadline = time.monotonic() + 20
        worker_names: set[str] = set()
        while time.monotonic() < deadline and "moneyrail_operation_attempts_total" not in worker_names:
            with contextlib.suppress(httpx.TransportError):
                worker_names = exposed_sample_names(httpx.get(f"http://127.0.0.1:{port}/", verify=TLS).text)
            time.sleep(0.2)
        exported |= worker_names
    finally:
        worker.stop()
        scheduler.stop()
    named = {
        "alerts.yaml": set(METRIC_NAME.findall(ALERTS.read_text())),
        "moneyrail.json": {name for query in dashboard_queries() for name in METRIC_NAME.findall(query)},
    }
    for source, names in named.items():
        assert names, f"{source} names no moneyrail metric"
        missing = sorted(names - exported)
        assert not missing, f"{source} names metrics the service does not export: {missing}"
