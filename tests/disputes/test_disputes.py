"""Disputes over HTTP with a real worker and scheduler: opening (the sandbox helper and the dispute
card on the clock), the money withdrawn and reinstated in the ledger, evidence, closing, outcomes."""

from __future__ import annotations

from tests.connect.support import create_account
from tests.engine.conftest import assert_ledger_verifies
from tests.helpers import assert_error
from tests.payments.support import (
    DISPUTE_LATER,
    SUCCEEDS,
    confirm,
    create_payment,
    event_types,
    ledger_balance,
    paid,
)
from tests.transfers.support import account_balance, group_of

from .support import DAY, FEE, HOUR, advance, disputed, open_dispute, withdrawn


def proceeds(db, installation_id: str) -> int:
    return ledger_balance(db, installation_id, "balance:pending") + ledger_balance(
        db, installation_id, "balance:available"
    )


def test_the_helper_opens_a_dispute_and_withdraws_the_amount_and_the_fee(api, db, servers, money_stack):
    payment = paid(api, 5000)
    before = proceeds(db, api.keys.installation_id)
    response = open_dispute(api, payment["id"], reason="product_not_received", amount=3000)
    assert response.status_code == 200, response.text
    opened = response.json()
    assert opened["id"].startswith("dp_") and opened["object"] == "dispute"
    assert (opened["payment_intent"], opened["amount"], opened["currency"], opened["reason"]) == (
        payment["id"],
        3000,
        "eur",
        "product_not_received",
    )
    assert opened["status"] == "needs_response"
    assert opened["evidence_details"]["due_by"] - opened["created"] in range(7 * DAY - 5, 7 * DAY + 5)
    assert opened["evidence_details"]["submission_count"] == 0
    dispute = withdrawn(api, opened["id"])
    assert (dispute["amount_withdrawn"], dispute["fee_amount"]) == (3000 + FEE, FEE)
    assert proceeds(db, api.keys.installation_id) == before - 3000 - FEE
    assert ledger_balance(db, api.keys.installation_id, "world:dispute_fees") == FEE
    listed = api.get("/v1/disputes").json()
    assert [item["id"] for item in listed["data"]] == [opened["id"]]
    assert api.get("/v1/disputes", params={"payment_intent": "pi_other"}).json()["data"] == []
    assert event_types(api, opened["id"]) == ["charge.dispute.created", "charge.dispute.funds_withdrawn"]
    assert_ledger_verifies(servers)  # explicitly too, beside the module's and the session's checks


def test_the_dispute_card_opens_a_dispute_some_sandbox_hours_after_capture(api, db, money_stack):
    payment = create_payment(api, 2500)
    assert confirm(api, payment, DISPUTE_LATER).json()["status"] == "succeeded"
    paid(api, 1000)  # an ordinary card's payment is never disputed
    advance(api, 5 * HOUR)
    assert api.get("/v1/disputes").json()["data"] == []
    advance(api, 2 * HOUR)
    (dispute,) = api.get("/v1/disputes").json()["data"]
    assert (dispute["payment_intent"], dispute["amount"], dispute["reason"]) == (
        payment["id"],
        2500,
        "fraudulent",
    )
    assert withdrawn(api, dispute["id"])["amount_withdrawn"] == 2500 + FEE
    advance(api, HOUR)  # the network opens it once
    assert len(api.get("/v1/disputes").json()["data"]) == 1


def test_winning_evidence_reinstates_the_amount_and_the_fee_stays_spent(api, db, money_stack):
    payment = paid(api, 4000)
    before = proceeds(db, api.keys.installation_id)
    dispute = disputed(api, payment["id"])
    saved = api.post(
        f"/v1/disputes/{dispute['id']}/evidence",
        json={"evidence": {"product_description": "Blue mug", "uncategorized_text": "winning_evidence"}},
    )
    assert saved.status_code == 200, saved.text
    assert (saved.json()["status"], saved.json()["evidence_details"]["has_evidence"]) == (
        "needs_response",
        True,
    )
    submitted = api.post(f"/v1/disputes/{dispute['id']}/evidence", json={"submit": True}).json()
    assert submitted["status"] == "under_review"
    assert submitted["evidence"] == {
        "product_description": "Blue mug",
        "uncategorized_text": "winning_evidence",
    }
    assert submitted["evidence_details"]["submission_count"] == 1
    advance(api, 23 * HOUR)
    assert api.get(f"/v1/disputes/{dispute['id']}").json()["status"] == "under_review"
    advance(api, 2 * HOUR)
    won = api.get(f"/v1/disputes/{dispute['id']}").json()
    assert (won["status"], won["amount_reinstated"]) == ("won", 4000)
    assert proceeds(db, api.keys.installation_id) == before - FEE
    assert event_types(api, dispute["id"]) == [
        "charge.dispute.created",
        "charge.dispute.funds_withdrawn",
        "charge.dispute.updated",
        "charge.dispute.updated",
        "charge.dispute.funds_reinstated",
        "charge.dispute.closed",
    ]


