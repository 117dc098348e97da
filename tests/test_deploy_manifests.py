"""What the deployment files promise operators, read as text (PyYAML is not a dependency)."""

from __future__ import annotations

import re
from pathlib import Path

from moneyrail.config import Settings

ROOT = Path(__file__).resolve().parents[1]
KUBERNETES = ROOT / "deploy" / "kubernetes"


def test_the_scheduler_runs_two_replicas_since_one_leads_and_the_other_waits() -> None:
    manifest = (KUBERNETES / "scheduler.yaml").read_text()
    assert re.search(r"^  replicas: 2$", manifest, re.MULTILINE)
    assert "type: Recreate" not in manifest
    readme = (ROOT / "deploy" / "README.md").read_text()
    assert "does not take that lock yet" not in readme and "Two schedulers" in readme


def test_the_metrics_token_is_in_every_secret_example() -> None:
    assert re.search(r"^  MONEYRAIL_METRICS_TOKEN: ", (KUBERNETES / "secret.example.yaml").read_text(), re.M)
    env_example = (ROOT / "deploy" / "systemd" / "moneyrail.env.example").read_text()
    assert re.search(r"^MONEYRAIL_METRICS_TOKEN=", env_example, re.MULTILINE)


def test_the_worker_metrics_bind_address_is_a_setting_the_pods_open(monkeypatch) -> None:
    assert Settings().worker_metrics_host == "127.0.0.1"  # loopback unless a deployment opens it
    monkeypatch.setenv("MONEYRAIL_WORKER_METRICS_HOST", "0.0.0.0")
    assert Settings().worker_metrics_host == "0.0.0.0"
    configmap = (KUBERNETES / "configmap.yaml").read_text()
    assert re.search(r'^  MONEYRAIL_WORKER_METRICS_HOST: "0\.0\.0\.0"$', configmap, re.MULTILINE)
    port = re.search(r'^  MONEYRAIL_WORKER_METRICS_PORT: "(\d+)"$', configmap, re.MULTILINE)
    assert port is not None
    assert f"containerPort: {port.group(1)}" in (KUBERNETES / "worker.yaml").read_text()


def test_web_readiness_is_documented_as_following_postgresql_alone() -> None:
    manifest = (KUBERNETES / "web.yaml").read_text()
    assert "only while PostgreSQL and Redis answer" not in manifest
    assert "A Redis outage does not make the" in manifest
