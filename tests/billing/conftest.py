"""A sandbox installation with subscriptions and hosted checkout enabled."""

from __future__ import annotations

import pytest

from tests.billing.support import enable_billing
from tests.engine.conftest import assert_ledger_verifies, start_scheduler, start_worker


@pytest.fixture
def biller(api, bridge):
    enable_billing(bridge, api.keys)
    return api


@pytest.fixture(scope="module")
def money_stack(servers, request):
    """Real worker and scheduler processes for this module (the renewal, sync and commit operations)."""
    name = request.module.__name__.rsplit(".", 1)[-1]
    worker = start_worker(servers, name=f"worker-{name}")
    scheduler = start_scheduler(servers, name=f"scheduler-{name}")
    yield worker
    worker.stop()
    scheduler.stop()
    assert_ledger_verifies(servers)
