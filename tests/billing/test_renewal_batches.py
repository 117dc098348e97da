"""Sandbox renewals run batched (the `renewal` type's batch_size), through the real relay and workers:
one message renews several subscriptions, and one subscription's decline or fault decides only its own
outcome, never the others'."""

from __future__ import annotations

import pytest

from tests.billing.support import advance, clock_now, customer, invoices, ok, price, subscribe, wait_until
from tests.billing.test_subscriptions import charges_for, pay_checkout, read
from tests.checkout.support import SUCCESS_URL
from tests.engine.conftest import assert_ledger_verifies, attempt_outcomes, wait_for_operation
from tests.payment_methods.support import CHARGES_DECLINED, save_card
from tests.stacks import start_scheduler, start_worker

SUBSCRIPTIONS = 6


@pytest.fixture(scope="module")
def batch_stack(servers):
    # a lease long enough for a whole batch on a loaded machine: the test is about failures, not leases
    worker = start_worker(servers, name="worker-renewal-batches", MONEYRAIL_OPERATION_LEASE_SECONDS="60")
    scheduler = start_scheduler(servers, name="scheduler-renewal-batches")
    yield worker
    worker.stop()
    scheduler.stop()
    assert_ledger_verifies(servers)


def _active(api, plan_id: str) -> dict:
    created = subscribe(api, plan_id, customer(api)["id"])
    paid = pay_checkout(api, created["id"])
    assert paid.status_code == 303 and paid.headers["location"] == SUCCESS_URL, paid.text
    return read(api, created["id"])


def _renewal_operation(db, invoice_id: str) -> str:
    row = db.execute("SELECT operation_id FROM subscription_invoices WHERE id = %s", (invoice_id,)).fetchone()
    return str(row[0])


def _capture_commits(db, invoice_ids: list[str]) -> int:
    """Database transactions that wrote these invoices' capture postings."""
    row = db.execute(
        "SELECT count(DISTINCT j.txid) FROM journal_transactions j"
        " JOIN subscription_invoices i ON j.reference = i.payment_intent_id"
        " WHERE i.id = ANY(%s) AND j.kind = 'payment_capture'",
        (invoice_ids,),
    ).fetchone()
    return int(row[0])


def test_a_batch_with_a_declined_card_and_a_network_fault_renews_the_others_at_once(
    biller, db, servers, batch_stack
):
    plan = price(biller, 1500)
    subscriptions = [_active(biller, plan["id"]) for _ in range(SUBSCRIPTIONS)]
    declining = subscriptions[2]
    card = save_card(biller, declining["customer"], CHARGES_DECLINED)
    ok(biller.post(f"/v1/customers/{declining['customer']}/payment-methods/{card['id']}/default"))
    # the network fails the first authorization twice: once inside the batch (which then commits nothing
    # and runs each renewal alone), once more for that renewal alone, which is retried later
    fault = biller.post(
        "/v1/test-helpers/processor-faults",
        json={"operation_type": "authorize", "mode": "transient", "count": 2},
    )
    assert fault.status_code == 200, fault.text

    period_end = max(s["current_period_end"] for s in subscriptions)
    work = advance(biller, period_end - clock_now(biller) + 1)["work_done"]
    assert work["billing.renewals"] == SUBSCRIPTIONS  # all due at one instant, opened together

    renewals = {
        s["id"]: wait_until(
            lambda s=s: (
                (found := invoices(biller, s["id"]))
                and len(found) == 2
                and found[-1]["status"] != "open"
                and found[-1]
            ),
            timeout=90,
        )
        for s in subscriptions
    }
    operations = {sid: _renewal_operation(db, invoice["id"]) for sid, invoice in renewals.items()}
    outcomes = {
        sid: (wait_for_operation(biller, op, {"succeeded"}, timeout=90), attempt_outcomes(db, op))
        for sid, op in operations.items()
    }
    # exactly one renewal met the fault and was retried; every other one ran once
    retried = [sid for sid, (_, history) in outcomes.items() if history == ["retry", "succeeded"]]
    assert len(retried) == 1, outcomes
    assert all(history == ["succeeded"] for sid, (_, history) in outcomes.items() if sid not in retried)

    # the decline is that subscription's own outcome: failed and past_due; the others are paid
    failed = renewals[declining["id"]]
    assert (failed["status"], failed["failure_code"]) == ("failed", "generic_decline")
    assert read(biller, declining["id"])["status"] == "past_due"
    paid = [invoice for sid, invoice in renewals.items() if sid != declining["id"]]
    assert all(invoice["status"] == "paid" for invoice in paid)
    for subscription in subscriptions:
        if subscription["id"] != declining["id"]:
            after = read(biller, subscription["id"])
            assert (after["status"], after["access_until"]) == (
                "active",
                renewals[subscription["id"]]["period_end"],
            )

    # one charge per invoice at the network, whatever the batch's rollback and the retry asked again
    assert all(charges_for(db, invoice["id"]) == 1 for invoice in renewals.values())
    # the batch met the fault, committed nothing and ran each renewal alone
    assert "operation_batch_split" in batch_stack.log_text()
    assert_ledger_verifies(servers)


