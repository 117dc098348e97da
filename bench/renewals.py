"""Renewals benchmark: subscriptions seeded through the service functions, all falling due at one
sandbox instant, renewed by 2 worker processes with the sandbox processor.

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres REDIS_URL=redis://127.0.0.1:6379/0 \\
        .venv/bin/python bench/renewals.py --subscriptions 100000

Seeding (not timed): one customer with a saved, preferred card; each subscription created by
`billing.create_subscription`, its renewal consent recorded and its first invoice paid off-session by
`payments.charge_off_session` (the same calls a subscription checkout and a renewal make). Then one
sandbox clock advance past the period's end runs the billing calendar, which opens every next-cycle
invoice and its `renewal` operation; the clock starts at that commit and stops when the last renewal
invoice is paid. Recorded: renewals per second, the time until all are paid, how many invoices were
charged more than once (must be 0), and whether `moneyrail ledger verify` passes. The figure to compare
is the engine benchmark's one-operation-per-message rate (bench/results/engine-*.json), which this
script does not re-measure. Minimal machinery on purpose: bench/harness.py is being rebuilt elsewhere.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
from sqlalchemy.engine import make_url

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
RESULTS_DIR = BENCH_DIR / "results"
LOG_DIR = BENCH_DIR / ".work" / "logs"
PROCESSES, THREADS = 2, 8
SEED_BATCH = 250


def plain_url(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


async def fresh_database(admin_url: str, name: str) -> str:
    connection = await asyncpg.connect(plain_url(admin_url))
    try:
        await connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await connection.execute(f'CREATE DATABASE "{name}"')
    finally:
        await connection.close()
    return make_url(admin_url).set(database=name).render_as_string(hide_password=False)


async def seed(subscriptions: int) -> tuple[Any, int]:
    """Everything through the service functions, in transactions of SEED_BATCH subscriptions."""
    from moneyrail.billing import catalog
    from moneyrail.billing import service as billing
    from moneyrail.billing.schemas import PriceCreate, ProductCreate, SubscriptionCreate
    from moneyrail.config import get_settings
    from moneyrail.customers import service as customers
    from moneyrail.customers.schemas import CustomerCreate
    from moneyrail.db.engine import create_engine, create_sessionmaker
    from moneyrail.db.uow import UnitOfWork
    from moneyrail.installations import service as installations
    from moneyrail.kit.tenant import Tenant
    from moneyrail.payment_methods import service as methods
    from moneyrail.payments import service as payments
    from moneyrail.processor import provider
    from moneyrail.processor.interface import CardDetails

    sessionmaker = create_sessionmaker(create_engine(get_settings()))
    processor = provider.processor()
    async with UnitOfWork(sessionmaker) as uow:
        session = uow.session
        installation = await installations.create_installation(session, name="bench renewals", kind="direct")
        tenant = Tenant(installation.id, False)
        await installations.update_environment_settings(session, tenant, recurring_enabled=True)
        product = await catalog.create_product(session, tenant, ProductCreate(name="Bench plan"))
        price = await catalog.create_price(
            session,
            tenant,
            PriceCreate(product=product.id, currency="eur", interval="month", amount=990),
        )
        buyer = await customers.create_or_reuse_customer(
            session,
            tenant,
            CustomerCreate(
                name="Bench customer"
            ),  # no e-mail: receipts are their own operations, not renewals
        )
        await uow.commit()  # the sandbox network keeps its books on its own connection: it must see these
    async with UnitOfWork(sessionmaker) as uow:
        session = uow.session
        card = await methods.save_card(
            session,
            tenant,
            processor,
            CardDetails("4242424242424242", 12, 2034, "123"),
            customer_id=None,
            account=None,
        )
        card = await methods.attach_to_customer(session, tenant, card, buyer.id)
        await methods.set_preferred(session, tenant, buyer.id, card.id)
        await uow.commit()
    made = 0
    while made < subscriptions:
        async with UnitOfWork(sessionmaker) as uow:
            session = uow.session
            for _ in range(min(SEED_BATCH, subscriptions - made)):
                created = await billing.create_subscription(
                    session, tenant, SubscriptionCreate(price=price.id, customer=buyer.id)
                )
                await billing.record_renewal_consent(session, tenant, created.id)
                assert created.latest_invoice_id is not None
                invoice = await billing.repository.get_invoice(session, tenant, created.latest_invoice_id)
                assert invoice is not None
                payment = await payments.lock_payment_intent(session, tenant, invoice.payment_intent_id)
                await payments.charge_off_session(
                    session, tenant, processor, payment, card, idempotency_key=f"{invoice.id}:first"
                )
                made += 1
            await uow.commit()
        print(f"seeded {made}", flush=True)
    return tenant, made


async def fall_due(tenant: Any) -> None:
    """One sandbox clock advance past the period's end: the billing calendar opens every renewal."""
    from moneyrail.config import get_settings
    from moneyrail.db.engine import create_engine, create_sessionmaker
    from moneyrail.db.uow import UnitOfWork
    from moneyrail.sandbox import service as sandbox

    sessionmaker = create_sessionmaker(create_engine(get_settings()))
    async with UnitOfWork(sessionmaker) as uow:
        view = await sandbox.advance_clock(uow.session, tenant, 32 * 24 * 3600)
        await uow.commit()
    print(f"due work: {view.work_done}", flush=True)


