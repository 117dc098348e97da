"""No database transaction across a processor call (ARCHITECTURE.md, "The processor is an outside system"),
proved with real workers: while a commit's transfer call is on the network (held open, after the processor
made the transfers, by tests/engine/gated_processor.py), the worker holds no transaction, no row lock and
no pooled connection, so a pool of one connection serves several such calls at once; and a worker killed
in that window leaves one transfer at the processor and one booking, after the operation is re-driven."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import psutil
import psycopg
import pytest

from tests.connect.support import create_account
from tests.engine.conftest import assert_ledger_verifies, attempt_outcomes, wait_for_operation
from tests.harness import Servers, libpq_url
from tests.helpers import backends_of
from tests.payments.support import paid
from tests.stacks import ENGINE_ENV, start_scheduler, start_worker
from tests.transfers.support import FINAL, account_balance, allocate, processor_transfer_calls, reserve

GATED_MODULES = f"{ENGINE_ENV['MONEYRAIL_WORKER_MODULES']},tests.engine.gated_processor"


def wait_for(condition: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def arrivals(gate: Path) -> list[str]:
    return sorted(path.read_text() for path in gate.glob("arrived-*"))


def committing(platform: Any, courier: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A paid payment, a group allocating 1200 of it to `courier`, and the group's commit operation."""
    payment = paid(platform, 3000)
    group = reserve(platform, payment["id"], 1200).json()
    assert allocate(platform, group["id"], courier, 1200).status_code == 200
    operation = platform.post(f"/v1/allocation-groups/{group['id']}/commit").json()
    return payment, platform.get(f"/v1/allocation-groups/{group['id']}").json(), operation


@pytest.fixture
def scheduler(servers: Servers, request: Any) -> Any:
    process = start_scheduler(servers, name=f"scheduler-{request.node.name}")
    yield process
    process.stop()
    assert_ledger_verifies(servers)


def test_a_blocked_processor_call_holds_no_transaction_lock_or_pooled_connection(
    platform, db, servers, scheduler, tmp_path
):
    gate = tmp_path / "gate"
    gate.mkdir()
    # one pooled connection for the operations (and one for the sandbox processor's own books), several
    # threads: a call holding the connection would keep every other operation from even being claimed
    worker = start_worker(
        servers,
        name="worker-phases-blocked",
        MONEYRAIL_DB_POOL_SIZE="1",
        MONEYRAIL_OPERATION_LEASE_SECONDS="60",
        MONEYRAIL_WORKER_MODULES=GATED_MODULES,
        PROCESSOR_GATE_DIR=str(gate),
    )
    try:
        courier = create_account(platform)["id"]
        commits = []
        for number in range(1, 4):  # one after another, so that each is its own message
            commits.append(committing(platform, courier))
            wait_for(lambda n=number: len(arrivals(gate)) == n, 60, f"call {number} at the processor")
        # three transfer calls on the network at once, each after the processor made its transfer
        assert sorted(f"{operation['id']}:transfers" for _, _, operation in commits) == arrivals(gate)

        backends = backends_of(db, worker.popen.pid)
        assert backends, "the worker has connected to the database"
        assert [(pid, state) for pid, state, _ in backends if state != "idle"] == []
        held = db.execute(
            "SELECT l.pid, l.locktype, l.mode, c.relname FROM pg_locks l"
            " LEFT JOIN pg_class c ON c.oid = l.relation WHERE l.pid = ANY(%s)",
            ([pid for pid, _, _ in backends],),
        ).fetchall()
        assert held == []
        # another transaction takes every row a commit reads and writes, at once
        with psycopg.connect(libpq_url(servers.database_url)) as other:
            for payment, group, operation in commits:
                for table, key in (
                    ("payment_intents", payment["id"]),
                    ("allocation_groups", group["id"]),
                    ("operations", operation["id"]),
                ):
                    locked = other.execute(
                        f"SELECT id FROM {table} WHERE id = %s FOR UPDATE NOWAIT",
                        (key,),
                    ).fetchall()
                    assert locked == [(key,)]
                transfers = other.execute(
                    "SELECT id, status FROM transfers WHERE allocation_group_id = %s FOR UPDATE NOWAIT",
                    (group["id"],),
                ).fetchall()
                assert [status for _, status in transfers] == ["pending"]  # not booked before the answer
            other.rollback()
        assert account_balance(platform, courier) == (0, 0)

        (gate / "open").touch()
        for _, group, operation in commits:
            done = wait_for_operation(platform, operation["id"], FINAL)
            assert (done["status"], done["attempts"]) == ("succeeded", 1)
            assert platform.get(f"/v1/allocation-groups/{group['id']}").json()["status"] == "committed"
        assert account_balance(platform, courier) == (0, 3600)
    finally:
        (gate / "open").touch()
        worker.stop()


def test_a_worker_killed_between_the_call_and_its_recording_leaves_one_transfer_and_one_booking(
    platform, db, servers, scheduler, tmp_path
):
    gate = tmp_path / "gate"
    gate.mkdir()
    worker = start_worker(
        servers,
        name="worker-phases-killed",
        MONEYRAIL_OPERATION_LEASE_SECONDS="3",
        MONEYRAIL_WORKER_MODULES=GATED_MODULES,
        PROCESSOR_GATE_DIR=str(gate),
    )
    replacement = None
    try:
        courier = create_account(platform)["id"]
        _, group, operation = committing(platform, courier)
        wait_for(lambda: len(arrivals(gate)) == 1, 60, "the call at the processor")
        # the processor made the transfer; the worker dies before it records the answer
        made = [(f"{operation['id']}:{group['allocations'][0]['id']}", True)]
        wait_for(lambda: processor_transfer_calls(db, platform.keys.installation_id) == made, 30, "its books")
        parent = psutil.Process(worker.popen.pid)
        for process in [*parent.children(recursive=True), parent]:
            os.kill(process.pid, signal.SIGKILL)
        worker.popen.wait(10)
        assert platform.get(f"/v1/operations/{operation['id']}").json()["status"] == "running"

        (gate / "open").touch()
        replacement = start_worker(
            servers, name="worker-phases-replacement", MONEYRAIL_OPERATION_LEASE_SECONDS="3"
        )
        done = wait_for_operation(platform, operation["id"], FINAL, timeout=60)
        assert (done["status"], done["attempts"]) == ("succeeded", 2)
        assert attempt_outcomes(db, operation["id"]) == ["lease_expired", "succeeded"]
        # the second attempt asked again under the same key: the processor's first answer, booked once
        assert processor_transfer_calls(db, platform.keys.installation_id) == [
            (f"{operation['id']}:{group['allocations'][0]['id']}", True)
        ]
        (transfer,) = platform.get(f"/v1/allocation-groups/{group['id']}").json()["transfers"]
        assert transfer["status"] == "paid"
        bookings = db.execute(
            "SELECT count(*) FROM journal_transactions WHERE reference = %s", (transfer["id"],)
        ).fetchone()
        assert bookings == (1,)
        assert account_balance(platform, courier) == (0, 1200)
    finally:
        for process in (worker, replacement):
            if process is not None:
                process.stop()