def test_evidence_without_the_winning_phrase_loses_and_nothing_comes_back(api, db, money_stack):
    payment = paid(api, 3000)
    before = proceeds(db, api.keys.installation_id)
    dispute = disputed(api, payment["id"])
    body = {"evidence": {"uncategorized_text": "the customer received it"}, "submit": True}
    assert api.post(f"/v1/disputes/{dispute['id']}/evidence", json=body).json()["status"] == "under_review"
    advance(api, 2 * DAY)
    lost = api.get(f"/v1/disputes/{dispute['id']}").json()
    assert (lost["status"], lost["amount_reinstated"]) == ("lost", 0)
    assert proceeds(db, api.keys.installation_id) == before - 3000 - FEE


def test_a_dispute_without_evidence_is_lost_at_its_deadline(api, money_stack):
    dispute = disputed(api, paid(api, 2000)["id"])
    advance(api, 6 * DAY)
    assert api.get(f"/v1/disputes/{dispute['id']}").json()["status"] == "needs_response"
    advance(api, 1 * DAY + HOUR)
    late = api.get(f"/v1/disputes/{dispute['id']}").json()
    assert late["status"] == "lost"


def test_evidence_after_the_deadline_or_after_submission_is_refused_and_changes_nothing(api, money_stack):
    late = disputed(api, paid(api, 2000)["id"])
    submitted = disputed(api, paid(api, 2000)["id"])
    sent = api.post(
        f"/v1/disputes/{submitted['id']}/evidence",
        json={"evidence": {"uncategorized_text": "first"}, "submit": True},
    )
    assert sent.status_code == 200
    again = {"evidence": {"uncategorized_text": "second"}}
    assert_error(
        api.post(f"/v1/disputes/{submitted['id']}/evidence", json=again), 409, "resource_state_invalid"
    )
    assert_error(
        api.post(f"/v1/disputes/{submitted['id']}/evidence", json={"submit": True}),
        409,
        "resource_state_invalid",
    )
    assert api.get(f"/v1/disputes/{submitted['id']}").json()["evidence"] == {"uncategorized_text": "first"}
    advance(api, 7 * DAY + 60)  # past the first's deadline (the second was decided meanwhile)
    refused = api.post(f"/v1/disputes/{late['id']}/evidence", json=again)
    assert_error(refused, 409, "resource_state_invalid")
    assert api.get(f"/v1/disputes/{late['id']}").json()["evidence"] == {}


def test_closing_accepts_the_loss_once_and_closing_twice_is_refused(api, db, money_stack):
    payment = paid(api, 2000)
    dispute = disputed(api, payment["id"])
    before = proceeds(db, api.keys.installation_id)
    closed = api.post(f"/v1/disputes/{dispute['id']}/close")
    assert closed.status_code == 200, closed.text
    assert closed.json()["status"] == "lost"
    assert_error(api.post(f"/v1/disputes/{dispute['id']}/close"), 409, "resource_state_invalid")
    refused = api.post(
        f"/v1/disputes/{dispute['id']}/evidence", json={"evidence": {"uncategorized_text": "x"}}
    )
    assert_error(refused, 409, "resource_state_invalid")
    advance(api, 8 * DAY)
    after = api.get(f"/v1/disputes/{dispute['id']}").json()
    assert (after["status"], after["amount_reinstated"]) == ("lost", 0)
    assert proceeds(db, api.keys.installation_id) == before
    assert event_types(api, dispute["id"])[-1] == "charge.dispute.closed"


