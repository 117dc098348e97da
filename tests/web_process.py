"""A second real web process beside the session's (`web` in tests/conftest.py): another member of the
fleet, on the same PostgreSQL and Redis, with settings of its own."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from tests.harness import OUTPUT_DIR, Process, Servers, free_port, wait_until_ready


@contextmanager
def another_web_process(servers: Servers, log_name: str, **env: str) -> Iterator[str]:
    """Start `moneyrail web` on a free port with `env` over the servers' environment, logging to
    `<OUTPUT_DIR>/<log_name>.log`; yields its base URL once `/readyz` answers, stops it on leaving."""
    port = free_port()
    process = Process.start("web", servers, OUTPUT_DIR / f"{log_name}.log", MONEYRAIL_PORT=str(port), **env)
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_until_ready(base_url, process)
        yield base_url
    finally:
        process.stop()
