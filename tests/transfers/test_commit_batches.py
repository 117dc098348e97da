"""Sandbox allocation commits run batched (transfers.COMMIT_BATCH to a message), through the real relay
and workers: several commits share one processor call and one database commit, and one group's fault or
refusal decides only its own outcome, never the others'. Every transfer is made once."""

from __future__ import annotations

import pytest

from moneyrail.processor.interface import ProcessorRefused
from moneyrail.processor.sandbox import SandboxProcessor
from tests.connect.support import create_account
from tests.engine.conftest import assert_ledger_verifies, attempt_outcomes, wait_for_operation
from tests.payments.support import event_types, ledger_balance, paid
from tests.stacks import start_scheduler, start_worker
from tests.transfers.support import FINAL, account_balance, allocate, processor_transfer_calls, reserve

GROUPS = 6
SHARES = (500, 300, 200, 100)  # four recipients, as the benchmark's groups


@pytest.fixture
def fleet_later(servers, request):
    """The relay and a worker started when the test has requested every commit, so the relay finds them
    all due at once and packs them into one message, as a burst of requests leaves them."""
    started = []

    def start():
        # a lease long enough for a whole batch on a loaded machine: the test is about faults, not leases
        started.append(start_scheduler(servers, name=f"scheduler-{request.node.name}"))
        started.append(
            start_worker(servers, name=f"worker-{request.node.name}", MONEYRAIL_OPERATION_LEASE_SECONDS="60")
        )
        return started[-1]

    yield start
    for process in started:
        process.stop()
    assert_ledger_verifies(servers)


def _open_groups(api, recipients: list[str]) -> list[dict]:
    groups = []
    for _ in range(GROUPS):
        payment = paid(api, 3000)
        group = reserve(api, payment["id"], sum(SHARES)).json()
        for recipient, amount in zip(recipients, SHARES, strict=True):
            assert allocate(api, group["id"], recipient, amount).status_code == 200
        groups.append(api.get(f"/v1/allocation-groups/{group['id']}").json())
    return groups


def _commit_all(api, groups: list[dict]) -> list[str]:
    operations = []
    for group in groups:
        response = api.post(f"/v1/allocation-groups/{group['id']}/commit")
        assert response.status_code == 202, response.text
        operations.append(response.json()["id"])
    return operations


def _keys(operation_id: str, group: dict) -> list[str]:
    return [f"{operation_id}:{allocation['id']}" for allocation in group["allocations"]]


def _transfer_commits(db, group_ids: list[str]) -> int:
    """Database transactions that wrote these groups' transfer journal entries."""
    row = db.execute(
        "SELECT count(DISTINCT j.txid) FROM journal_transactions j JOIN transfers t ON j.reference = t.id"
        " WHERE t.allocation_group_id = ANY(%s) AND j.kind = 'transfer'",
        (group_ids,),
    ).fetchone()
    return int(row[0])


def _batch_calls(db, installation_id: str) -> int:
    row = db.execute(
        "SELECT count(*) FROM sandbox_processor_calls"
        " WHERE installation_id = %s AND operation_type = 'transfer_batch'",
        (installation_id,),
    ).fetchone()
    return int(row[0])


def _recipients(api) -> list[str]:
    return [create_account(api)["id"] for _ in SHARES]


def test_commits_requested_together_share_one_processor_call_and_one_database_commit(
    platform, db, fleet_later
):
    recipients = _recipients(platform)
    groups = _open_groups(platform, recipients)
    operations = _commit_all(platform, groups)
    fleet_later()
    for operation_id, group in zip(operations, groups, strict=True):
        done = wait_for_operation(platform, operation_id, FINAL)
        assert (done["status"], done["attempts"]) == ("succeeded", 1)
        assert attempt_outcomes(db, operation_id) == ["succeeded"]
        committed = platform.get(f"/v1/allocation-groups/{group['id']}").json()
        assert committed["status"] == "committed"
        assert [t["status"] for t in committed["transfers"]] == ["paid"] * len(SHARES)
        assert event_types(platform, committed["transfers"][0]["id"]) == ["transfer.created", "transfer.paid"]
    # one message of at most COMMIT_BATCH: one processor call and one commit; or two when an earlier
    # test left due commits, which go first and may shift the cut. One per message would be 6.
    assert _transfer_commits(db, [group["id"] for group in groups]) <= 2
    assert _batch_calls(db, platform.keys.installation_id) <= 2
    expected = [
        key
        for operation_id, group in zip(operations, groups, strict=True)
        for key in _keys(operation_id, group)
    ]
    assert sorted(processor_transfer_calls(db, platform.keys.installation_id)) == sorted(
        (key, True) for key in expected
    )
    for recipient, amount in zip(recipients, SHARES, strict=True):
        assert account_balance(platform, recipient) == (0, GROUPS * amount)
    assert ledger_balance(db, platform.keys.installation_id, "balance:pending") == GROUPS * (
        3000 - sum(SHARES)
    )


