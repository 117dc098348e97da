"""A payout's operation calls the processor with no lock held (engine phases), so a cancel that arrives
while the call is on the network must not give the money back: the processor may have paid it out. Real
worker processes; the call is held open after the processor acted by tests/engine/gated_processor.py."""

from __future__ import annotations

from typing import Any

import pytest

from tests.engine.conftest import assert_ledger_verifies, wait_for_operation
from tests.harness import Servers
from tests.helpers import assert_error
from tests.payments.support import event_types
from tests.payouts.test_connected_account_payouts import funded, payout
from tests.stacks import start_scheduler, start_worker
from tests.transfers.support import FINAL, account_balance, processor_transfer_calls
from tests.transfers.test_commit_phases import GATED_MODULES, arrivals, wait_for


@pytest.fixture
def platform(make_api: Any) -> Any:
    return make_api(kind="platform")


@pytest.fixture
def scheduler(servers: Servers, request: Any) -> Any:
    process = start_scheduler(servers, name=f"scheduler-{request.node.name}")
    yield process
    process.stop()
    assert_ledger_verifies(servers)


def test_a_payout_whose_call_is_at_the_processor_cannot_be_canceled_and_goes_out_once(
    platform, db, servers, scheduler, tmp_path
):
    gate = tmp_path / "gate"
    gate.mkdir()
    worker = start_worker(
        servers,
        name="worker-payout-phases",
        MONEYRAIL_OPERATION_LEASE_SECONDS="60",
        MONEYRAIL_WORKER_MODULES=GATED_MODULES,
        PROCESSOR_GATE_DIR=str(gate),
        PROCESSOR_GATE_CALLS="create_payout",
    )
    try:
        account = funded(platform, 500)
        body = payout(platform, account, 500).json()
        wait_for(lambda: len(arrivals(gate)) == 1, 20, "the payout's call at the processor")
        assert processor_transfer_calls(db, platform.keys.installation_id, "payout") == [
            (f"{body['operation']}:payout", True)
        ]
        # the worker holds no lock on the payout: the cancel answers at once, and refuses
        assert_error(platform.post(f"/v1/payouts/{body['id']}/cancel"), 409, "resource_state_invalid")
        assert platform.get(f"/v1/payouts/{body['id']}").json()["status"] == "pending"
        assert account_balance(platform, account) == (0, 0)

        (gate / "open").touch()
        assert wait_for_operation(platform, body["operation"], FINAL)["status"] == "succeeded"
        assert platform.get(f"/v1/payouts/{body['id']}").json()["status"] == "in_transit"
        assert account_balance(platform, account) == (0, 0)
        assert processor_transfer_calls(db, platform.keys.installation_id, "payout") == [
            (f"{body['operation']}:payout", True)
        ]
        assert event_types(platform, body["id"]) == ["payout.created", "payout.updated"]
    finally:
        (gate / "open").touch()
        worker.stop()
