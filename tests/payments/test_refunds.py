"""Refunds: accepted over HTTP, carried out by real worker processes through the sandbox processor."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from moneyrail.engine.service import discard_dead_letter
from moneyrail.processor.sandbox import SandboxProcessor
from tests.engine.conftest import assert_ledger_verifies, wait_for_operation
from tests.helpers import assert_error, count_rows
from tests.payments.support import balance_of, confirm, create_payment, event_types, ledger_balance, paid
from tests.stacks import start_scheduler, start_worker


@pytest.fixture(scope="module")
def refund_stack(servers):
    worker = start_worker(servers, name="worker-refunds")
    scheduler = start_scheduler(servers, name="scheduler-refunds")
    yield worker
    worker.stop()
    scheduler.stop()
    assert_ledger_verifies(servers)


def refund(api, payment_id: str, **fields) -> httpx.Response:
    return api.post("/v1/refunds", json={"payment_intent": payment_id, **fields})


def settled(api, created: dict) -> dict:
    wait_for_operation(api, created["operation"], {"succeeded", "failed", "dead_letter"})
    return api.get(f"/v1/refunds/{created['id']}").json()


def test_a_full_refund_is_processed_by_a_worker_and_amount_refunded_follows(api, db, refund_stack):
    payment = paid(api, 3000)
    created = refund(api, payment["id"], reason="requested_by_customer")
    assert created.status_code == 200, created.text
    body = created.json()
    assert body["object"] == "refund" and body["id"].startswith("re_")
    assert (body["amount"], body["currency"], body["status"]) == (3000, "eur", "pending")
    assert body["operation"].startswith("op_")
    done = settled(api, body)
    assert done["status"] == "succeeded"
    after = api.get(f"/v1/payment-intents/{payment['id']}").json()
    assert after["amount_refunded"] == 3000
    installation = api.keys.installation_id
    assert ledger_balance(db, installation, "world:card_network") == 0
    assert ledger_balance(db, installation, "balance:pending") == 0
    assert event_types(api, body["id"]) == ["refund.created", "refund.updated"]


def test_partial_refunds_add_up_to_the_captured_amount_and_never_past_it(api, refund_stack):
    payment = paid(api, 1000)
    first = refund(api, payment["id"], amount=300).json()
    second = refund(api, payment["id"], amount=500).json()
    over = refund(api, payment["id"], amount=201)
    assert_error(over, 400, "amount_invalid", "amount")
    rest = refund(api, payment["id"]).json()  # no amount: what is left
    assert rest["amount"] == 200
    for created in (first, second, rest):
        assert settled(api, created)["status"] == "succeeded"
    assert api.get(f"/v1/payment-intents/{payment['id']}").json()["amount_refunded"] == 1000
    assert_error(refund(api, payment["id"], amount=1), 409, "resource_state_invalid")
    listed = api.get("/v1/refunds", params={"payment_intent": payment["id"]}).json()["data"]
    assert sorted(item["amount"] for item in listed) == [200, 300, 500]


def test_two_refunds_at_the_same_moment_never_exceed_what_was_captured(api, db, refund_stack):
    payment = paid(api, 1000)

    def attempt(_: int) -> int:
        return refund(api, payment["id"], amount=700).status_code

    with ThreadPoolExecutor(max_workers=4) as pool:
        statuses = sorted(pool.map(attempt, range(4)))
    assert statuses == [200, 400, 400, 400]
    rows = db.execute(
        "SELECT coalesce(sum(amount), 0) FROM refunds WHERE payment_intent_id = %s", (payment["id"],)
    ).fetchone()
    assert rows[0] == 700


def test_a_refund_of_a_payment_that_did_not_succeed_is_refused_and_creates_nothing(api, db, refund_stack):
    held = create_payment(api, capture_method="manual")
    confirm(api, held)
    assert_error(refund(api, held["id"]), 409, "resource_state_invalid")
    assert_error(refund(api, "pi_000000000000000000000000"), 400, "resource_missing", "payment_intent")
    assert count_rows(db, "refunds", api.keys.installation_id) == 0


def test_a_refund_of_another_installations_payment_is_a_missing_payment(api, make_api, refund_stack):
    foreign = paid(make_api())
    assert_error(refund(api, foreign["id"]), 400, "resource_missing", "payment_intent")


def test_a_transient_processor_fault_is_retried_and_the_refund_happens_once(api, db, refund_stack):
    payment = paid(api, 800)
    api.post(
        "/v1/test-helpers/processor-faults",
        json={"operation_type": "refund", "mode": "transient", "count": 2},
    )
    created = refund(api, payment["id"]).json()
    operation = wait_for_operation(api, created["operation"], {"succeeded", "failed", "dead_letter"})
    assert operation["status"] == "succeeded" and operation["attempts"] == 3
    assert api.get(f"/v1/refunds/{created['id']}").json()["status"] == "succeeded"
    calls = db.execute(
        "SELECT count(*) FROM sandbox_processor_calls"
        " WHERE installation_id = %s AND operation_type = 'refund' AND succeeded",
        (api.keys.installation_id,),
    ).fetchone()
    assert calls[0] == 1
    assert ledger_balance(db, api.keys.installation_id, "world:card_network") == 0


def test_a_refusal_for_good_fails_the_refund_at_once_and_moves_no_money(api, db, bridge, refund_stack):
    payment = paid(api, 900)
    # the processor's books already refunded 500 of it (a refund made at the processor directly): a
    # refund of 900 is refused for good (amount_too_large), which no retry can change
    (authorization,) = db.execute(
        "SELECT processor_authorization FROM payment_intents WHERE id = %s", (payment["id"],)
    ).fetchone()
    bridge.run(
        SandboxProcessor(bridge.sessionmaker).refund(
            api.keys.tenant, idempotency_key="by-hand", authorization_id=authorization, amount=500
        )
    )
    created = refund(api, payment["id"]).json()
    operation = wait_for_operation(api, created["operation"], {"succeeded", "failed", "dead_letter"})
    assert (operation["status"], operation["attempts"]) == ("failed", 1)
    done = api.get(f"/v1/refunds/{created['id']}").json()
    assert done["status"] == "failed"
    assert done["failure_reason"].startswith("amount_too_large: ")
    assert done["last_operation_error"]["code"] == "amount_too_large"
    assert api.get(f"/v1/payment-intents/{payment['id']}").json()["amount_refunded"] == 0
    assert ledger_balance(db, api.keys.installation_id, "balance:pending") == 900
    assert event_types(api, created["id"]) == ["refund.created", "refund.failed"]
    # the failed refund no longer holds its amount: a new one can take it
    again = refund(api, payment["id"], amount=400).json()
    assert settled(api, again)["status"] == "succeeded"
    assert balance_of(api, "pending") == 500


def test_unknown_refunds_are_not_found(api):
    assert_error(api.get("/v1/refunds/re_000000000000000000000000"), 404, "resource_missing", "refund")


def test_a_discarded_dead_letter_fails_the_refund_and_frees_its_amount(api, db, bridge, refund_stack):
    payment = paid(api, 600)
    api.post(
        "/v1/test-helpers/processor-faults",
        json={"operation_type": "refund", "mode": "transient", "count": 50},
    )
    created = refund(api, payment["id"]).json()
    db.execute("UPDATE operations SET max_attempts = 1 WHERE id = %s", (created["operation"],))
    wait_for_operation(api, created["operation"], {"dead_letter"})
    # dead-lettered: the money has not moved and the amount stays held until an operator decides
    assert api.get(f"/v1/refunds/{created['id']}").json()["status"] == "pending"
    assert_error(refund(api, payment["id"]), 409, "resource_state_invalid")

    async def discard(session):
        await discard_dead_letter(
            session, created["operation"], operator="ops@example.com", reason="paid by bank transfer"
        )

    bridge.in_unit_of_work(discard)
    done = api.get(f"/v1/refunds/{created['id']}").json()
    assert (done["status"], done["failure_reason"]) == (
        "failed",
        "operation_discarded: Discarded by an operator: paid by bank transfer",
    )
    assert done["last_operation_error"]["code"] == "processor_unavailable"
    assert event_types(api, created["id"]) == ["refund.created", "refund.failed"]
    assert api.get(f"/v1/payment-intents/{payment['id']}").json()["amount_refunded"] == 0
    assert ledger_balance(db, api.keys.installation_id, "balance:pending") == 600
    api.post(
        "/v1/test-helpers/processor-faults",
        json={"operation_type": "refund", "mode": "transient", "count": 0},
    )
    again = refund(api, payment["id"]).json()  # the failed refund no longer holds its amount
    assert again["amount"] == 600
