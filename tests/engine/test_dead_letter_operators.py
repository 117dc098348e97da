"""Operators inspect dead letters and decide: `moneyrail dead-letters list|show|retry|discard`."""

from __future__ import annotations

import json
import re

from tests.engine.conftest import create_probe, processor_calls, wait_for_operation
from tests.installations.test_cli import moneyrail

ISO_WITH_AGE = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \((just now|\d+ (s|min|h|days?) ago)\)"


def dead_letter(api, bridge, faults: int) -> str:
    api.post(
        "/v1/test-helpers/processor-faults",
        json={"operation_type": "transfer", "mode": "transient", "count": faults},
    )
    operation_id = create_probe(bridge, api.keys.tenant)
    wait_for_operation(api, operation_id, {"dead_letter"})
    return operation_id


def test_a_dead_letter_of_an_advanced_sandbox_shows_both_clocks(api, bridge, servers, engine_stack):
    week = 7 * 86_400
    clock_now = api.post("/v1/test-helpers/clock/advance", json={"seconds": week}).json()["now"]
    operation_id = dead_letter(api, bridge, faults=3)
    answered = api.get(f"/v1/operations/{operation_id}").json()
    assert abs(answered["created"] - clock_now) < 120 and answered["updated"] >= answered["created"]
    events = api.get("/v1/events", params={"type": "operation.dead_lettered"}).json()["data"]
    (event,) = [event for event in events if event["data"]["object"]["id"] == operation_id]
    assert event["data"]["object"]["updated"] == answered["updated"]

    shown = json.loads(moneyrail(servers, "dead-letters", "show", operation_id, "--json").stdout)
    assert shown["created"] == answered["created"]  # what the API shows
    assert abs(shown["accepted"] - (answered["created"] - week)) < 120  # the wall clock's moment
    human = moneyrail(servers, "dead-letters", "show", operation_id).stdout
    assert re.search(
        r"^created:\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(sandbox clock\)$", human, re.MULTILINE
    ), human
    assert re.search(
        rf"^accepted:\s+{ISO_WITH_AGE} \(wall clock, as the times below\)$", human, re.MULTILINE
    ), human


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
    assert isinstance(shown["created"], int) and isinstance(shown["history"][0]["started"], int)
    human = moneyrail(servers, "dead-letters", "show", operation_id)
    assert "#3 dead_letter" in human.stdout
    # people read ISO 8601 times in UTC with their age, never epoch seconds
    assert re.search(rf"^created:\s+{ISO_WITH_AGE}$", human.stdout, re.MULTILINE), human.stdout
    assert str(shown["created"]) not in human.stdout
    assert re.search(r"^attempt count:\s+3 of 3 ", human.stdout, re.MULTILINE), human.stdout
    assert re.search(r"^discarded:\s+no$", human.stdout, re.MULTILINE), human.stdout
    assert re.search(r"^installation:\s+inst_\w+ \(sandbox\)$", human.stdout, re.MULTILINE), human.stdout
    for raw in ("False", "True", "None"):
        assert raw not in human.stdout, human.stdout
    assert "accepted:" not in human.stdout  # one clock: the sandbox's was not advanced
    assert human.stderr == ""  # logs never on the CLI's output

    retried = moneyrail(servers, "dead-letters", "retry", operation_id, "--operator", "ops@example.com")
    assert retried.returncode == 0, retried.stderr
    operation = wait_for_operation(api, operation_id, {"succeeded"})
    # a fresh start: the count restarts (so does the backoff), and the history keeps the three failures
    assert operation["attempts"] == 1
    history = json.loads(moneyrail(servers, "dead-letters", "show", operation_id, "--json").stdout)["history"]
    assert [(attempt["number"], attempt["outcome"]) for attempt in history] == [
        (1, "retry"),
        (2, "retry"),
        (3, "dead_letter"),
        (1, "succeeded"),
    ]
    assert processor_calls(db, api.keys.installation_id) == [(f"{operation_id}:transfer", True)]
    # people read the history numbered once, the operator's retry between the two runs
    human = moneyrail(servers, "dead-letters", "show", operation_id).stdout
    history_lines = human[human.index("history (4 attempts):") :].splitlines()[1:]
    assert [re.sub(r" at .*", "", line).strip() for line in history_lines] == [
        "#1 retry",
        "#2 retry",
        "#3 dead_letter",
        "-- retried by an operator: a new run, its attempt count restarted --",
        "#4 succeeded",
    ], human
    assert all(re.search(ISO_WITH_AGE, line) for line in history_lines if line.lstrip().startswith("#"))
    assert re.search(r"^attempt count:\s+1 of \d+ ", human, re.MULTILINE), human


def test_an_operator_retries_dead_letters_by_filter_after_a_dry_run(api, bridge, db, servers, engine_stack):
    operation_ids = [dead_letter(api, bridge, faults=3) for _ in range(2)]
    other = create_probe(bridge, api.keys.tenant)
    wait_for_operation(api, other, {"succeeded"})

    nothing = moneyrail(servers, "dead-letters", "retry")
    assert nothing.returncode == 2 and "--installation" in nothing.stderr  # a selection is required

    preview = moneyrail(
        servers, "dead-letters", "retry", "-i", api.keys.installation_id, "--dry-run", "--json"
    )
    assert preview.returncode == 0, preview.stderr
    body = json.loads(preview.stdout)
    assert body["dry_run"] is True
    assert sorted(view["id"] for view in body["retried"]) == sorted(operation_ids)
    human_preview = moneyrail(servers, "dead-letters", "retry", "-i", api.keys.installation_id, "--dry-run")
    assert "2 dead letter(s) would be retried; nothing changed" in human_preview.stdout
    statuses = db.execute("SELECT status FROM operations WHERE id = ANY(%s)", (operation_ids,)).fetchall()
    assert {status for (status,) in statuses} == {"dead_letter"}  # the dry run changed nothing

    retried = moneyrail(servers, "dead-letters", "retry", "-i", api.keys.installation_id, "--json")
    assert retried.returncode == 0, retried.stderr
    assert sorted(view["id"] for view in json.loads(retried.stdout)["retried"]) == sorted(operation_ids)
    for operation_id in operation_ids:
        assert wait_for_operation(api, operation_id, {"succeeded"})["attempts"] == 1


def test_an_operator_discards_dead_letters_by_type_and_a_refusal_changes_none(
    api, bridge, db, servers, engine_stack
):
    operation_ids = [dead_letter(api, bridge, faults=3) for _ in range(2)]
    succeeded = create_probe(bridge, api.keys.tenant)
    wait_for_operation(api, succeeded, {"succeeded"})

    # one of the named operations is not a dead letter: nothing is discarded
    refused = moneyrail(servers, "dead-letters", "discard", *operation_ids, succeeded, "--reason", "by hand")
    assert refused.returncode == 1 and "not dead_letter" in refused.stderr
    assert {
        status
        for (status,) in db.execute(
            "SELECT status FROM operations WHERE id = ANY(%s)", (operation_ids,)
        ).fetchall()
    } == {"dead_letter"}

    discarded = moneyrail(
        servers,
        "dead-letters",
        "discard",
        "--type",
        "probe_transfer",
        "-i",
        api.keys.installation_id,
        "--reason",
        "refunded by hand",
        "--operator",
        "ada",
    )
    assert discarded.returncode == 0, discarded.stderr
    assert "2 dead letter(s) discarded" in discarded.stdout
    for operation_id in operation_ids:
        assert api.get(f"/v1/operations/{operation_id}").json()["status"] == "canceled"


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