def test_a_transient_fault_in_a_batch_is_retried_by_one_commit_and_the_others_commit_once(
    platform, db, fleet_later
):
    recipients = _recipients(platform)
    groups = _open_groups(platform, recipients)
    operations = _commit_all(platform, groups)
    # the processor fails twice: the batch's one call (the batch then commits nothing and each commit
    # runs alone), and the first commit alone, which is retried later
    fault = platform.post(
        "/v1/test-helpers/processor-faults",
        json={"operation_type": "transfer", "mode": "transient", "count": 2},
    )
    assert fault.status_code == 200, fault.text
    worker = fleet_later()
    outcomes = {}
    for operation_id in operations:
        done = wait_for_operation(platform, operation_id, FINAL)
        assert done["status"] == "succeeded", done
        outcomes[operation_id] = attempt_outcomes(db, operation_id)
    assert sorted(outcomes.values()) == [["retry", "succeeded"]] + [["succeeded"]] * (GROUPS - 1)
    assert "operation_batch_split" in worker.log_text()
    # each transfer made once, under its own key, whichever call made it
    expected = [
        key
        for operation_id, group in zip(operations, groups, strict=True)
        for key in _keys(operation_id, group)
    ]
    assert sorted(processor_transfer_calls(db, platform.keys.installation_id)) == sorted(
        (key, True) for key in expected
    )
    for group in groups:
        assert platform.get(f"/v1/allocation-groups/{group['id']}").json()["status"] == "committed"
    for recipient, amount in zip(recipients, SHARES, strict=True):
        assert account_balance(platform, recipient) == (0, GROUPS * amount)


def test_a_refused_transfer_in_a_batch_dead_letters_only_its_group_and_the_others_commit_once(
    platform, bridge, db, fleet_later
):
    recipients = _recipients(platform)
    groups = _open_groups(platform, recipients)
    operations = _commit_all(platform, groups)
    refused_at = 2
    refused_key = _keys(operations[refused_at], groups[refused_at])[1]
    # the processor has refused this group's second transfer already (a worker asked and died before
    # it could commit): every later call answers that key with the same refusal
    platform.post(
        "/v1/test-helpers/processor-faults",
        json={"operation_type": "transfer", "mode": "permanent", "count": 1},
    )
    processor = SandboxProcessor(bridge.sessionmaker)
    with pytest.raises(ProcessorRefused):
        bridge.run(
            processor.create_transfer(
                platform.keys.tenant,
                idempotency_key=refused_key,
                amount=SHARES[1],
                currency="eur",
                destination=recipients[1],
            )
        )
    fleet_later()
    for number, operation_id in enumerate(operations):
        done = wait_for_operation(platform, operation_id, FINAL, timeout=60)
        group = platform.get(f"/v1/allocation-groups/{groups[number]['id']}").json()
        if number == refused_at:
            assert done["status"] == "dead_letter", done
            # final means final: the group and its transfers wait for an operator, the refusal shown
            assert (group["status"], group["last_operation_error"]["code"]) == (
                "committing",
                "processor_error",
            )
            assert [t["status"] for t in group["transfers"]] == ["pending"] * len(SHARES)
            assert [(t["last_operation_error"] or {}).get("code") for t in group["transfers"]] == [
                "processor_error"
            ] * len(SHARES)
        else:
            assert (done["status"], done["attempts"]) == ("succeeded", 1), done
            assert group["status"] == "committed"
            assert [t["status"] for t in group["transfers"]] == ["paid"] * len(SHARES)
    # the refused group's other transfers were made by the batch's call and wait, done at the processor,
    # for an operator's retry to book them; every transfer has one successful call under its key
    calls = dict(processor_transfer_calls(db, platform.keys.installation_id))
    assert calls.pop(refused_key) is False
    expected = [
        key
        for operation_id, group in zip(operations, groups, strict=True)
        for key in _keys(operation_id, group)
    ]
    assert sorted(calls) == sorted(key for key in expected if key != refused_key)
    assert all(calls.values())
    for recipient, amount in zip(recipients, SHARES, strict=True):
        assert account_balance(platform, recipient) == (0, (GROUPS - 1) * amount)
