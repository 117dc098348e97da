"""Real worker and scheduler processes for the money that moves after a request answers."""

from __future__ import annotations

import pytest

from tests.engine.conftest import assert_ledger_verifies, start_scheduler, start_worker


@pytest.fixture(scope="module")
def money_stack(servers, request):
    name = request.module.__name__.rsplit(".", 1)[-1]
    worker = start_worker(servers, name=f"worker-{name}")
    scheduler = start_scheduler(servers, name=f"scheduler-{name}")
    yield worker
    worker.stop()
    scheduler.stop()
    assert_ledger_verifies(servers)  # `moneyrail ledger verify` after every module, faults included


@pytest.fixture
def platform(make_api):
    """A platform installation's sandbox: it distributes payments to connected accounts."""
    return make_api(kind="platform")