def test_renewals_due_together_share_a_message_and_a_commit(biller, db, servers, batch_stack):
    plan = price(biller, 2500)
    subscriptions = [_active(biller, plan["id"]) for _ in range(SUBSCRIPTIONS)]
    period_end = max(s["current_period_end"] for s in subscriptions)
    advance(biller, period_end - clock_now(biller) + 1)
    renewals = [
        wait_until(
            lambda s=s: (
                (found := invoices(biller, s["id"]))
                and len(found) == 2
                and found[-1]["status"] == "paid"
                and found[-1]
            ),
            timeout=90,
        )
        for s in subscriptions
    ]
    for invoice in renewals:
        operation = _renewal_operation(db, invoice["id"])
        assert attempt_outcomes(db, operation) == ["succeeded"]
        assert charges_for(db, invoice["id"]) == 1
    # one batch, or two when an earlier test's due renewals went first and shifted the cut
    assert _capture_commits(db, [invoice["id"] for invoice in renewals]) <= 2
    assert_ledger_verifies(servers)


def _captures_for(db, invoice_id: str) -> int:
    """Capture calls the sandbox network recorded for this invoice's payment (each under its own key)."""
    row = db.execute(
        "SELECT count(*) FROM sandbox_processor_calls c JOIN subscription_invoices i"
        " ON c.idempotency_key LIKE i.payment_intent_id || ':capture:%%'"
        " WHERE i.id = %s AND c.operation_type = 'capture'",
        (invoice_id,),
    ).fetchone()
    return int(row[0])


def _renew_all(biller, subscriptions: list[dict]) -> dict[str, dict]:
    period_end = max(s["current_period_end"] for s in subscriptions)
    work = advance(biller, period_end - clock_now(biller) + 1)["work_done"]
    assert work["billing.renewals"] == len(subscriptions)
    return {
        s["id"]: wait_until(
            lambda s=s: (
                (found := invoices(biller, s["id"]))
                and len(found) == 2
                and found[-1]["status"] != "open"
                and found[-1]
            ),
            timeout=90,
        )
        for s in subscriptions
    }


def _declining(biller, subscription: dict) -> None:
    card = save_card(biller, subscription["customer"], CHARGES_DECLINED)
    ok(biller.post(f"/v1/customers/{subscription['customer']}/payment-methods/{card['id']}/default"))


