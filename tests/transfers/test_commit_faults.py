"""Processor faults during a commit, through real worker processes: a transient fault is retried with one
processor effect per allocation; a refusal dead-letters the commit for `moneyrail dead-letters` (the group
and its transfers still pending, showing the refusal), and retrying it finishes only the unfinished
transfers. `moneyrail ledger verify` passes after each."""

from __future__ import annotations

import json

import pytest

from moneyrail.processor.sandbox import SandboxProcessor
from tests.connect.support import create_account
from tests.engine.conftest import assert_ledger_verifies, wait_for_operation
from tests.installations.test_cli import moneyrail
from tests.payments.support import event_types, ledger_balance, paid
from tests.stacks import start_scheduler, start_worker
from tests.transfers.support import FINAL, account_balance, allocate, processor_transfer_calls, reserve


@pytest.fixture
def scheduler(servers, request):
    """The relay alone: a test starts its worker when it wants the commit to run."""
    process = start_scheduler(servers, name=f"scheduler-{request.node.name}")
    yield process
    process.stop()
    assert_ledger_verifies(servers)


@pytest.fixture
def worker_later(servers, request):
    started = []

    def start():
        started.append(start_worker(servers, name=f"worker-{request.node.name}"))

    yield start
    for process in started:
        process.stop()


def open_group(api, shares):
    payment = paid(api, 3000)
    group = reserve(api, payment["id"], sum(amount for _, amount in shares)).json()
    for recipient, amount in shares:
        allocate(api, group["id"], recipient, amount)
    return payment, api.get(f"/v1/allocation-groups/{group['id']}").json()


def test_a_transient_fault_is_retried_and_each_transfer_happens_once(platform, db, scheduler, worker_later):
    courier, driver = create_account(platform)["id"], create_account(platform)["id"]
    _, group = open_group(platform, [(courier, 1200), (driver, 800)])
    platform.post(
        "/v1/test-helpers/processor-faults",
        json={"operation_type": "transfer", "mode": "transient", "count": 2},
    )
    operation = platform.post(f"/v1/allocation-groups/{group['id']}/commit").json()
    worker_later()
    done = wait_for_operation(platform, operation["id"], FINAL)
    assert (done["status"], done["attempts"]) == ("succeeded", 3)
    expected_keys = [f"{operation['id']}:{allocation['id']}" for allocation in group["allocations"]]
    calls = processor_transfer_calls(db, platform.keys.installation_id)
    assert sorted(calls) == sorted((key, True) for key in expected_keys)
    assert account_balance(platform, courier) == (0, 1200)
    assert account_balance(platform, driver) == (0, 800)
    assert ledger_balance(db, platform.keys.installation_id, "balance:pending") == 1000


def test_a_refused_transfer_dead_letters_the_commit_and_a_retry_finishes_only_what_is_unfinished(
    platform, bridge, db, servers, scheduler, worker_later
):
    courier, driver = create_account(platform)["id"], create_account(platform)["id"]
    payment, group = open_group(platform, [(courier, 1200), (driver, 800)])
    operation = platform.post(f"/v1/allocation-groups/{group['id']}/commit").json()
    first, second = (f"{operation['id']}:{allocation['id']}" for allocation in group["allocations"])
    # A worker asked the processor for the first transfer and died before committing: the processor
    # has done it, the books have not.
    processor = SandboxProcessor(bridge.sessionmaker)
    bridge.run(
        processor.create_transfer(
            platform.keys.tenant, idempotency_key=first, amount=1200, currency="eur", destination=courier
        )
    )
    # ... and the processor refuses the next transfer it is asked for.
    platform.post(
        "/v1/test-helpers/processor-faults",
        json={"operation_type": "transfer", "mode": "permanent", "count": 1},
    )
    worker_later()
    dead = wait_for_operation(platform, operation["id"], {"dead_letter", "succeeded", "failed"})
    assert dead["status"] == "dead_letter", dead
    # final means final: dead-lettered is not failed; the group and its transfers wait for an operator
    waiting = platform.get(f"/v1/allocation-groups/{group['id']}").json()
    assert (waiting["status"], waiting["failure_reason"]) == ("committing", None)
    assert waiting["last_operation_error"]["code"] == "processor_error"
    by_destination = {transfer["destination"]: transfer for transfer in waiting["transfers"]}
    refused = by_destination[driver]
    assert (refused["status"], refused["failure_code"]) == ("pending", None)
    assert refused["last_operation_error"]["code"] == "processor_error"
    assert by_destination[courier]["status"] == "pending"  # done at the processor, not in the books yet
    assert account_balance(platform, courier) == (0, 0)

    shown = moneyrail(
        servers, "dead-letters", "list", "--installation", platform.keys.installation_id, "--json"
    )
    assert shown.returncode == 0, shown.stderr
    listed = json.loads(shown.stdout)
    assert [(item["id"], item["type"]) for item in listed] == [(operation["id"], "allocation_commit")]
    retried = moneyrail(servers, "dead-letters", "retry", operation["id"], "--operator", "ops@example.com")
    assert retried.returncode == 0, retried.stderr
    assert wait_for_operation(platform, operation["id"], FINAL)["status"] == "succeeded"

    done = platform.get(f"/v1/allocation-groups/{group['id']}").json()
    assert done["status"] == "committed" and done["failure_reason"] is None
    assert {
        t["destination"]: (t["status"], t["failure_code"], t["last_operation_error"])
        for t in done["transfers"]
    } == {courier: ("paid", None, None), driver: ("paid", None, None)}
    # one processor effect per allocation: the first answered from its first call, the refused one
    # asked again under its next key
    assert sorted(processor_transfer_calls(db, platform.keys.installation_id)) == sorted(
        [(first, True), (second, False), (f"{second}:1", True)]
    )
    assert account_balance(platform, courier) == (0, 1200)
    assert account_balance(platform, driver) == (0, 800)
    assert ledger_balance(db, platform.keys.installation_id, "balance:pending") == 3000 - 2000
    driver_transfer = by_destination[driver]["id"]
    assert event_types(platform, driver_transfer) == ["transfer.created", "transfer.paid"]  # never failed
    # the operation's own events let a receiver retry and diagnose from events alone
    assert event_types(platform, operation["id"]) == ["operation.dead_lettered", "operation.succeeded"]
    assert payment["id"] == done["payment_intent"]
