"""Operations of a batched type (policy batch_size > 1), through the real relay and workers: one
message runs several, they commit together, and one operation's failure decides only its own outcome."""

from __future__ import annotations

import concurrent.futures
from typing import Any

from moneyrail.engine.broker import build_broker, message_for
from tests.engine.conftest import (
    assert_ledger_verifies,
    attempt_outcomes,
    create_probes,
    journal_entries,
    processor_calls,
    wait_for_operation,
)
from tests.engine.probe import PROBE_ACTOR, PROBE_BATCHED_TYPE

LOCAL = {"call_processor": False}  # the work stays in the database: the ledger posting only


def _commits(db: Any, operation_ids: list[str]) -> int:
    """Database transactions that wrote these operations' journal entries."""
    row = db.execute(
        "SELECT count(DISTINCT txid) FROM journal_transactions WHERE reference = ANY(%s)", (operation_ids,)
    ).fetchone()
    return int(row[0])


def test_operations_of_a_batched_type_run_in_one_message_and_commit_together(
    api, bridge, db, servers, engine_stack
):
    operation_ids = create_probes(
        bridge, api.keys.tenant, [{**LOCAL, "amount": 100 + n} for n in range(12)], PROBE_BATCHED_TYPE
    )
    for operation_id in operation_ids:
        assert wait_for_operation(api, operation_id, {"succeeded"})["attempts"] == 1
        assert attempt_outcomes(db, operation_id) == ["succeeded"]
        assert journal_entries(db, operation_id) == 1
    # The relay sent the 12 in one message of at most 16; or in two when an earlier test left due
    # operations of the type, which go first and may shift the cut. One per message would be 12.
    assert _commits(db, operation_ids) <= 2
    # each operation's own posting, with its own amount
    amounts = dict(
        db.execute(
            "SELECT j.reference, p.amount FROM journal_transactions j"
            " JOIN postings p ON p.transaction_id = j.id WHERE j.reference = ANY(%s) AND p.amount > 0",
            (operation_ids,),
        ).fetchall()
    )
    assert amounts == {operation_id: 100 + n for n, operation_id in enumerate(operation_ids)}
    assert_ledger_verifies(servers)


def test_one_failing_operation_in_a_batch_decides_only_its_own_outcome(
    api, bridge, db, servers, engine_stack
):
    # the one operation that calls the processor meets two transient faults: once in the batch, which
    # then commits nothing, and once alone, which it retries; the others, run alone, succeed at once
    fault = api.post(
        "/v1/test-helpers/processor-faults",
        json={"operation_type": "transfer", "mode": "transient", "count": 2},
    )
    assert fault.status_code == 200, fault.text
    payloads = [{**LOCAL}] * 3 + [{"call_processor": True}] + [{**LOCAL}] * 3
    operation_ids = create_probes(bridge, api.keys.tenant, payloads, PROBE_BATCHED_TYPE)
    calling = operation_ids[3]

    assert wait_for_operation(api, calling, {"succeeded"})["attempts"] == 2
    assert attempt_outcomes(db, calling) == ["retry", "succeeded"]
    for operation_id in operation_ids[:3] + operation_ids[4:]:
        assert wait_for_operation(api, operation_id, {"succeeded"})["attempts"] == 1
        assert attempt_outcomes(db, operation_id) == ["succeeded"]
    assert all(journal_entries(db, operation_id) == 1 for operation_id in operation_ids)
    assert processor_calls(db, api.keys.installation_id) == [(f"{calling}:transfer", True)]
    assert "operation_batch_split" in engine_stack.worker.log_text()
    assert_ledger_verifies(servers)


def test_a_batch_message_delivered_three_times_at_once_acts_once_per_operation(
    api, bridge, db, servers, engine_stack
):
    operation_ids = create_probes(bridge, api.keys.tenant, [{**LOCAL}] * 8, PROBE_BATCHED_TYPE)
    broker = build_broker(servers.redis_url)
    message = message_for(PROBE_ACTOR, "money", operation_ids)  # beside the relay's own message
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        list(pool.map(lambda _: broker.enqueue(message), range(3)))
    for operation_id in operation_ids:
        assert wait_for_operation(api, operation_id, {"succeeded"})["attempts"] == 1
        assert attempt_outcomes(db, operation_id) == ["succeeded"]
        assert journal_entries(db, operation_id) == 1
    assert_ledger_verifies(servers)
