"""A confirmation whose database transaction is lost after the card network charged the card (issue 14's
soak: a PostgreSQL restart between the processor's own commit and the payment's).

The loss is real: a trigger in the test database makes the payment's UPDATE fail once, after the
sandbox network authorized and captured in its own transactions. A retry with the same card charges
once; a charge nobody retries is released by the orphan sweep of a real scheduler; a charge whose
payment commits slowly is never released. `moneyrail ledger verify` passes after each.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest

from moneyrail.payments import orphans
from moneyrail.payments.orphans import sweep_orphans
from moneyrail.processor.interface import CardDetails
from moneyrail.processor.sandbox import SandboxProcessor
from tests.harness import TLS, verify_ledger
from tests.payments.support import DISPUTE_LATER, SUCCEEDS, confirm, create_payment
from tests.stacks import start_scheduler

# The payment's move to `status` fails once (a sequence, unlike a row, is not rolled back with the
# failing transaction), or waits `sleep` seconds before it goes through (a slow commit).
TRIGGER_FUNCTION = """
CREATE OR REPLACE FUNCTION test_lose_confirmation() RETURNS trigger AS $$
BEGIN
    IF NEW.id = TG_ARGV[0] AND NEW.status = TG_ARGV[1] AND OLD.status <> NEW.status THEN
        IF TG_ARGV[3]::float > 0 THEN
            PERFORM pg_sleep(TG_ARGV[3]::float);
        ELSIF nextval(TG_ARGV[2]::regclass) = 1 THEN
            RAISE EXCEPTION 'test: the confirmation''s transaction is lost';
        END IF;
    END IF;
    RETURN NEW;
END $$ LANGUAGE plpgsql
"""


@pytest.fixture
def lose(db: Any) -> Iterator[Any]:
    made: list[str] = []

    def arm(payment_id: str, status: str, *, sleep: float = 0) -> None:
        name = f"lose_{payment_id.lower()}"
        db.execute(TRIGGER_FUNCTION)
        db.execute(f"CREATE SEQUENCE {name}")
        db.execute(
            f"CREATE TRIGGER {name} BEFORE UPDATE ON payment_intents FOR EACH ROW "
            f"EXECUTE FUNCTION test_lose_confirmation('{payment_id}', '{status}', '{name}', '{sleep}')"
        )
        made.append(name)

    yield arm
    for name in made:
        db.execute(f"DROP TRIGGER IF EXISTS {name} ON payment_intents")
        db.execute(f"DROP SEQUENCE IF EXISTS {name}")


def charges(db: Any, payment_id: str) -> list[tuple[str, str, int, int, int]]:
    """The sandbox network's authorizations made for this payment: id, status, held, captured, refunded."""
    rows = db.execute(
        """
        SELECT id, status, amount, amount_captured, amount_refunded FROM sandbox_authorizations
        WHERE reference = %s ORDER BY created_at
        """,
        (payment_id,),
    ).fetchall()
    return [tuple(row) for row in rows]


def recorded_authorization(db: Any, payment_id: str) -> str | None:
    row = db.execute(
        "SELECT processor_authorization FROM payment_intents WHERE id = %s", (payment_id,)
    ).fetchone()
    return None if row is None else row[0]


def lost_confirmation(api: Any, lose: Any, db: Any, **fields: Any) -> dict[str, Any]:
    payment = create_payment(api, 2000, **fields)
    lose(payment["id"], "succeeded" if fields.get("capture_method") != "manual" else "requires_capture")
    failed = confirm(api, payment)
    assert failed.status_code == 500, failed.text
    assert api.get(f"/v1/payment-intents/{payment['id']}").json()["status"] == "requires_payment_method"
    return payment


def card_details() -> CardDetails:
    return CardDetails(number=SUCCEEDS, exp_month=12, exp_year=2034, cvc="123")


def net_charged(db: Any, payment_id: str) -> int:
    """What the payer's card is charged for this payment, all authorizations together."""
    return sum(captured - refunded for _, _, _, captured, refunded in charges(db, payment_id))


def held(db: Any, payment_id: str) -> int:
    return sum(amount for _, status, amount, _, _ in charges(db, payment_id) if status == "authorized")


