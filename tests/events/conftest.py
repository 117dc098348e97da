"""A worker and a scheduler that deliver webhooks quickly, shared by the webhook tests."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from tests.harness import Process, Servers
from tests.stacks import FAST_RETRIES, shared_stack


@pytest.fixture
def delivering_stack(servers: Servers) -> Process:
    """A worker and a scheduler retrying webhooks quickly, shared with the tests before (tests/stacks.py)."""
    return shared_stack(servers, "fast-retries", **FAST_RETRIES).worker


def wait_for(condition: Callable[[], object], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError("timed out")
