"""Faults the engine survives with real processes: a killed worker, a broker outage, a dead scheduler."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time

import psutil
import pytest

from moneyrail.embedded import EmbeddedRedis
from moneyrail.engine.leadership import LEADER_LOCK_ID
from tests.engine.conftest import (
    assert_ledger_verifies,
    attempt_outcomes,
    create_probe,
    create_probes,
    journal_entries,
    processor_calls,
    wait_for_operation,
)
from tests.engine.probe import PROBE_BATCHED_TYPE
from tests.harness import Process, Servers
from tests.stacks import start_scheduler, start_worker


def wait_for(condition, timeout: float = 30, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def kill_nine(worker: Process) -> None:
    """kill -9 every process of a worker: the one in the middle of the operation included."""
    parent = psutil.Process(worker.popen.pid)
    for process in [*parent.children(recursive=True), parent]:
        with contextlib.suppress(ProcessLookupError):  # a child that ended meanwhile (dramatiq's own)
            os.kill(process.pid, signal.SIGKILL)
    worker.popen.wait(10)


def test_a_worker_killed_between_the_processor_answer_and_its_commit_leaves_one_effect(
    api, bridge, db, servers
):
    scheduler = start_scheduler(servers, name="scheduler-kill")
    worker = start_worker(servers, name="worker-kill")
    replacement = None
    try:
        operation_id = create_probe(bridge, api.keys.tenant, pause_after_processor_seconds=30)
        wait_for(lambda: processor_calls(db, api.keys.installation_id), what="the processor call")
        kill_nine(worker)
        replacement = start_worker(servers, name="worker-kill-replacement")
        operation = wait_for_operation(api, operation_id, {"succeeded"}, timeout=60)
        assert operation["attempts"] == 2
        assert processor_calls(db, api.keys.installation_id) == [(f"{operation_id}:transfer", True)]
        assert attempt_outcomes(db, operation_id) == ["lease_expired", "succeeded"]
        assert journal_entries(db, operation_id) == 1
        assert_ledger_verifies(servers)
    finally:
        for process in (worker, replacement, scheduler):
            if process is not None:
                process.stop()


def test_a_worker_killed_in_the_middle_of_a_batch_leaves_one_effect_per_operation(api, bridge, db, servers):
    scheduler = start_scheduler(servers, name="scheduler-batch-kill")
    worker = start_worker(servers, name="worker-batch-kill")
    replacement = None
    try:
        # four of the batched type in one message; the second stalls on its first attempt, after the
        # first's journal transaction was written in the batch's still-open unit of work
        payloads = [
            {"call_processor": False, "pause_after_processor_seconds": 30 if n == 1 else 0} for n in range(4)
        ]
        operation_ids = create_probes(bridge, api.keys.tenant, payloads, PROBE_BATCHED_TYPE)
        wait_for(
            lambda: all(attempt_outcomes(db, operation_id) == [None] for operation_id in operation_ids),
            what="the batch to be claimed",
        )
        time.sleep(0.5)  # inside the stall
        kill_nine(worker)
        assert all(journal_entries(db, operation_id) == 0 for operation_id in operation_ids)  # none committed
        replacement = start_worker(servers, name="worker-batch-kill-replacement")
        for operation_id in operation_ids:
            assert wait_for_operation(api, operation_id, {"succeeded"}, timeout=60)["attempts"] == 2
            assert attempt_outcomes(db, operation_id) == ["lease_expired", "succeeded"]
            assert journal_entries(db, operation_id) == 1
        assert_ledger_verifies(servers)
    finally:
        for process in (worker, replacement, scheduler):
            if process is not None:
                process.stop()


def test_an_attempt_that_outlives_its_lease_is_rolled_back_and_the_operation_acts_once(
    api, bridge, db, servers
):
    # The first attempt stalls after the processor answered, past its 2 s lease: the relay hands the
    # operation to a second attempt, which finishes it. The first then finds it no longer holds the
    # operation and rolls its whole unit of work back: one processor call, one journal entry.
    scheduler = start_scheduler(servers, name="scheduler-stall")
    worker = start_worker(servers, name="worker-stall")
    try:
        operation_id = create_probe(bridge, api.keys.tenant, pause_after_processor_seconds=6)
        operation = wait_for_operation(api, operation_id, {"succeeded"}, timeout=30)
        assert operation["attempts"] == 2
        # the stalled first attempt wakes, posts (a replay), finds the operation taken and rolls back
        wait_for(
            lambda: re.search(r'"event":\s*"operation_superseded"', worker.log_text()) is not None,
            what="the stalled attempt to be superseded",
        )
        assert attempt_outcomes(db, operation_id) == ["lease_expired", "succeeded"]
        assert wait_for_operation(api, operation_id, {"succeeded"})["attempts"] == 2
        assert processor_calls(db, api.keys.installation_id) == [(f"{operation_id}:transfer", True)]
        assert journal_entries(db, operation_id) == 1
        assert_ledger_verifies(servers)
    finally:
        worker.stop()
        scheduler.stop()


def test_a_broker_outage_delays_operations_but_loses_none(api, bridge, servers, tmp_path):
    redis = EmbeddedRedis(tmp_path / "redis")
    redis_url = redis.start()
    stack_env = {"REDIS_URL": redis_url}
    scheduler = start_scheduler(servers, name="scheduler-outage", **stack_env)
    worker = start_worker(servers, name="worker-outage", **stack_env)
    try:
        before = create_probe(bridge, api.keys.tenant)
        wait_for_operation(api, before, {"succeeded"})
        redis.stop()
        accepted = [create_probe(bridge, api.keys.tenant, amount=100 + i) for i in range(5)]
        time.sleep(2)  # the relay keeps trying against a dead broker meanwhile
        assert {api.get(f"/v1/operations/{op}").json()["status"] for op in accepted} == {"pending"}
        redis.start()
        for operation_id in accepted:
            wait_for_operation(api, operation_id, {"succeeded"}, timeout=60)
        assert "relay_pass_failed" in scheduler.log_text()
        assert_ledger_verifies(servers)
    finally:
        worker.stop()
        scheduler.stop()
        redis.stop()


def test_when_the_leading_scheduler_dies_another_takes_over(api, bridge, servers):
    first = start_scheduler(servers, name="scheduler-a")
    wait_for(lambda: "scheduler_leading" in first.log_text(), what="a leader")
    second = start_scheduler(servers, name="scheduler-b")
    worker = start_worker(servers, name="worker-failover")
    try:
        time.sleep(2)
        assert "scheduler_leading" not in second.log_text()  # exactly one leads
        os.killpg(first.popen.pid, signal.SIGKILL)
        first.popen.wait(10)
        killed_at = time.monotonic()
        wait_for(lambda: "scheduler_leading" in second.log_text(), timeout=30, what="the takeover")
        assert time.monotonic() - killed_at < 30
        operation_id = create_probe(bridge, api.keys.tenant)
        wait_for_operation(api, operation_id, {"succeeded"})
        assert_ledger_verifies(servers)
    finally:
        for process in (first, second, worker):
            process.stop()


def test_the_scheduler_survives_the_loss_of_its_leader_connection_and_leads_again(api, bridge, db, servers):
    """As when PostgreSQL restarts: the leader lock's backend is gone; the process must not exit."""
    scheduler = start_scheduler(servers, name="scheduler-reconnect")
    worker = start_worker(servers, name="worker-reconnect")
    try:
        wait_for(lambda: "scheduler_leading" in scheduler.log_text(), what="a leader")
        (holder,) = db.execute(
            # advisory locks are per database, and a shared server may hold other databases' leaders
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objid = %s"
            " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
            (LEADER_LOCK_ID & 0xFFFFFFFF,),
        ).fetchone()
        db.execute("SELECT pg_terminate_backend(%s)", (holder,))
        wait_for(lambda: "scheduler_connection_lost" in scheduler.log_text(), what="the loss seen")
        wait_for(lambda: scheduler.log_text().count("scheduler_leading") >= 2, what="leading again")
        assert scheduler.popen.poll() is None
        operation_id = create_probe(bridge, api.keys.tenant)  # the relay runs again: it is carried out
        wait_for_operation(api, operation_id, {"succeeded"})
    finally:
        scheduler.stop()
        worker.stop()


def _rabbitmq_reachable() -> bool:
    import socket

    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", 5672)) == 0


@pytest.mark.skipif(
    not _rabbitmq_reachable() and os.environ.get("CI") != "true", reason="no RabbitMQ on 127.0.0.1:5672"
)
def test_operations_also_run_on_a_rabbitmq_broker(api, bridge, servers: Servers):
    amqp = {"REDIS_URL": "amqp://guest:guest@127.0.0.1:5672/%2F"}
    scheduler = start_scheduler(servers, name="scheduler-rabbitmq", **amqp)
    worker = start_worker(servers, name="worker-rabbitmq", **amqp)
    try:
        operation_id = create_probe(bridge, api.keys.tenant)
        assert wait_for_operation(api, operation_id, {"succeeded"}, timeout=60)["attempts"] == 1
        assert_ledger_verifies(servers)
    finally:
        worker.stop()
        scheduler.stop()
