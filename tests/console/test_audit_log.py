"""The audit log: append-only in PostgreSQL like the journal, one entry per decision naming every
operation it took, written in the decision's transaction, readable with `moneyrail audit list`."""

from __future__ import annotations

import json

import psycopg
import pytest

from moneyrail.engine.service import create_operation
from moneyrail.kit.clock import utcnow
from tests.console.support import moneyrail


def dead_letters_made_by_hand(bridge, tenant, count: int, operation_type: str = "audit_check") -> list[str]:
    """Dead letters of a type no worker runs: they stay where an operator's decision puts them."""

    async def work(session):
        made = []
        for number in range(count):
            operation = await create_operation(
                session, tenant.tenant, operation_type=operation_type, actor_name="nobody.runs_this"
            )
            operation.status, operation.dead_lettered_at = "dead_letter", utcnow()
            operation.last_error = f"made by hand #{number}"
            made.append(operation.id)
        return made

    return bridge.in_unit_of_work(work)


def test_the_database_refuses_to_change_or_delete_an_audit_entry(servers, db):
    entry_id = "audit_append_only_check"
    db.execute(
        "INSERT INTO audit_entries (id, actor, via, action)"
        " VALUES (%s, 'someone', 'cli', 'dead_letter.retry')",
        (entry_id,),
    )
    for statement in (
        "UPDATE audit_entries SET reason = 'rewritten' WHERE id = %s",
        "DELETE FROM audit_entries WHERE id = %s",
    ):
        with pytest.raises(psycopg.errors.IntegrityConstraintViolation, match="append-only"):
            db.execute(statement, (entry_id,))
    with pytest.raises(psycopg.errors.IntegrityConstraintViolation, match="append-only"):
        db.execute("TRUNCATE audit_entries")
    (reason,) = db.execute("SELECT reason FROM audit_entries WHERE id = %s", (entry_id,)).fetchone()
    assert reason is None


def test_a_cli_retry_of_a_selection_is_one_entry_naming_each_operation(servers, bridge, tenant, db):
    chosen = dead_letters_made_by_hand(bridge, tenant, 3)
    retried = moneyrail(
        servers,
        "dead-letters",
        "retry",
        "--installation",
        tenant.installation_id,
        "--type",
        "audit_check",
        "--operator",
        "night-shift",
        "--reason",
        "processor back up",
        "--json",
    )
    assert retried.returncode == 0, retried.stderr
    assert sorted(view["id"] for view in json.loads(retried.stdout)["retried"]) == sorted(chosen)

    listed = json.loads(moneyrail(servers, "audit", "list", "--actor", "night-shift", "--json").stdout)
    (entry,) = listed
    assert entry["action"] == "dead_letter.retry" and entry["via"] == "cli"
    assert sorted(entry["operations"]) == sorted(chosen) and entry["reason"] == "processor back up"
    assert entry["details"]["selection"]["installation"] == tenant.installation_id
    assert entry["details"]["selection"]["type"] == "audit_check"
    for operation_id in chosen:  # each operation finds it
        named = json.loads(moneyrail(servers, "audit", "list", "--operation", operation_id, "--json").stdout)
        assert [found["id"] for found in named] == [entry["id"]]
    human = moneyrail(servers, "audit", "list", "--actor", "night-shift").stdout
    assert "night-shift (cli)  dead_letter.retry 3 operations: " in human
    assert 'because "processor back up"' in human


def test_a_refused_decision_changes_nothing_and_records_nothing(servers, bridge, tenant, db):
    (waiting,) = dead_letters_made_by_hand(bridge, tenant, 1)
    db.execute("UPDATE operations SET status = 'canceled' WHERE id = %s", (waiting,))
    (other,) = dead_letters_made_by_hand(bridge, tenant, 1)
    refused = moneyrail(
        servers, "dead-letters", "discard", other, waiting, "--reason", "x", "--operator", "refused"
    )
    assert refused.returncode == 1 and "not dead_letter" in refused.stderr, refused.stderr
    (status,) = db.execute("SELECT status FROM operations WHERE id = %s", (other,)).fetchone()
    assert status == "dead_letter"
    assert json.loads(moneyrail(servers, "audit", "list", "--actor", "refused", "--json").stdout) == []


def test_audit_list_refuses_an_unknown_action(servers):
    refused = moneyrail(servers, "audit", "list", "--action", "dead_letter.delete")
    assert refused.returncode == 2 and "unknown action" in refused.stderr
