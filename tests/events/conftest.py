"""A worker and a scheduler that deliver webhooks quickly, shared by the webhook tests."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from tests.engine.conftest import start_scheduler, start_worker
from tests.harness import Process, Servers

FAST_RETRIES = {"MONEYRAIL_WEBHOOK_RETRY_BASE_SECONDS": "0.2", "MONEYRAIL_WEBHOOK_MAX_ATTEMPTS": "3"}


@pytest.fixture(scope="package")
def delivering_stack(servers: Servers) -> Iterator[Process]:
    worker = start_worker(servers, name="worker-webhooks", **FAST_RETRIES)
    scheduler = start_scheduler(servers, name="scheduler-webhooks", **FAST_RETRIES)
    yield worker
    worker.stop()
    scheduler.stop()


def wait_for(condition: Callable[[], object], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError("timed out")