def test_the_helper_refuses_what_cannot_be_disputed(api, make_api, money_stack):
    uncaptured = create_payment(api, 2000, capture_method="manual")
    assert confirm(api, uncaptured, SUCCEEDS).json()["status"] == "requires_capture"
    assert_error(open_dispute(api, uncaptured["id"]), 409, "resource_state_invalid")
    payment = paid(api, 2000)
    assert_error(open_dispute(api, payment["id"], amount=2001), 400, "amount_invalid", "amount")
    assert_error(open_dispute(api, payment["id"], reason="because"), 400, "parameter_invalid", "reason")
    assert_error(open_dispute(api, "pi_000000000000000000000000"), 400, "resource_missing", "payment_intent")
    other = make_api()
    assert_error(open_dispute(other, payment["id"]), 400, "resource_missing", "payment_intent")
    assert open_dispute(api, payment["id"]).status_code == 200
    assert_error(open_dispute(api, payment["id"]), 409, "resource_state_invalid")
    assert len(api.get("/v1/disputes").json()["data"]) == 1
    assert_error(
        other.get(f"/v1/disputes/{api.get('/v1/disputes').json()['data'][0]['id']}"),
        404,
        "resource_missing",
        "dispute",
    )


def test_on_a_platform_the_merchants_transfer_is_reversed_for_the_amount_and_the_fee(
    platform, db, money_stack
):
    merchant = create_account(platform, kind="merchant")["id"]
    courier = create_account(platform, kind="courier")["id"]
    payment = paid(
        platform,
        10000,
        distribution={
            "allocations": [
                {"recipient": merchant, "role": "merchant", "amount": 8000},
                {"recipient": courier, "role": "other", "amount": 2000},
            ]
        },
    )
    group = group_of(platform, payment["id"])
    assert group["status"] == "committed"
    merchant_before = sum(account_balance(platform, merchant))
    courier_before = sum(account_balance(platform, courier))
    dispute = disputed(platform, payment["id"], amount=5000)
    assert (dispute["amount_withdrawn"], dispute["amount_reversed"]) == (5000 + FEE, 5000 + FEE)
    assert sum(account_balance(platform, merchant)) == merchant_before - 5000 - FEE
    assert sum(account_balance(platform, courier)) == courier_before  # not the merchant's share
    transfers = platform.get("/v1/transfers", params={"source_transaction": payment["id"]}).json()["data"]
    merchant_transfer = next(item for item in transfers if item["destination"] == merchant)
    assert merchant_transfer["amount_reversed"] == 5000 + FEE
    assert merchant_transfer["reversals"][0]["metadata"] == {"dispute": dispute["id"]}


def test_a_withdrawal_retried_after_a_processor_fault_reverses_each_transfer_once(platform, db, money_stack):
    merchant = create_account(platform, kind="merchant")["id"]
    payment = paid(
        platform,
        6000,
        distribution={"allocations": [{"recipient": merchant, "role": "merchant", "amount": 6000}]},
    )
    assert group_of(platform, payment["id"])["status"] == "committed"
    fault = {"operation_type": "transfer_reversal", "mode": "transient", "count": 2}
    assert platform.post("/v1/test-helpers/processor-faults", json=fault).status_code == 200
    dispute = disputed(platform, payment["id"], amount=2000)
    assert (dispute["amount_withdrawn"], dispute["amount_reversed"]) == (2000 + FEE, 2000 + FEE)
    reversals = db.execute(
        "SELECT idempotency_key FROM sandbox_processor_calls"
        " WHERE installation_id = %s AND operation_type = 'transfer_reversal' AND succeeded",
        (platform.keys.installation_id,),
    ).fetchall()
    assert len(reversals) == 1  # two faulted attempts, then one reversal under the operation's key
    operation = db.execute(
        "SELECT withdrawal_operation_id FROM disputes WHERE id = %s", (dispute["id"],)
    ).fetchone()[0]
    assert reversals[0][0].startswith(f"{operation}:reverse:tr_")
    assert platform.get(f"/v1/operations/{operation}").json()["attempts"] == 3
    entries = db.execute(
        "SELECT count(*) FROM journal_transactions WHERE reference = %s", (dispute["id"],)
    ).fetchone()[0]
    assert entries == 1  # one withdrawal entry, whatever the retries
