"""Sessions expire after 30 minutes on the environment's clock: the sandbox clock's due work, the
scheduler's sweep, and the page itself whatever the sweep did."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import httpx
import psycopg
import pytest

import workers.scheduler  # noqa: F401 - the leader's process registers its jobs by importing the domains
from moneyrail.checkout import service as checkout_service
from moneyrail.config import Settings
from moneyrail.db.engine import create_engine, create_sessionmaker
from moneyrail.engine.schedule import periodic_jobs
from moneyrail.processor.sandbox import SandboxProcessor
from moneyrail.processor.sandbox.network import NetworkConditions, NetworkDraws, SandboxNetwork
from tests.checkout.support import card_form, create_session, session_status
from tests.harness import TLS, libpq_url
from tests.payments.support import (
    AUTHENTICATE,
    SUCCEEDS,
    claim_of,
    confirm,
    create_payment,
    event_types,
    wait_for,
)

THIRTY_ONE_MINUTES = 31 * 60


@pytest.fixture(scope="module")
def network(servers, bridge) -> Iterator[SandboxProcessor]:
    engine = create_engine(Settings(DATABASE_URL=servers.database_url, db_pool_size=2))
    yield SandboxProcessor(create_sessionmaker(engine))
    bridge.run(engine.dispose())


def advance(api: httpx.Client, seconds: int) -> dict:
    response = api.post("/v1/test-helpers/clock/advance", json={"seconds": seconds})
    assert response.status_code == 200, response.text
    body: dict = response.json()
    return body


def test_advancing_the_sandbox_clock_31_minutes_expires_the_session_and_cancels_its_payment(shop):
    payment = create_payment(shop)
    checkout = create_session(shop, payment["id"])
    clock = advance(shop, THIRTY_ONE_MINUTES)
    assert clock["work_done"]["checkout.expiry"] == 1
    read = shop.get(f"/v1/checkout-sessions/{checkout['id']}").json()
    assert read["status"] == "expired"
    after = shop.get(f"/v1/payment-intents/{payment['id']}").json()
    assert after["status"] == "canceled" and after["cancellation_reason"] == "abandoned"
    assert event_types(shop, checkout["id"]) == ["checkout.session.expired"]
    page = httpx.get(checkout["checkout_url"], verify=TLS)
    assert page.status_code == 410 and "expired" in page.text and "<form" not in page.text
    assert httpx.post(checkout["checkout_url"], data=card_form(SUCCEEDS), verify=TLS).status_code == 410
    assert httpx.get(f"{checkout['checkout_url']}/cancel", verify=TLS).status_code == 410


def test_29_minutes_leave_the_session_open_and_payable(shop):
    payment = create_payment(shop)
    checkout = create_session(shop, payment["id"])
    assert advance(shop, 29 * 60)["work_done"]["checkout.expiry"] == 0
    assert session_status(shop, checkout) == "open"
    assert httpx.get(checkout["checkout_url"], verify=TLS).status_code == 200
    assert httpx.post(checkout["checkout_url"], data=card_form(SUCCEEDS), verify=TLS).status_code == 303
    assert session_status(shop, checkout) == "complete"
    advance(shop, 2 * 60)
    assert session_status(shop, checkout) == "complete"  # a complete session never expires


def test_the_page_refuses_a_session_past_its_expiry_before_any_sweep(shop, db):
    payment = create_payment(shop)
    checkout = create_session(shop, payment["id"])
    db.execute(
        "UPDATE checkout_sessions SET expires_at = now() - interval '1 second' WHERE id = %s",
        (checkout["id"],),
    )
    assert session_status(shop, checkout) == "open"  # no sweep ran
    page = httpx.get(checkout["checkout_url"], verify=TLS)
    assert page.status_code == 410 and "<form" not in page.text
    assert httpx.post(checkout["checkout_url"], data=card_form(SUCCEEDS), verify=TLS).status_code == 410
    assert shop.get(f"/v1/payment-intents/{payment['id']}").json()["amount_received"] == 0


def test_the_scheduler_runs_the_expiry_sweep(bridge, shop, db, network):
    jobs = {job.name: job for job in periodic_jobs()}
    assert "checkout.expiry" in jobs  # importing workers.scheduler registered it

    abandoned = create_payment(shop)
    waiting = create_payment(shop)  # left on the bank's page: its authorization is released
    paid_elsewhere = create_payment(shop)
    sessions = [create_session(shop, payment["id"]) for payment in (abandoned, waiting, paid_elsewhere)]
    bank = httpx.post(sessions[1]["checkout_url"], data=card_form(AUTHENTICATE), verify=TLS)
    assert bank.status_code == 303
    assert confirm(shop, paid_elsewhere, SUCCEEDS).json()["status"] == "succeeded"
    fresh = create_session(shop, create_payment(shop)["id"])
    db.execute(
        "UPDATE checkout_sessions SET expires_at = now() - interval '1 second' WHERE id = ANY(%s)",
        ([checkout["id"] for checkout in sessions],),
    )

    settled = bridge.run(checkout_service.sweep(bridge.sessionmaker, processor=network))
    assert settled >= 3
    assert [session_status(shop, checkout) for checkout in sessions] == ["expired", "expired", "complete"]
    assert session_status(shop, fresh) == "open"
    statuses = [shop.get(f"/v1/payment-intents/{p['id']}").json()["status"] for p in (abandoned, waiting)]
    assert statuses == ["canceled", "canceled"]
    assert shop.get(f"/v1/payment-intents/{paid_elsewhere['id']}").json()["status"] == "succeeded"
    assert event_types(shop, sessions[2]["id"]) == ["checkout.session.completed"]
    # the bank's page of the released authorization is gone too
    assert httpx.get(bank.headers["location"], verify=TLS).status_code == 404


def test_the_sweep_uses_each_sandbox_clock(bridge, shop, db, network):
    checkout = create_session(shop, create_payment(shop)["id"])
    advance(shop, 20 * 60)  # now 20 minutes ahead: the session has 10 minutes left on this clock
    db.execute(
        "UPDATE checkout_sessions SET expires_at = expires_at - interval '15 minutes' WHERE id = %s",
        (checkout["id"],),
    )
    # due on the sandbox clock, though not yet on real time
    assert bridge.run(checkout_service.sweep(bridge.sessionmaker, processor=network)) >= 1
    assert session_status(shop, checkout) == "expired"


def test_the_sweep_cancels_due_payments_at_the_processor_together_holding_no_transaction_or_lock(
    servers, shop, db
):
    """On an outside processor (the simulator behind a slow network) the sweep settles each due session
    in atomic phases, several at once: while their payments' cancels are all on the network together,
    nothing of the sweep holds a transaction or a session's or payment's row."""
    payments = [create_payment(shop) for _ in range(3)]
    checkouts = [create_session(shop, payment["id"]) for payment in payments]
    for checkout in checkouts:
        left = httpx.post(checkout["checkout_url"], data=card_form(AUTHENTICATE), verify=TLS)
        assert left.status_code == 303  # to the bank's page, never answered: an authorization to release
    db.execute(
        "UPDATE checkout_sessions SET expires_at = now() - interval '1 second' WHERE id = ANY(%s)",
        ([checkout["id"] for checkout in checkouts],),
    )

    async def sweep_over_a_slow_network() -> int:
        engine = create_engine(Settings(DATABASE_URL=servers.database_url, db_pool_size=4))
        try:
            simulator = SandboxProcessor(create_sessionmaker(engine))
            slow = SandboxNetwork(simulator, NetworkDraws(NetworkConditions(latency_ms=6000)))
            return await checkout_service.sweep(create_sessionmaker(engine), processor=slow)
        finally:
            await engine.dispose()

    outcome: dict[str, int] = {}
    thread = threading.Thread(target=lambda: outcome.update(settled=asyncio.run(sweep_over_a_slow_network())))
    thread.start()
    try:
        # the three cancels on the network at the same time (one after another, one claim at a time)
        wait_for(lambda: all(claim_of(db, payment["id"])[0] is not None for payment in payments), timeout=30)
        with psycopg.connect(libpq_url(servers.database_url)) as other:
            for checkout, payment in zip(checkouts, payments, strict=True):
                for table, row_id in (
                    ("checkout_sessions", checkout["id"]),
                    ("payment_intents", payment["id"]),
                ):
                    locked = other.execute(
                        f"SELECT id FROM {table} WHERE id = %s FOR UPDATE NOWAIT", (row_id,)
                    )
                    assert locked.fetchall() == [(row_id,)]
            other.rollback()
        in_transaction = db.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND state LIKE 'idle in transaction%%'"
        ).fetchone()
        assert in_transaction == (0,)
        assert [session_status(shop, checkout) for checkout in checkouts] == ["open"] * 3  # until they answer
    finally:
        thread.join(60)
    assert outcome == {"settled": 3}
    assert [session_status(shop, checkout) for checkout in checkouts] == ["expired"] * 3
    for payment in payments:
        after = shop.get(f"/v1/payment-intents/{payment['id']}").json()
        assert (after["status"], after["cancellation_reason"]) == ("canceled", "abandoned")
        assert claim_of(db, payment["id"]) == (None, None)