def test_a_retried_confirmation_with_the_same_card_finds_the_first_charge_instead_of_charging_again(
    api, db, lose, servers
):
    payment = lost_confirmation(api, lose, db)
    [(first, status, _, captured, _)] = charges(db, payment["id"])
    assert (status, captured) == ("captured", 2000)  # the card is charged, no payment says so

    retried = confirm(api, payment)  # the same card typed again: tokenized anew, another token
    assert retried.status_code == 200, retried.text
    assert retried.json()["status"] == "succeeded"
    assert charges(db, payment["id"]) == [(first, "captured", 2000, 2000, 0)]  # one charge, not two
    assert recorded_authorization(db, payment["id"]) == first
    calls = db.execute(
        "SELECT operation_type, count(*) FROM sandbox_processor_calls WHERE idempotency_key LIKE %s "
        "GROUP BY operation_type ORDER BY 1",
        (payment["id"] + ":%",),
    ).fetchall()
    assert calls == [("authorize", 1), ("capture", 1)]
    verify_ledger(servers)


def test_a_retry_with_another_card_charges_that_card_and_the_sweep_refunds_the_first(
    api, db, lose, servers, bridge
):
    payment = lost_confirmation(api, lose, db)
    [(first, *_)] = charges(db, payment["id"])
    retried = confirm(api, payment, DISPUTE_LATER)  # another card: not the first card's answer
    assert retried.status_code == 200, retried.text
    assert retried.json()["status"] == "succeeded"
    second = recorded_authorization(db, payment["id"])
    assert second != first
    assert net_charged(db, payment["id"]) == 4000  # until the sweep: both cards charged

    released = bridge.run(
        sweep_orphans(
            bridge.sessionmaker, processor=SandboxProcessor(bridge.sessionmaker), grace=timedelta(0)
        )
    )
    assert released >= 1
    assert charges(db, payment["id"]) == [
        (first, "captured", 2000, 2000, 2000),  # the orphan, refunded
        (second, "captured", 2000, 2000, 0),  # the payment's own, untouched
    ]
    assert db.execute(
        "SELECT payment_intent_id, amount, action FROM processor_orphans WHERE authorization_id = %s",
        (first,),
    ).fetchone() == (payment["id"], 2000, "refund")
    verify_ledger(servers)


@pytest.mark.parametrize("capture_method", ["automatic", "manual"])
def test_a_charge_nobody_retries_is_released_by_the_scheduled_sweep_and_a_later_retry_charges_once(
    api, db, lose, servers, request, capture_method
):
    payment = lost_confirmation(api, lose, db, capture_method=capture_method)
    [(orphan, status, *_)] = charges(db, payment["id"])
    assert status == ("captured" if capture_method == "automatic" else "authorized")
    scheduler = start_scheduler(
        servers,
        name=f"scheduler-{request.node.name}",
        MONEYRAIL_PROCESSOR_ORPHAN_GRACE_SECONDS="2",
        MONEYRAIL_PROCESSOR_ORPHAN_SWEEP_SECONDS="1",
    )
    try:
        deadline = time.monotonic() + 90
        while (net_charged(db, payment["id"]), held(db, payment["id"])) != (0, 0):
            assert time.monotonic() < deadline, (charges(db, payment["id"]), scheduler.log_text()[-3000:])
            time.sleep(0.5)
    finally:
        scheduler.stop()
    [(_, status, _, captured, refunded)] = charges(db, payment["id"])
    expected = ("captured", 2000, 2000) if capture_method == "automatic" else ("canceled", 0, 0)
    assert (status, captured, refunded) == expected
    assert "processor_orphan_released" in scheduler.log_text()
    metrics = httpx.get(f"{api.base_url}/metrics", timeout=30, verify=TLS).text
    action = "refund" if capture_method == "automatic" else "void"
    counted = [
        line
        for line in metrics.splitlines()
        if line.startswith(f'moneyrail_processor_orphans_total{{action="{action}"}}')
    ]
    assert counted and float(counted[0].split()[-1]) >= 1, metrics

    # The payer comes back later with the same card: a new question to the network, not the released answer
    retried = confirm(api, payment, SUCCEEDS)
    assert retried.status_code == 200, retried.text
    if capture_method == "manual":
        assert retried.json()["status"] == "requires_capture"
        captured_now = api.post(f"/v1/payment-intents/{payment['id']}/capture", json={})
        assert captured_now.status_code == 200, captured_now.text
    assert api.get(f"/v1/payment-intents/{payment['id']}").json()["status"] == "succeeded"
    assert recorded_authorization(db, payment["id"]) not in {None, orphan}
    assert net_charged(db, payment["id"]) == 2000
    verify_ledger(servers)


