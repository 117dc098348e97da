"""Reversals: full or partial, never beyond what was transferred (also two at once); each one a new
journal entry beside the transfer's own, which never changes."""

from __future__ import annotations

import threading

import httpx

from tests.connect.support import create_account
from tests.harness import TLS
from tests.helpers import assert_error
from tests.payments.support import event_types, ledger_balance, paid
from tests.transfers.support import account_balance, committed_group, processor_transfer_calls


def paid_transfer(api, amount: int = 1000) -> tuple[dict, str]:
    payment = paid(api, 2000)
    account = create_account(api)["id"]
    group = committed_group(api, payment["id"], [(account, amount)])
    return group["transfers"][0], account


def reverse(api, transfer_id: str, **fields) -> httpx.Response:
    return api.post(f"/v1/transfers/{transfer_id}/reversals", json=fields)


def journal_of(db, reference: str) -> list[tuple[str, int]]:
    rows = db.execute(
        "SELECT j.kind, p.amount FROM journal_transactions j JOIN postings p ON p.transaction_id = j.id"
        " WHERE j.reference = %s ORDER BY p.amount",
        (reference,),
    )
    return [(row[0], row[1]) for row in rows]


def test_a_partial_then_a_full_reversal_take_the_money_back_as_new_entries(platform, db, money_stack):
    transfer, account = paid_transfer(platform, 1000)
    posted = journal_of(db, transfer["id"])
    first = reverse(platform, transfer["id"], amount=300, metadata={"why": "late"})
    assert first.status_code == 200, first.text
    body = first.json()
    assert body["id"].startswith("trr_") and body["object"] == "transfer_reversal"
    assert (body["transfer"], body["amount"], body["refund"], body["metadata"]) == (
        transfer["id"],
        300,
        None,
        {"why": "late"},
    )
    read = platform.get(f"/v1/transfers/{transfer['id']}").json()
    assert (read["status"], read["amount_reversed"]) == ("paid", 300)
    assert [item["id"] for item in read["reversals"]] == [body["id"]]
    assert account_balance(platform, account) == (0, 700)
    assert_error(reverse(platform, transfer["id"], amount=701), 400, "amount_invalid", "amount")
    rest = reverse(platform, transfer["id"]).json()  # no amount: what is left
    assert rest["amount"] == 700
    done = platform.get(f"/v1/transfers/{transfer['id']}").json()
    assert (done["status"], done["amount_reversed"], len(done["reversals"])) == ("reversed", 1000, 2)
    assert account_balance(platform, account) == (0, 0)
    # the transfer's own journal entry is as it was; each reversal is an entry of its own
    assert journal_of(db, transfer["id"]) == posted
    assert [kind for kind, _ in journal_of(db, body["id"])] == ["transfer_reversal"] * 2
    assert ledger_balance(db, platform.keys.installation_id, "balance:pending") == 2000
    assert_error(reverse(platform, transfer["id"], amount=1), 409, "resource_state_invalid")
    assert event_types(platform, transfer["id"]) == [
        "transfer.created",
        "transfer.paid",
        "transfer.reversed",
        "transfer.reversed",
    ]
    assert [
        key.endswith(":reverse")
        for key, ok in processor_transfer_calls(db, platform.keys.installation_id, "transfer_reversal")
        if ok
    ] == [True, True]


def test_two_reversals_at_the_same_moment_never_exceed_the_transfer(platform, web, db, money_stack):
    """Two connections each reverse 600 of a 1000 transfer: the locks let exactly one through."""
    transfer, account = paid_transfer(platform, 1000)
    start = threading.Barrier(2)
    statuses: list[int] = []

    def attempt() -> None:
        with httpx.Client(
            base_url=web.base_url, headers=dict(platform.headers), timeout=30, verify=TLS
        ) as client:
            start.wait()
            statuses.append(reverse(client, transfer["id"], amount=600).status_code)

    threads = [threading.Thread(target=attempt) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [200, 400]
    assert platform.get(f"/v1/transfers/{transfer['id']}").json()["amount_reversed"] == 600
    assert account_balance(platform, account) == (0, 400)


def test_a_reversal_the_processor_cannot_take_moves_nothing(platform, db, money_stack):
    transfer, account = paid_transfer(platform, 500)
    platform.post(
        "/v1/test-helpers/processor-faults",
        json={"operation_type": "transfer_reversal", "mode": "transient", "count": 1},
    )
    assert_error(reverse(platform, transfer["id"], amount=100), 503, "processor_unavailable")
    platform.post(
        "/v1/test-helpers/processor-faults",
        json={"operation_type": "transfer_reversal", "mode": "permanent", "count": 1},
    )
    assert_error(reverse(platform, transfer["id"], amount=100), 409, "resource_state_invalid")
    assert platform.get(f"/v1/transfers/{transfer['id']}").json()["amount_reversed"] == 0
    assert account_balance(platform, account) == (0, 500)
    assert reverse(platform, transfer["id"], amount=100).status_code == 200  # the faults are used up


def test_unknown_transfers_are_not_found(platform):
    assert_error(platform.get("/v1/transfers/tr_" + "0" * 24), 404, "resource_missing", "transfer")
    assert_error(reverse(platform, "tr_" + "0" * 24), 404, "resource_missing", "transfer")
