"""Operations through real workers: run once, retried, failed, dead-lettered (CONVENTIONS.md §9)."""

from __future__ import annotations

import concurrent.futures

from moneyrail.engine.broker import build_broker, message_for
from tests.engine.conftest import (
    assert_ledger_verifies,
    create_probe,
    journal_entries,
    processor_calls,
    wait_for_operation,
)
from tests.engine.probe import PROBE_ACTOR
from tests.helpers import assert_error


def attempts_of(db, operation_id: str) -> list[tuple[int, str]]:
    return [
        (row[0], row[1])
        for row in db.execute(
            "SELECT number, outcome FROM operation_attempts WHERE operation_id = %s ORDER BY number",
            (operation_id,),
        )
    ]


def test_an_accepted_operation_runs_once_and_succeeds(api, bridge, db, engine_stack):
    operation_id = create_probe(bridge, api.keys.tenant)
    operation = wait_for_operation(api, operation_id, {"succeeded"})
    assert operation["object"] == "operation"
    assert operation["type"] == "probe_transfer"
    assert operation["attempts"] == 1 and operation["last_error"] is None
    assert processor_calls(db, api.keys.installation_id) == [(f"{operation_id}:transfer", True)]
    assert attempts_of(db, operation_id) == [(1, "succeeded")]
    assert journal_entries(db, operation_id) == 1


def test_the_same_message_delivered_three_times_at_once_acts_once(api, bridge, db, servers, engine_stack):
    operation_id = create_probe(bridge, api.keys.tenant)
    broker = build_broker(servers.redis_url)
    message = message_for(PROBE_ACTOR, "money", [operation_id])
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        list(pool.map(lambda _: broker.enqueue(message), range(3)))
    wait_for_operation(api, operation_id, {"succeeded"})
    assert processor_calls(db, api.keys.installation_id) == [(f"{operation_id}:transfer", True)]
    assert attempts_of(db, operation_id) == [(1, "succeeded")]
    assert journal_entries(db, operation_id) == 1
    assert_ledger_verifies(servers)


def test_a_transient_processor_fault_is_retried_until_it_recovers(api, bridge, db, servers, engine_stack):
    fault = api.post(
        "/v1/test-helpers/processor-faults",
        json={"operation_type": "transfer", "mode": "transient", "count": 2},
    )
    assert fault.status_code == 200, fault.text
    operation_id = create_probe(bridge, api.keys.tenant)
    operation = wait_for_operation(api, operation_id, {"succeeded"})
    assert operation["attempts"] == 3
    assert attempts_of(db, operation_id) == [(1, "retry"), (2, "retry"), (3, "succeeded")]
    assert processor_calls(db, api.keys.installation_id) == [(f"{operation_id}:transfer", True)]
    assert journal_entries(db, operation_id) == 1
    assert_ledger_verifies(servers)


def test_a_permanent_refusal_fails_at_once_without_retry(api, bridge, db, servers, engine_stack):
    api.post(
        "/v1/test-helpers/processor-faults",
        json={"operation_type": "transfer", "mode": "permanent", "count": 1},
    )
    operation_id = create_probe(bridge, api.keys.tenant)
    operation = wait_for_operation(api, operation_id, {"failed"})
    assert operation["attempts"] == 1
    assert "processor_error" in operation["last_error"]
    assert attempts_of(db, operation_id) == [(1, "failed")]
    assert journal_entries(db, operation_id) == 0


def test_exhausted_retries_end_in_dead_letter_kept_in_postgresql(api, bridge, db, servers, engine_stack):
    api.post(
        "/v1/test-helpers/processor-faults",
        json={"operation_type": "transfer", "mode": "transient", "count": 3},
    )
    operation_id = create_probe(bridge, api.keys.tenant)
    operation = wait_for_operation(api, operation_id, {"dead_letter"})
    assert operation["attempts"] == 3
    assert "transient fault" in operation["last_error"]
    assert [outcome for _, outcome in attempts_of(db, operation_id)] == ["retry", "retry", "dead_letter"]
    assert processor_calls(db, api.keys.installation_id) == []
    assert journal_entries(db, operation_id) == 0
    assert_ledger_verifies(servers)
    log = engine_stack.worker.log_text()
    assert "operation_dead_lettered" in log and operation_id in log


def test_unknown_and_foreign_operations_are_404(api, make_api, bridge, engine_stack):
    assert_error(api.get("/v1/operations/op_000000000000000000000000"), 404, "resource_missing", "operation")
    operation_id = create_probe(bridge, api.keys.tenant)
    assert_error(make_api().get(f"/v1/operations/{operation_id}"), 404, "resource_missing", "operation")


def outcome_event(api, operation_id: str, event_type: str) -> dict:
    events = api.get("/v1/events", params={"type": event_type, "limit": 100}).json()["data"]
    return next(event for event in events if event["data"]["object"]["id"] == operation_id)


def test_a_sandbox_operation_shows_its_sandbox_clock_through_its_run(api, bridge, engine_stack):
    """Created, claimed, finished: `created`, `updated` and the outcome events are on the sandbox clock
    (CONVENTIONS.md §11), a week ahead of the wall clock that the engine itself runs on."""
    week = 7 * 86_400
    clock_now = api.post("/v1/test-helpers/clock/advance", json={"seconds": week}).json()["now"]
    succeeded = wait_for_operation(api, create_probe(bridge, api.keys.tenant), {"succeeded"})
    api.post(
        "/v1/test-helpers/processor-faults",
        json={"operation_type": "transfer", "mode": "permanent", "count": 1},
    )
    failed = wait_for_operation(api, create_probe(bridge, api.keys.tenant), {"failed"})
    for operation, event_type in ((succeeded, "operation.succeeded"), (failed, "operation.failed")):
        assert abs(operation["created"] - clock_now) < 120, operation
        assert 0 <= operation["updated"] - operation["created"] < 120, operation
        event = outcome_event(api, operation["id"], event_type)
        assert abs(event["created"] - operation["updated"]) <= 1
        assert event["data"]["object"]["created"] == operation["created"]
        assert event["data"]["object"]["updated"] == operation["updated"]
