"""Sandbox time is one clock: after an advance, an object's `created` is on the sandbox clock, like its
`expires_at`, and the answer that creates it agrees with every later read (issue 18.4)."""

from __future__ import annotations

import time

from moneyrail.models import Base
from moneyrail.models.base import SANDBOX_CLOCK_TABLES
from tests.payments.support import create_payment, paid

TEN_DAYS = 10 * 86_400
# Tenant tables whose `created_at` stays on the wall clock, and why: each new table decides.
REAL_TIME_TABLES = {
    "api_keys": "operator records: keys are made and revoked in real time",
    "publishable_keys": "operator records, as api_keys",
    "idempotency_records": "kept 24 real hours: the retention compares with the wall clock",
    "journal_transactions": "the ledger's hash chain covers created_at as it was written",
    "ledger_accounts": "ledger bookkeeping, as journal_transactions",
    "sandbox_cards": "the simulated network's own records",
    "sandbox_processor_calls": "the simulated network's own records",
    "sandbox_sms_messages": "the simulated network's own records",
    "sandbox_authorizations": "the simulated network's own records",
    # tables of the marketplace branch: internal rows, shown without a `created` of their own
    "merchant_authorization_codes": "a one-time credential, never shown",
    "payment_distributions": "a payment's distribution plan, shown inside the payment",
    "allocations": "lines of an allocation group, shown inside it",
    # its `created_at` is its operation's, so on the sandbox clock through it (and its attempts' are
    # moved by their own trigger, migration 0035): no created_at trigger of its own
    "webhook_deliveries": "its operation's record: created with it, retried on real time",
}


def on_clock(created: int, clock_now: int) -> bool:
    return abs(created - clock_now) < 120


def test_objects_created_after_an_advance_are_created_on_the_sandbox_clock(api):
    advanced = api.post("/v1/test-helpers/clock/advance", json={"seconds": TEN_DAYS}).json()
    clock_now = advanced["now"]
    assert clock_now - time.time() > TEN_DAYS - 120

    customer = api.post("/v1/customers", json={"email": "ada@example.com"}).json()
    payment = create_payment(api, customer=customer["id"])
    setup_intent = api.post(f"/v1/customers/{customer['id']}/setup-intents").json()
    endpoint = api.post(
        "/v1/webhook-endpoints", json={"url": "http://127.0.0.1:9/hook", "enabled_events": ["*"]}
    ).json()
    created = {
        "customer": (customer, f"/v1/customers/{customer['id']}"),
        "payment_intent": (payment, f"/v1/payment-intents/{payment['id']}"),
        "setup_intent": (setup_intent, f"/v1/setup-intents/{setup_intent['id']}"),
        "webhook_endpoint": (endpoint, f"/v1/webhook-endpoints/{endpoint['id']}"),
    }
    for name, (answer, path) in created.items():
        assert on_clock(answer["created"], clock_now), (name, answer["created"], clock_now)
        read = api.get(path)
        assert read.status_code == 200, read.text
        assert read.json()["created"] == answer["created"], name  # the creating answer tells the truth
    if "expires_at" in setup_intent:
        assert setup_intent["expires_at"] > setup_intent["created"]

    events = api.get("/v1/events", params={"limit": 100}).json()["data"]
    assert events, "creating a payment writes an event"
    assert all(on_clock(event["created"], clock_now) for event in events)


def test_a_refund_and_a_paid_payment_follow_the_clock_too(api):
    clock_now = api.post("/v1/test-helpers/clock/advance", json={"seconds": TEN_DAYS}).json()["now"]
    payment = paid(api)
    assert on_clock(payment["created"], clock_now)
    refund = api.post("/v1/refunds", json={"payment_intent": payment["id"], "amount": 500})
    assert refund.status_code == 200, refund.text
    assert on_clock(refund.json()["created"], clock_now)


def test_live_objects_keep_the_wall_clock(make_api):
    live = make_api(livemode=True)
    customer = live.post("/v1/customers", json={"email": "ada@example.com"}).json()
    assert abs(customer["created"] - time.time()) < 120


def test_every_tenant_table_decides_its_clock_and_the_triggers_match(db):
    tenant_tables = {
        table.name
        for table in Base.metadata.sorted_tables
        if {"installation_id", "livemode", "created_at"} <= set(table.c.keys())
    }
    undecided = tenant_tables - SANDBOX_CLOCK_TABLES - set(REAL_TIME_TABLES)
    assert not undecided, (
        f"tables without a clock decision: {sorted(undecided)}. Sandbox objects join "
        "moneyrail.models.base.SANDBOX_CLOCK_TABLES and get the trigger of migration 0013 in their own "
        "migration; wall-clock tables join REAL_TIME_TABLES here with the reason."
    )
    triggered = {
        row[0]
        for row in db.execute(
            "SELECT event_object_table FROM information_schema.triggers "
            "WHERE trigger_name LIKE '%%_sandbox_created_at'"
        ).fetchall()
    }
    # the tables of branches not merged here are named ahead, and have their trigger once they exist
    assert triggered == SANDBOX_CLOCK_TABLES & tenant_tables
