"""Operators inspect dead letters and decide: `moneyrail dead-letters list|show|retry|discard`."""

from __future__ import annotations

import json

from tests.engine.conftest import create_probe, processor_calls, wait_for_operation
from tests.installations.test_cli import moneyrail


def dead_letter(api, bridge, faults: int) -> str:
    api.post(
        "/v1/test-helpers/processor-faults",
        json={"operation_type": "transfer", "mode": "transient", "count": faults},
    )
    operation_id = create_probe(bridge, api.keys.tenant)
    wait_for_operation(api, operation_id, {"dead_letter"})
    return operation_id


def test_an_operator_lists_shows_and_retries_a_dead_letter_with_a_fresh_budget(
    api, bridge, db, servers, engine_stack
):
    operation_id = dead_letter(api, bridge, faults=3)

    listed = moneyrail(servers, "dead-letters", "list", "--installation", api.keys.installation_id, "--json")
    assert listed.returncode == 0, listed.stderr
    assert [row["id"] for row in json.loads(listed.stdout)] == [operation_id]
    by_type = json.loads(
        moneyrail(servers, "dead-letters", "list", "--type", "no_such_type", "--json").stdout
    )
    assert by_type == []

    shown = json.loads(moneyrail(servers, "dead-letters", "show", operation_id, "--json").stdout)
    assert shown["status"] == "dead_letter" and shown["attempts"] == 3
    assert [attempt["outcome"] for attempt in shown["history"]] == ["retry", "retry", "dead_letter"]
    assert all("transient fault" in attempt["error"] for attempt in shown["history"])
    human = moneyrail(servers, "dead-letters", "show", operation_id)
    assert "#3 dead_letter" in human.stdout

    retried = moneyrail(servers, "dead-letters", "retry", operation_id, "--operator", "ops@example.com")
    assert retried.returncode == 0, retried.stderr
    operation = wait_for_operation(api, operation_id, {"succeeded"})
    assert operation["attempts"] == 4  # the history keeps the three failed attempts
    assert processor_calls(db, api.keys.installation_id) == [(f"{operation_id}:transfer", True)]


def test_an_operator_discards_a_dead_letter_with_a_recorded_reason(api, bridge, servers, engine_stack):
    operation_id = dead_letter(api, bridge, faults=3)
    no_reason = moneyrail(servers, "dead-letters", "discard", operation_id, "--reason", "  ")
    assert no_reason.returncode == 1 and "needs a reason" in no_reason.stderr
    discarded = moneyrail(
        servers,
        "dead-letters",
        "discard",
        operation_id,
        "--reason",
        "refunded by hand",
        "--operator",
        "ada",
        "--json",
    )
    assert discarded.returncode == 0, discarded.stderr
    view = json.loads(discarded.stdout)
    assert (view["status"], view["discarded_by"], view["discard_reason"]) == (
        "canceled",
        "ada",
        "refunded by hand",
    )
    assert api.get(f"/v1/operations/{operation_id}").json()["status"] == "canceled"
    listed = json.loads(
        moneyrail(servers, "dead-letters", "list", "-i", api.keys.installation_id, "--json").stdout
    )
    assert listed == []


def test_an_operator_cannot_retry_what_is_not_dead_lettered(api, bridge, servers, engine_stack):
    operation_id = create_probe(bridge, api.keys.tenant)
    wait_for_operation(api, operation_id, {"succeeded"})
    refused = moneyrail(servers, "dead-letters", "retry", operation_id)
    assert refused.returncode == 1
    assert "is succeeded, not dead_letter" in refused.stderr
    missing = moneyrail(servers, "dead-letters", "show", "op_000000000000000000000000")
    assert missing.returncode == 1 and "No such operation" in missing.stderr
