"""A dispute whose withdrawal dead-letters is still decided on the network's clock, and shows its
withdrawal as stuck; an operator's retry of the dead letter (`moneyrail dead-letters retry`) withdraws
the money then, and reinstates it at once if the dispute was won. Over HTTP, with a real worker and
scheduler, on a platform (its withdrawal reverses the merchant's transfer through the processor, whose
faults the sandbox helper sets)."""

from __future__ import annotations

import pytest

from tests.connect.support import create_account
from tests.engine.conftest import assert_ledger_verifies, wait_for_operation
from tests.installations.test_cli import moneyrail
from tests.payments.support import event_types, ledger_balance, paid
from tests.transfers.support import account_balance, group_of

from .support import FEE, HOUR, advance, open_dispute

DISPUTED = 2000
EVIDENCE = {"won": "winning_evidence", "lost": "the parcel was delivered"}


def faults(api, count: int) -> None:
    body = {"operation_type": "transfer_reversal", "mode": "transient", "count": count}
    injected = api.post("/v1/test-helpers/processor-faults", json=body)
    assert injected.status_code == 200, injected.text


@pytest.mark.parametrize("outcome", ["won", "lost"])
def test_a_dead_lettered_withdrawal_does_not_hold_back_the_decision_and_its_replay_settles_the_books(
    platform, db, servers, money_stack, outcome
):
    merchant = create_account(platform, kind="merchant")["id"]
    payment = paid(
        platform,
        6000,
        distribution={"allocations": [{"recipient": merchant, "role": "merchant", "amount": 6000}]},
    )
    assert group_of(platform, payment["id"])["status"] == "committed"
    merchant_before = sum(account_balance(platform, merchant))
    installation = platform.keys.installation_id
    network_before = ledger_balance(db, installation, "world:card_network")

    # the first attempts' reversals fail; with a budget of one attempt, the withdrawal dead-letters after
    # one or two of them (the budget is cut while the first may be running). A fault left over costs the
    # operator's retry one more attempt, within its fresh budget.
    faults(platform, 2)
    opened = open_dispute(platform, payment["id"], amount=DISPUTED)
    assert opened.status_code == 200, opened.text
    dispute = opened.json()
    operation = dispute["withdrawal_operation"]
    assert operation.startswith("op_") and dispute["withdrawal_status"] in {"pending", "running"}
    db.execute("UPDATE operations SET max_attempts = 1 WHERE id = %s", (operation,))
    wait_for_operation(platform, operation, {"dead_letter"}, timeout=60)

    stuck = platform.get(f"/v1/disputes/{dispute['id']}").json()
    assert (stuck["status"], stuck["withdrawal_status"], stuck["amount_withdrawn"]) == (
        "needs_response",
        "dead_letter",
        0,
    )
    submitted = platform.post(
        f"/v1/disputes/{dispute['id']}/evidence",
        json={"evidence": {"uncategorized_text": EVIDENCE[outcome]}, "submit": True},
    )
    assert submitted.status_code == 200, submitted.text
    advance(platform, 25 * HOUR)

    # decided although its money never moved, and saying so
    decided = platform.get(f"/v1/disputes/{dispute['id']}").json()
    assert (decided["status"], decided["withdrawal_status"]) == (outcome, "dead_letter")
    assert (decided["amount_withdrawn"], decided["amount_reinstated"]) == (0, 0)
    assert "charge.dispute.closed" in event_types(platform, dispute["id"])
    assert ledger_balance(db, installation, "world:card_network") == network_before
    assert ledger_balance(db, installation, "world:dispute_fees") == 0
    assert sum(account_balance(platform, merchant)) == merchant_before

    retried = moneyrail(servers, "dead-letters", "retry", operation, "--operator", "ops@example.com")
    assert retried.returncode == 0, retried.stderr
    assert wait_for_operation(platform, operation, {"succeeded"}, timeout=60)["status"] == "succeeded"

    settled = platform.get(f"/v1/disputes/{dispute['id']}").json()
    reinstated = DISPUTED if outcome == "won" else 0
    assert (settled["status"], settled["withdrawal_status"]) == (outcome, "succeeded")
    assert (settled["amount_withdrawn"], settled["amount_reversed"], settled["amount_reinstated"]) == (
        DISPUTED + FEE,
        DISPUTED + FEE,
        reinstated,
    )
    assert sum(account_balance(platform, merchant)) == merchant_before - DISPUTED - FEE
    assert ledger_balance(db, installation, "world:card_network") == network_before + DISPUTED - reinstated
    assert ledger_balance(db, installation, "world:dispute_fees") == FEE
    money_events = [
        kind
        for kind in event_types(platform, dispute["id"])
        if kind in {"charge.dispute.funds_withdrawn", "charge.dispute.funds_reinstated"}
    ]
    assert money_events == ["charge.dispute.funds_withdrawn"] + (
        ["charge.dispute.funds_reinstated"] if outcome == "won" else []
    )
    # replaying again finds the work done: nothing moves twice
    assert (
        moneyrail(servers, "dead-letters", "retry", operation, "--operator", "ops@example.com").returncode
        != 0
    )
    entries = db.execute(
        "SELECT kind, count(*) FROM journal_transactions WHERE reference = %s GROUP BY kind", (dispute["id"],)
    ).fetchall()
    assert dict(entries) == {"dispute_withdrawal": 1} | (
        {"dispute_reinstatement": 1} if outcome == "won" else {}
    )
    assert_ledger_verifies(servers)