def test_the_sweep_waits_for_a_slow_commit_and_never_releases_a_charge_its_payment_owns(
    api, db, lose, servers, bridge
):
    payment = create_payment(api, 2000)
    lose(payment["id"], "succeeded", sleep=4)  # the payment's commit takes 4 s after the capture
    answers: list[httpx.Response] = []
    confirming = threading.Thread(target=lambda: answers.append(confirm(api, payment)))
    confirming.start()
    deadline = time.monotonic() + 30
    while not [row for row in charges(db, payment["id"]) if row[1] == "captured"]:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert recorded_authorization(db, payment["id"]) is None  # captured, not yet recorded: it looks orphaned

    # grace 0: only the lock keeps the sweep from releasing the charge; it waits for the commit
    bridge.run(
        sweep_orphans(
            bridge.sessionmaker, processor=SandboxProcessor(bridge.sessionmaker), grace=timedelta(0)
        )
    )
    confirming.join(30)
    assert answers and answers[0].status_code == 200, answers
    assert answers[0].json()["status"] == "succeeded"
    [(authorization, status, _, captured, refunded)] = charges(db, payment["id"])
    assert (status, captured, refunded) == ("captured", 2000, 0)
    assert recorded_authorization(db, payment["id"]) == authorization
    assert db.execute(
        "SELECT count(*) FROM processor_orphans WHERE authorization_id = %s", (authorization,)
    ).fetchone() == (0,)
    verify_ledger(servers)


def test_sweeps_go_through_full_batches_and_a_processor_away_leaves_the_orphan_to_the_next_sweep(
    api, db, bridge, monkeypatch
):
    """Charges made for payments that never recorded them, straight at the network as a lost
    confirmation leaves them: found in batches of 2; a cancel the network does not answer is tried
    again by the next sweep; each payment's attempt count moves on."""
    network = SandboxProcessor(bridge.sessionmaker)
    tenant = api.keys.tenant
    payments = [create_payment(api, 1000 + n) for n in range(3)]
    for payment in payments:
        tokenized = bridge.run(network.tokenize_card(tenant, card_details()))
        bridge.run(
            network.authorize(
                tenant,
                idempotency_key=f"{payment['id']}:authorize:1:{tokenized.fingerprint}:{payment['amount']}",
                card_token=tokenized.token,
                card_fingerprint=tokenized.fingerprint,
                amount=payment["amount"],
                currency="eur",
                off_session=False,
                reference=payment["id"],
            )
        )
    monkeypatch.setattr(orphans, "BATCH", 2)
    faulted = api.post(
        "/v1/test-helpers/processor-faults",
        json={"operation_type": "cancel", "mode": "transient", "count": 1},
    )
    assert faulted.status_code == 200, faulted.text

    def sweep() -> int:
        return bridge.run(sweep_orphans(bridge.sessionmaker, processor=network, grace=timedelta(0)))

    sweep()  # the first cancel meets the fault: it stops there
    assert [held(db, payment["id"]) for payment in payments].count(0) < 3
    sweep()
    for payment in payments:
        assert held(db, payment["id"]) == 0
        [(_, status, *_)] = charges(db, payment["id"])
        assert status == "canceled"
        assert db.execute(
            "SELECT confirmations FROM payment_intents WHERE id = %s", (payment["id"],)
        ).fetchone() == (1,)
    assert db.execute(
        "SELECT count(*) FROM processor_orphans WHERE payment_intent_id = ANY(%s) AND action = 'void'",
        ([payment["id"] for payment in payments],),
    ).fetchone() == (3,)