async def counts(database_url: str) -> dict[str, int]:
    connection = await asyncpg.connect(plain_url(database_url))
    try:
        paid = await connection.fetchval(
            "SELECT count(*) FROM subscription_invoices WHERE cycle = 1 AND status = 'paid'"
        )
        opened = await connection.fetchval("SELECT count(*) FROM subscription_invoices WHERE cycle = 1")
        charged_twice = await connection.fetchval(
            """SELECT count(*) FROM (SELECT idempotency_key FROM sandbox_processor_calls
               WHERE operation_type = 'authorize' AND succeeded AND idempotency_key LIKE 'subinv_%:charge'
               GROUP BY idempotency_key HAVING count(*) > 1) twice"""
        )
        captures = await connection.fetchval(
            """SELECT count(*) FROM payment_intents p
               JOIN subscription_invoices i ON i.payment_intent_id = p.id
               WHERE i.cycle = 1 AND p.status = 'succeeded'"""
        )
        return {"paid": paid, "opened": opened, "charged_twice": charged_twice, "captured": captures}
    finally:
        await connection.close()


async def measure(
    subscriptions: int, limit_seconds: float, database_url: str, redis_url: str
) -> tuple[int, dict[str, int], float]:
    """Seed, start the fleet, make everything fall due, and time the renewals: one event loop, as the
    sandbox processor's pool belongs to the loop that made it."""
    tenant, made = await seed(subscriptions)
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "MONEYRAIL_LOG_LEVEL": "WARNING",
    }
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    moneyrail = [sys.executable, "-m", "moneyrail"]
    with (
        (LOG_DIR / "renewals-workers.log").open("wb") as worker_log,
        (LOG_DIR / "renewals-scheduler.log").open("wb") as scheduler_log,
    ):
        workers = subprocess.Popen(  # noqa: ASYNC220 - started once, before the clock
            [*moneyrail, "worker", "--processes", str(PROCESSES), "--threads", str(THREADS)],
            env=env,
            cwd=REPO_DIR,
            stdout=worker_log,
            stderr=subprocess.STDOUT,
        )
        scheduler = subprocess.Popen(  # noqa: ASYNC220
            [*moneyrail, "scheduler"], env=env, cwd=REPO_DIR, stdout=scheduler_log, stderr=subprocess.STDOUT
        )
    try:
        await asyncio.sleep(5)  # the fleet boots before the clock starts
        await fall_due(tenant)
        started = time.perf_counter()
        deadline = started + limit_seconds
        while (state := await counts(database_url))["paid"] < made and time.perf_counter() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.5)
        elapsed = time.perf_counter() - started
    finally:
        for process in (workers, scheduler):
            process.terminate()
        for process in (workers, scheduler):
            process.wait(30)
    return made, state, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subscriptions", type=int, default=100_000)
    parser.add_argument("--timeout", type=float, default=3600)
    args = parser.parse_args()
    admin_url = os.environ.get("DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
    redis_url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    database_url = asyncio.run(fresh_database(admin_url, "moneyrail_bench_renewals"))
    os.environ["DATABASE_URL"], os.environ["REDIS_URL"] = database_url, redis_url
    sys.path.insert(0, str(REPO_DIR))
    from moneyrail.db.migrate import upgrade

    upgrade(database_url)
    import moneyrail.domains  # the capture listener that marks invoices paid

    result_state = asyncio.run(measure(args.subscriptions, args.timeout, database_url, redis_url))
    made, state, elapsed = result_state
    env = {**os.environ, "DATABASE_URL": database_url, "REDIS_URL": redis_url}
    moneyrail = [sys.executable, "-m", "moneyrail"]
    verify = subprocess.run(
        [*moneyrail, "ledger", "verify"], env=env, cwd=REPO_DIR, capture_output=True, text=True, timeout=1800
    )
    result = {
        "benchmark": "renewals",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "worker_processes": PROCESSES,
        "threads_per_process": THREADS,
        "subscriptions": made,
        "renewals_paid": state["paid"],
        "renewal_invoices_opened": state["opened"],
        "payments_captured": state["captured"],
        "seconds_until_all_paid": round(elapsed, 2),
        "renewals_per_second": round(state["paid"] / elapsed, 1),
        "invoices_charged_more_than_once": state["charged_twice"],
        "ledger_verify_passed": verify.returncode == 0,
    }
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    out = RESULTS_DIR / f"renewals-{datetime.now(UTC):%Y-%m-%d}-{made}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