def test_a_decline_inside_a_batch_is_its_own_outcome_and_the_batch_commits_together(
    biller, db, servers, batch_stack
):
    plan = price(biller, 1700)
    subscriptions = [_active(biller, plan["id"]) for _ in range(SUBSCRIPTIONS)]
    declining = subscriptions[3]
    _declining(biller, declining)
    renewals = _renew_all(biller, subscriptions)

    for sid, invoice in renewals.items():
        operation = _renewal_operation(db, invoice["id"])
        assert wait_for_operation(biller, operation, {"succeeded"}, timeout=90)
        assert attempt_outcomes(db, operation) == ["succeeded"]  # nobody ran twice, nothing split
        assert charges_for(db, invoice["id"]) == 1
        if sid == declining["id"]:
            assert (invoice["status"], invoice["failure_code"]) == ("failed", "generic_decline")
            assert _captures_for(db, invoice["id"]) == 0
            assert read(biller, sid)["status"] == "past_due"
            assert any(
                e["data"]["object"]["id"] == invoice["id"]
                for e in ok(
                    biller.get("/v1/events", params={"type": "subscription.invoice.failed", "limit": 100})
                )["data"]
            )
        else:
            assert invoice["status"] == "paid"
            assert _captures_for(db, invoice["id"]) == 1
            after = read(biller, sid)
            assert (after["status"], after["access_until"]) == ("active", invoice["period_end"])
    paid = [invoice["id"] for sid, invoice in renewals.items() if sid != declining["id"]]
    # the decline did not split the batch: the paid ones' postings share a commit (two when an earlier
    # test's renewals shifted the cut)
    assert _capture_commits(db, paid) <= 2
    paid_events = ok(biller.get("/v1/events", params={"type": "subscription.invoice.paid", "limit": 100}))
    announced = {e["data"]["object"]["id"] for e in paid_events["data"]}
    assert set(paid) <= announced
    # written set-based: the batch handler's captures and invoices paid together
    assert "subscription_invoices_paid" in batch_stack.log_text()
    assert_ledger_verifies(servers)


def test_a_network_fault_midway_through_a_batch_charges_nobody_twice(biller, db, servers, batch_stack):
    plan = price(biller, 1900)
    subscriptions = [_active(biller, plan["id"]) for _ in range(SUBSCRIPTIONS)]
    declining = subscriptions[1]
    _declining(biller, declining)
    # the network fails the first capture once: the batch's exchange has authorized one charge by then
    # (recorded under its key), so the batch commits nothing and each renewal runs alone, the first one
    # replaying its authorization and capturing it then
    fault = biller.post(
        "/v1/test-helpers/processor-faults",
        json={"operation_type": "capture", "mode": "transient", "count": 1},
    )
    assert fault.status_code == 200, fault.text
    renewals = _renew_all(biller, subscriptions)

    for sid, invoice in renewals.items():
        operation = _renewal_operation(db, invoice["id"])
        assert wait_for_operation(biller, operation, {"succeeded"}, timeout=90)
        assert charges_for(db, invoice["id"]) == 1  # one authorization per invoice at the network
        if sid == declining["id"]:
            assert (invoice["status"], invoice["failure_code"]) == ("failed", "generic_decline")
            assert read(biller, sid)["status"] == "past_due"
            assert _captures_for(db, invoice["id"]) == 0
        else:
            assert invoice["status"] == "paid"
            assert _captures_for(db, invoice["id"]) == 1
            assert read(biller, sid)["access_until"] == invoice["period_end"]
    # one captured authorization per paid invoice's payment, one capture posting each
    for sid, invoice in renewals.items():
        if sid == declining["id"]:
            continue
        row = db.execute(
            "SELECT count(*) FROM sandbox_authorizations a JOIN payment_intents p ON p.id = a.reference"
            " JOIN subscription_invoices i ON i.payment_intent_id = p.id"
            " WHERE i.id = %s AND a.status = 'captured'",
            (invoice["id"],),
        ).fetchone()
        assert int(row[0]) == 1
    assert "operation_batch_split" in batch_stack.log_text()
    assert_ledger_verifies(servers)
