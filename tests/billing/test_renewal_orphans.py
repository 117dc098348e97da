"""A renewal whose charge the orphan sweep released, re-driven afterwards (issue 30 item 10).

The loss is real: a trigger in the test database fails the renewal payment's write after the sandbox
network authorized and captured in its own transactions, for as long as the payment's attempt count is
the one the charge was made under (an outage that outlasts the orphan sweep's grace). Real worker and
scheduler processes: the worker's renewal fails and is retried by the engine, the scheduler's sweep
refunds the charge no payment recorded, and the renewal's next attempt must charge under a new key
instead of getting the released answer back. `moneyrail ledger verify` passes after.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.billing.support import (
    advance,
    checkout_for,
    clock_now,
    customer,
    invoices,
    ok,
    price,
    subscribe,
    wait_until,
)
from tests.checkout.support import SUCCESS_URL, card_form
from tests.harness import TLS, verify_ledger
from tests.payment_methods.support import SUCCEEDS
from tests.payments.support import event_types
from tests.stacks import start_scheduler, start_worker

# The customer's payment moving to `succeeded` fails while its committed attempt count is 0: every
# attempt of the renewal that charged under that count loses its write. The orphan sweep moves the
# count on before it releases the charge; the attempts after that write normally.
TRIGGER_FUNCTION = """
CREATE OR REPLACE FUNCTION test_lose_renewal_payment() RETURNS trigger AS $$
BEGIN
    IF NEW.customer_id = TG_ARGV[0] AND NEW.status = 'succeeded' AND OLD.status <> NEW.status
       AND OLD.confirmations = 0 THEN
        RAISE EXCEPTION 'test: the renewal payment''s transaction is lost';
    END IF;
    RETURN NEW;
END $$ LANGUAGE plpgsql
"""


@pytest.fixture(scope="module")
def sweeping_stack(servers):
    """A worker for the renewals, and a scheduler whose orphan sweep runs every second with a grace of
    two (real time), so a charge no payment recorded is released while the renewal is still retrying."""
    worker = start_worker(servers, name="worker-renewal-orphans")
    scheduler = start_scheduler(
        servers,
        name="scheduler-renewal-orphans",
        MONEYRAIL_PROCESSOR_ORPHAN_GRACE_SECONDS="2",
        MONEYRAIL_PROCESSOR_ORPHAN_SWEEP_SECONDS="1",
    )
    yield worker, scheduler
    worker.stop()
    scheduler.stop()


@pytest.fixture
def lose_renewal_payments(db: Any) -> Iterator[Any]:
    made: list[str] = []

    def arm(customer_id: str) -> None:
        name = f"lose_{customer_id.lower()}"
        db.execute(TRIGGER_FUNCTION)
        db.execute(
            f"CREATE TRIGGER {name} BEFORE UPDATE ON payment_intents FOR EACH ROW "
            f"EXECUTE FUNCTION test_lose_renewal_payment('{customer_id}')"
        )
        made.append(name)

    yield arm
    for name in made:
        db.execute(f"DROP TRIGGER IF EXISTS {name} ON payment_intents")


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


def charge_keys(db: Any, invoice_id: str) -> list[str]:
    rows = db.execute(
        "SELECT idempotency_key FROM sandbox_processor_calls WHERE idempotency_key LIKE %s "
        "ORDER BY created_at",
        (f"{invoice_id}:charge%",),
    ).fetchall()
    return [row[0] for row in rows]


def recorded_authorization(db: Any, payment_id: str) -> str | None:
    row = db.execute(
        "SELECT processor_authorization FROM payment_intents WHERE id = %s", (payment_id,)
    ).fetchone()
    return None if row is None else row[0]


def test_a_renewal_re_driven_after_its_charge_was_released_charges_anew_and_is_paid_once(
    biller, db, servers, sweeping_stack, lose_renewal_payments
):
    created = subscribe(biller, price(biller, 1500)["id"], customer(biller)["id"])
    checkout = checkout_for(biller, created["id"])
    paid = httpx.post(checkout["checkout_url"], data=card_form(SUCCEEDS, renew_consent="yes"), verify=TLS)
    assert paid.status_code == 303 and paid.headers["location"] == SUCCESS_URL, paid.text
    subscription = ok(biller.get(f"/v1/subscriptions/{created['id']}"))
    lose_renewal_payments(subscription["customer"])

    advance(biller, subscription["current_period_end"] - clock_now(biller) + 1)
    _, renewal = wait_until(lambda: (found := invoices(biller, created["id"])) and len(found) == 2 and found)
    payment_id = renewal["payment_intent"]

    def released_and_settled() -> bool:
        first = charges(db, payment_id)[:1]
        return bool(first) and first[0][4] == 1500 and invoices(biller, created["id"])[-1]["status"] != "open"

    wait_until(released_and_settled, timeout=90, interval=0.25)
    (orphan, *_), *standing = charges(db, payment_id)
    # the first charge, made while the write was being lost, was refunded by the sweep
    assert db.execute(
        "SELECT payment_intent_id, amount, action FROM processor_orphans WHERE authorization_id = %s",
        (orphan,),
    ).fetchone() == (payment_id, 1500, "refund")
    # the renewal then charged again under a new key, and that charge is the one the payment records
    assert [row[1:] for row in standing] == [("captured", 1500, 1500, 0)]
    assert recorded_authorization(db, payment_id) == standing[0][0]
    net = sum(captured - refunded for *_, captured, refunded in charges(db, payment_id))
    assert net == 1500  # charged once: the released charge and one that stands
    keys = charge_keys(db, renewal["id"])
    assert keys[0] == f"{renewal['id']}:charge" and len(set(keys)) == 2, keys

    after = invoices(biller, created["id"])[-1]
    assert after["status"] == "paid"
    assert event_types(biller, renewal["id"]).count("subscription.invoice.paid") == 1
    renewed = ok(biller.get(f"/v1/subscriptions/{created['id']}"))
    assert (renewed["status"], renewed["entitled"]) == ("active", True)
    payment = ok(biller.get(f"/v1/payment-intents/{payment_id}"))
    assert (payment["status"], payment["amount_received"]) == ("succeeded", 1500)
    verify_ledger(servers)
