"""Every line a process logs is one JSON object: structlog's own lines and the standard library's
(uvicorn, SQLAlchemy, asyncpg, dramatiq, APScheduler, Alembic), a traceback in a field of its line."""

from __future__ import annotations

import subprocess
import sys
import time

import httpx

from tests.harness import OUTPUT_DIR, ROOT, TLS, Process, free_port, json_lines
from tests.web_process import another_web_process


def test_a_web_process_logs_json_lines_only_uvicorns_included(servers):
    with another_web_process(servers, "web-json-lines") as base_url:
        assert httpx.get(f"{base_url}/healthz", verify=TLS).status_code == 200
    entries = json_lines((OUTPUT_DIR / "web-json-lines.log").read_text())  # stopped: its whole output
    uvicorn = [entry for entry in entries if str(entry.get("logger", "")).startswith("uvicorn")]
    assert any("Started server process" in entry["event"] for entry in uvicorn), entries
    assert all({"level", "timestamp"} <= entry.keys() for entry in uvicorn)


def test_a_worker_that_cannot_import_a_module_logs_the_traceback_in_a_json_field(servers):
    worker = Process.start(
        "worker",
        servers,
        OUTPUT_DIR / "worker-missing-module.log",
        "--threads",
        "1",
        MONEYRAIL_WORKER_MODULES="tests.no_such_module",
        MONEYRAIL_WORKER_METRICS_PORT=str(free_port()),
    )
    try:
        assert worker.popen.wait(60) != 0  # the fleet stops when a worker process cannot start
    finally:
        worker.stop()
    entries = json_lines(worker.log_text())
    failures = [entry for entry in entries if "exception" in entry]
    assert failures, entries
    failure = failures[0]
    assert failure["level"] == "error" and failure["logger"].startswith("dramatiq")
    assert (
        "Traceback" in failure["exception"]
        and "No module named 'tests.no_such_module'" in failure["exception"]
    )
    assert any(entry["level"] == "critical" for entry in entries)  # dramatiq's main process says so too


def test_a_scheduler_logs_json_lines_only_apschedulers_included(servers):
    scheduler = Process.start("scheduler", servers, OUTPUT_DIR / "scheduler-json-lines.log")
    try:
        deadline = time.monotonic() + 30
        while "apscheduler" not in scheduler.log_text():
            assert scheduler.popen.poll() is None, scheduler.log_text()
            assert time.monotonic() < deadline, scheduler.log_text()
            time.sleep(0.1)
    finally:
        scheduler.stop()
    entries = json_lines(scheduler.log_text())
    assert any(str(entry.get("logger", "")).startswith("apscheduler") for entry in entries)


def test_migrate_logs_alembics_lines_as_json_and_prints_its_result(servers):
    migrated = subprocess.run(
        [sys.executable, "-m", "moneyrail", "migrate"],
        env=servers.environment(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert migrated.returncode == 0, migrated.stderr
    assert migrated.stdout == "database is at the latest migration\n"
    entries = json_lines(migrated.stderr)
    assert any(str(entry.get("logger", "")).startswith("alembic") for entry in entries), entries
