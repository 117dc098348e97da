"""Real worker and scheduler processes: a dispute's money moves in a worker after it opens."""

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
    assert_ledger_verifies(servers)  # `moneyrail ledger verify` after every module


@pytest.fixture
def platform(make_api):
    return make_api(kind="platform")
