"""Renewals benchmark: subscriptions seeded through the service functions, all falling due at
one sandbox instant, renewed by 2 worker processes with the sandbox processor, against the engine
benchmark's one-operation rate measured in the same run.

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres REDIS_URL=redis://127.0.0.1:6379/5 \\
        .venv/bin/python bench/renewals.py --subscriptions 100000 --rounds 2

One run, with bench/harness.py: a fresh database `moneyrail_bench_renewals`, migrated.

1. Seeding (not timed as renewals): one sandbox installation with subscriptions on, a monthly price of
   9.90 EUR, `--customers` customers each with a saved, preferred 4242 card; then `--seeders` processes
   each create their share of the subscriptions with `billing.create_subscription`, record the renewal
   consent and pay the first invoices off-session with `payments.record_off_session_charges` (a checkout
   charges one at a time; the batch entry point writes the same rows, each under its own key), in
   transactions of SEED_BATCH subscriptions.
2. Each round (`--rounds`, 2 by default: the subscriptions' cycles 1, 2, ...):
   - the engine's one-operation rate: bench/engine.py's `engine_rate` on the probe's unbatched type
     (its own installation in the same database, its own 2 x 8 fleet, stopped afterwards);
   - the renewals: `moneyrail worker --processes 2` and `moneyrail scheduler` started; one sandbox
     clock advance to a minute past the latest period end, so every subscription falls due at that
     instant; the advance opens every next-cycle invoice and its `renewal` operation (the product's due
     work of a clock advance), committing each sweep batch of 500 on its own so that the workers charge
     while the rest opens; timed from the advance's start until every invoice of the cycle is paid, and
     split into opening (until the advance returns, its last chunk committed) and charging (from
     there to the last paid: the charging before it overlaps the opening);
   - the checks, straight in the database: one invoice per subscription for the cycle, all paid; at
     the processor, one `authorize` call under each invoice's charge key and one captured authorization
     per invoice's payment; in the database, one succeeded payment per subscription for the cycle and
     one `payment_capture` journal transaction per succeeded payment; no captured authorization that
     no payment knows (a charge nobody recorded).
3. `moneyrail ledger verify` once all rounds are done.

Before each round, untimed, `VACUUM (ANALYZE)`: it stands in for the autovacuum a service runs, so the
second cycle's queries are planned with statistics. Recorded: `results/renewals-latest.json` with
every round's figures, the load average before and after each phase and the CPU of each part during
each renewal phase, and a row of `results/renewals-history.csv`. Exit code 0 when every check held
and every round met the target (renewals/s >= the engine's one-operation rate of that round), 2 a
target missed, 1 a check or the run failed.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import asyncpg

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_DIR = os.path.dirname(BENCH_DIR)
sys.path.insert(0, REPO_DIR)
sys.path.insert(0, BENCH_DIR)

import harness  # noqa: E402

DATABASE = "moneyrail_bench_renewals"
PROCESSES = 2
# The renewal workers' threads and pools, kept small: the machine's PostgreSQL is shared (100 connections
# in all, most taken by others' runs) and a renewal thread holds one connection of the main pool and,
# while it charges, one of the sandbox processor's. A message carries up to 128 renewals (RENEWAL_BATCH),
# charged set-based, so 4 threads a process keep both processes busy. The engine's reference keeps its
# own 8 threads (bench/engine.py).
THREADS = 4
ENGINE_THREADS = 8
WORKER_POOL = 4
SEED_BATCH = 100  # subscriptions per seeding transaction
SEEDER_POOL = 2


def _out_of_connections(error: object) -> bool:
    return "too many clients" in str(error)


def _when_connections_allow(phase: Any, *args: Any) -> Any:
    """A phase that failed to get a connection of the shared server before doing anything lasting (the
    engine's measurement, the clock advance, whose transaction then rolled back) runs again."""
    for _ in range(30):
        try:
            return phase(*args)
        except Exception as error:
            if not _out_of_connections(error):
                raise
            print(f"{getattr(phase, '__name__', phase)}: out of connections, again in 5 s", flush=True)
            time.sleep(5)
    return phase(*args)


@dataclass(frozen=True)
class Catalog:
    installation_id: str
    price_id: str
    customers: list[tuple[str, str]]  # (customer, its preferred card)


# --- seeding, through the service functions -------------------------------------------------------------
def _quiet() -> None:
    from moneyrail.logging import configure_logging

    configure_logging("WARNING")


async def _prepare(customers: int) -> Catalog:
    from moneyrail.billing import catalog
    from moneyrail.billing.schemas import PriceCreate, ProductCreate
    from moneyrail.config import get_settings
    from moneyrail.customers import service as customer_service
    from moneyrail.customers.schemas import CustomerCreate
    from moneyrail.db.engine import create_engine, create_sessionmaker
    from moneyrail.db.uow import UnitOfWork
    from moneyrail.installations import service as installations
    from moneyrail.kit.tenant import Tenant
    from moneyrail.payment_methods import service as methods
    from moneyrail.processor import provider
    from moneyrail.processor.interface import CardDetails

    engine = create_engine(get_settings())
    sessionmaker = create_sessionmaker(engine)
    processor = provider.processor()
    async with UnitOfWork(sessionmaker) as uow:
        installation = await installations.create_installation(
            uow.session, name="bench renewals", kind="direct"
        )
        tenant = Tenant(installation.id, False)
        await installations.update_environment_settings(uow.session, tenant, recurring_enabled=True)
        product = await catalog.create_product(uow.session, tenant, ProductCreate(name="Bench plan"))
        price = await catalog.create_price(
            uow.session, tenant, PriceCreate(product=product.id, currency="eur", interval="month", amount=990)
        )
        await uow.commit()  # the sandbox network keeps its books on its own connection: it must see these
    made: list[tuple[str, str]] = []
    for number in range(customers):
        async with UnitOfWork(sessionmaker) as uow:
            session = uow.session
            # no e-mail: receipts are operations of their own, not renewals
            buyer = await customer_service.create_or_reuse_customer(
                uow, tenant, CustomerCreate(name=f"Bench customer {number}")
            )
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
        made.append((buyer.id, card.id))
    await engine.dispose()
    return Catalog(installation.id, price.id, made)


async def _seed_share(catalog_: Catalog, first: int, count: int) -> int:
    """Subscriptions number first .. first+count-1, customer by number, committed SEED_BATCH at a time."""
    from moneyrail.billing import service as billing
    from moneyrail.billing.schemas import SubscriptionCreate
    from moneyrail.config import get_settings
    from moneyrail.db.engine import create_engine, create_sessionmaker
    from moneyrail.db.uow import UnitOfWork
    from moneyrail.kit.tenant import Tenant
    from moneyrail.payment_methods import service as methods
    from moneyrail.payments import service as payments
    from moneyrail.processor import provider

    engine = create_engine(get_settings())
    sessionmaker = create_sessionmaker(engine)
    processor = provider.processor()
    tenant = Tenant(catalog_.installation_id, False)
    done = 0
    while done < count:
        async with UnitOfWork(sessionmaker) as uow:
            session = uow.session
            charges = []
            for number in range(first + done, first + min(done + SEED_BATCH, count)):
                customer_id, card_id = catalog_.customers[number % len(catalog_.customers)]
                created = await billing.create_subscription(
                    session, tenant, SubscriptionCreate(price=catalog_.price_id, customer=customer_id)
                )
                await billing.record_renewal_consent(session, tenant, created.id)
                assert created.latest_invoice_id is not None
                charges.append((created.latest_invoice_id, card_id))
            # the first invoices charged off-session together (what a batch of renewals does), each under
            # its own key; the capture listener marks each invoice paid and its subscription active
            cards = await methods.methods_by_id(session, tenant, [card_id for _, card_id in charges])
            invoices = await billing.repository.invoices_by_id(session, tenant, [i for i, _ in charges])
            locked = await payments.lock_payment_intents(
                session, tenant, [invoice.payment_intent_id for invoice in invoices.values()]
            )
            charging = [
                (locked[invoices[invoice_id].payment_intent_id], cards[card_id], f"{invoice_id}:first")
                for invoice_id, card_id in charges
            ]
            # seeding, in one transaction: the renewals themselves ask with none open (their phases)
            asked = await payments.off_session_charges(session, charging)
            answers = await payments.ask_off_session(processor, tenant, asked)
            await payments.record_off_session_charges(session, tenant, processor, charging, answers)
            await uow.commit()
        done = min(done + SEED_BATCH, count)
    await engine.dispose()
    return done


def _seeder(catalog_: Catalog, first: int, count: int) -> int:
    _quiet()
    import moneyrail.domains  # noqa: F401 - the capture listener that marks the first invoice paid

    return asyncio.run(_seed_share(catalog_, first, count))


def seed(subscriptions: int, customers: int, seeders: int) -> tuple[Catalog, float]:
    _quiet()
    # every domain's due work (the clock advance's renewals) and capture listeners, in this process too
    import moneyrail.domains  # noqa: F401

    started = time.perf_counter()
    catalog_ = asyncio.run(_prepare(customers))
    share = -(-subscriptions // seeders)
    jobs = [(catalog_, first, min(share, subscriptions - first)) for first in range(0, subscriptions, share)]
    with multiprocessing.get_context("spawn").Pool(len(jobs)) as pool:
        made = sum(pool.starmap(_seeder, jobs))
    assert made == subscriptions, (made, subscriptions)
    return catalog_, time.perf_counter() - started


# --- one round: the engine's rate, then the renewals of one cycle --------------------------------------
async def _connect(database_url: str) -> Any:
    """A shared server out of connections is waited for, never the end of the run."""
    for _ in range(120):
        try:
            return await asyncpg.connect(harness.plain_url(database_url))
        except asyncpg.TooManyConnectionsError:
            await asyncio.sleep(1)
    return await asyncpg.connect(harness.plain_url(database_url))


async def _due_instant_advance(database_url: str, installation_id: str) -> int:
    """Seconds to advance the sandbox clock so every active subscription's period has ended a minute ago."""
    connection = await _connect(database_url)
    try:
        latest_end = await connection.fetchval(
            "SELECT max(current_period_end) FROM subscriptions"
            " WHERE installation_id = $1 AND status = 'active'",
            installation_id,
        )
        offset = await connection.fetchval(
            "SELECT coalesce((SELECT offset_seconds FROM sandbox_clocks WHERE installation_id = $1), 0)",
            installation_id,
        )
        now = await connection.fetchval("SELECT now()")
    finally:
        await connection.close()
    return int((latest_end - now).total_seconds() - offset) + 60


async def _advance(installation_id: str, seconds: int) -> dict[str, Any]:
    from moneyrail.config import get_settings
    from moneyrail.db.engine import create_engine, create_sessionmaker
    from moneyrail.db.uow import UnitOfWork
    from moneyrail.kit.tenant import Tenant
    from moneyrail.processor import provider
    from moneyrail.sandbox import service as sandbox

    # the sandbox processor's pool belongs to the event loop that made it, and each phase of this script
    # runs its own (asyncio.run): the advance's due work (cost reports) gets one of this loop
    provider._processor = None
    engine = create_engine(get_settings())
    async with UnitOfWork(create_sessionmaker(engine)) as uow:
        # committed a chunk at a time, as the HTTP advance does (without an Idempotency-Key)
        view = await sandbox.advance_clock(
            uow, Tenant(installation_id, False), seconds, idempotency_key_claimed=False
        )
        await uow.commit()
    await engine.dispose()
    return dict(view.work_done)


async def _vacuum_analyze(database_url: str) -> float:
    """`VACUUM (ANALYZE)` of the whole database, untimed, between phases: the shared server runs with
    autovacuum off (its CI configuration), and without it the second cycle runs on the first one's dead
    rows and on plans made for empty tables. In service autovacuum does this as the tables grow (a
    month passes between two cycles)."""
    connection = await _connect(database_url)
    try:
        started = time.perf_counter()
        await connection.execute("VACUUM (ANALYZE)")
        return round(time.perf_counter() - started, 1)
    finally:
        await connection.close()


_PAID = "SELECT count(*) FILTER (WHERE status = 'paid'), count(*) FROM subscription_invoices WHERE cycle = $1"


async def _wait_until_paid(database_url: str, cycle: int, expected: int, deadline: float) -> tuple[int, int]:
    """One connection, polled gently: the observer must not take the CPU it measures."""
    connection = await _connect(database_url)
    try:
        while True:
            paid, opened = await connection.fetchrow(_PAID, cycle)
            if paid >= expected or time.perf_counter() > deadline:
                return int(paid), int(opened)
            await asyncio.sleep(0.5)
    finally:
        await connection.close()


# Set-based (joins on aggregates, hashed sets), so that they stay seconds at 100,000 subscriptions; each
# takes the cycle as $1 and the installation as $2.
_CHECKS = {
    # one invoice per subscription for the cycle (the unique index says at most one)
    "subscriptions_without_this_cycles_invoice": """
        SELECT count(*) FROM subscriptions s WHERE s.installation_id = $2
          AND NOT EXISTS (
            SELECT 1 FROM subscription_invoices i WHERE i.subscription_id = s.id AND i.cycle = $1)""",
    "invoices_not_paid": """
        SELECT count(*) FROM subscription_invoices
        WHERE cycle = $1 AND installation_id = $2 AND status <> 'paid'""",
    # at the processor: the charge key asked once per invoice, and one captured authorization per payment
    "invoices_not_authorized_exactly_once": """
        SELECT count(*) FROM subscription_invoices i
        LEFT JOIN (SELECT idempotency_key, count(*) AS calls FROM sandbox_processor_calls
                   WHERE installation_id = $2 AND operation_type = 'authorize' GROUP BY idempotency_key) c
          ON c.idempotency_key = i.id || ':charge'
        WHERE i.cycle = $1 AND i.installation_id = $2 AND coalesce(c.calls, 0) <> 1""",
    "invoices_not_captured_exactly_once": """
        SELECT count(*) FROM subscription_invoices i JOIN payment_intents p ON p.id = i.payment_intent_id
        LEFT JOIN (SELECT reference, count(*) AS captured FROM sandbox_authorizations
                   WHERE installation_id = $2 AND status = 'captured' GROUP BY reference) a
          ON a.reference = p.id
        WHERE i.cycle = $1 AND i.installation_id = $2 AND coalesce(a.captured, 0) <> 1""",
    # in the database: one succeeded payment per subscription for the cycle, one capture posting each
    "subscriptions_not_paid_exactly_once": """
        SELECT count(*) FROM (
            SELECT s.id FROM subscriptions s
            LEFT JOIN subscription_invoices i ON i.subscription_id = s.id AND i.cycle = $1
            LEFT JOIN payment_intents p ON p.id = i.payment_intent_id AND p.status = 'succeeded'
            WHERE s.installation_id = $2 GROUP BY s.id HAVING count(p.id) <> 1) wrong""",
    "succeeded_payments_without_one_capture_posting": """
        SELECT count(*) FROM payment_intents p JOIN subscription_invoices i ON i.payment_intent_id = p.id
        LEFT JOIN (SELECT reference, count(*) AS postings FROM journal_transactions
                   WHERE kind = 'payment_capture' GROUP BY reference) j ON j.reference = p.id
        WHERE i.cycle = $1 AND p.installation_id = $2 AND p.status = 'succeeded'
          AND coalesce(j.postings, 0) <> 1""",
    # a captured authorization that no payment records: a charge nobody knows of
    "captured_authorizations_no_payment_knows": """
        SELECT count(*) FROM sandbox_authorizations a WHERE a.installation_id = $2 AND a.status = 'captured'
          AND $1::int IS NOT NULL  -- every cycle's: the parameter only keeps the two-argument form
          -- NOT EXISTS, an anti-join: NOT IN over 100,000s of ids outgrows work_mem and runs unhashed,
          -- one scan of every payment per authorization
          AND NOT EXISTS (SELECT 1 FROM payment_intents p
                          WHERE p.installation_id = $2 AND p.processor_authorization = a.id)""",
}


_RETRIES = """
    SELECT count(*), count(*) FILTER (WHERE a.error LIKE '%too many clients%')
    FROM operation_attempts a JOIN subscription_invoices i ON i.operation_id = a.operation_id
    WHERE i.cycle = $1 AND i.installation_id = $2 AND a.outcome = 'retry'
"""


async def _retries(database_url: str, cycle: int, installation_id: str) -> dict[str, int]:
    """Renewal attempts that were retried, and how many because the shared server had no connection left."""
    connection = await _connect(database_url)
    try:
        retried, out_of_connections = await connection.fetchrow(_RETRIES, cycle, installation_id)
    finally:
        await connection.close()
    return {"attempts_retried": int(retried), "of_which_out_of_connections": int(out_of_connections)}


async def _checks(database_url: str, cycle: int, installation_id: str) -> dict[str, int]:
    connection = await _connect(database_url)
    try:
        return {
            name: int(await connection.fetchval(sql, cycle, installation_id)) for name, sql in _CHECKS.items()
        }
    finally:
        await connection.close()


def renew_round(
    run: harness.RunContext, catalog_: Catalog, cycle: int, expected: int, limit_s: float
) -> dict[str, Any]:
    env = {
        **run.env,
        "MONEYRAIL_DB_POOL_SIZE": str(WORKER_POOL),
        "MONEYRAIL_WORKER_METRICS_PORT": str(harness.free_port()),
    }
    database_url = run.services.database_url
    moneyrail = [str(harness.MONEYRAIL)]
    workers = run.processes.start(
        f"renewals-workers-{cycle}",
        [*moneyrail, "worker", "--processes", str(PROCESSES), "--threads", str(THREADS)],
        env,
    )
    scheduler = run.processes.start(f"renewals-scheduler-{cycle}", [*moneyrail, "scheduler"], env)
    try:
        time.sleep(8)  # the fleet boots before the clock starts
        seconds = asyncio.run(_due_instant_advance(database_url, catalog_.installation_id))
        load_before = harness.load_average()
        window = harness.CpuWindow.now()
        started = time.perf_counter()
        work_done = _when_connections_allow(lambda: asyncio.run(_advance(catalog_.installation_id, seconds)))
        opened_at = time.perf_counter()
        # charged while the advance was still opening (its chunks overlap the charging): one poll
        paid_at_opening, _ = asyncio.run(_wait_until_paid(database_url, cycle, expected, 0))
        paid, opened = asyncio.run(_wait_until_paid(database_url, cycle, expected, started + limit_s))
        finished = time.perf_counter()
        # the advance runs in this process (and the observer's one poll each 0.5 s)
        cpu = window.until_now(DATABASE, workers=workers.pid, scheduler=scheduler.pid, advance=os.getpid())
        load_after = harness.load_average()
    finally:
        run.processes.stop_all()
    elapsed, charging = finished - started, finished - opened_at
    return {
        "cycle": cycle,
        "advanced_seconds": seconds,
        "due_work": work_done,
        "renewal_invoices_opened": opened,
        "renewals_paid": paid,
        "all_paid": paid >= expected,
        "seconds_opening": round(opened_at - started, 2),
        "seconds_charging": round(charging, 2),
        "renewals_paid_when_opened": paid_at_opening,
        "seconds_until_all_paid": round(elapsed, 2),
        "renewals_per_second": round(paid / elapsed, 1),
        "renewals_per_second_charging_only": round(paid / charging, 1),
        # CPU per renewal, what the shared machine's load disturbs least: the run's own processes and
        # PostgreSQL (its server processes serve every database of the shared server: an upper bound)
        "cpu_ms_per_renewal": {
            role: round(cpu["cpu_percent_of_one_core"][role] * 10 * elapsed / max(paid, 1), 3)
            for role in ("workers", "scheduler", "advance", "postgres")
        },
        "machine_cpu_busy_percent": cpu["machine_cpu_busy_percent"],
        "cpu_percent_of_one_core": cpu["cpu_percent_of_one_core"],
        "other_processes": cpu["other_processes"],
        "load_average_before": load_before,
        "load_average_after": load_after,
        "renewal_retries": asyncio.run(_retries(database_url, cycle, catalog_.installation_id)),
        "checks": asyncio.run(_checks(database_url, cycle, catalog_.installation_id)),
    }


def engine_one_operation_rate(run: harness.RunContext, operations: int) -> dict[str, Any]:
    import engine as engine_bench  # bench/engine.py

    load_before = harness.load_average()
    measured = engine_bench.engine_rate(
        run.services.database_url, run.services.redis_url, engine_bench.PROBE_TYPE, operations, ENGINE_THREADS
    )
    return {
        "operation_type": measured["operation_type"],
        "operations": measured["operations"],
        "seconds": measured["seconds"],
        "per_second": measured["per_second"],
        "retried_operations": measured["retried_operations"],
        "load_average_before": load_before,
        "load_average_after": harness.load_average(),
    }


def _ledger_verify(env: dict[str, str]) -> int:
    """`moneyrail ledger verify`'s exit code; asked again while it cannot even connect (the shared
    server out of connections decides nothing about the ledger)."""
    for _ in range(60):
        verify = subprocess.run(
            [str(harness.MONEYRAIL), "ledger", "verify"], env=env, capture_output=True, text=True
        )
        if not _out_of_connections(verify.stdout + verify.stderr):
            break
        time.sleep(2)
    print(verify.stdout.strip(), verify.stderr.strip(), flush=True)
    return verify.returncode


def history_figures(document: dict[str, Any]) -> dict[str, Any]:
    """The key figures of a run, for its history row: each round's."""
    rounds = document["rounds"]
    return {
        "subscriptions": document["seeding"]["subscriptions"],
        "seeded_per_s": document["seeding"]["per_second"],
        "engine_ops_per_s_by_round": [entry["engine_one_operation"]["per_second"] for entry in rounds],
        "renewals_per_s_by_round": [entry["renewals"]["renewals_per_second"] for entry in rounds],
        "ratio_by_round": [entry["ratio"] for entry in rounds],
        "met": document["met"],
        "valid": document["valid"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subscriptions", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--customers", type=int, default=1000, help="customers the subscriptions share")
    parser.add_argument("--seeders", type=int, default=3, help="seeding processes")
    parser.add_argument("--engine-operations", type=int, default=3000)
    parser.add_argument("--round-timeout", type=float, default=1800, help="seconds a round may take")
    harness.add_record_options(parser)
    args = parser.parse_args()
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    rounds: list[dict[str, Any]] = []
    problems: list[str] = []
    with harness.run_context(DATABASE) as run:
        os.environ["DATABASE_URL"] = run.services.database_url
        os.environ["REDIS_URL"] = run.services.redis_url
        os.environ.setdefault("MONEYRAIL_SECRET_KEYS", run.env["MONEYRAIL_SECRET_KEYS"])
        os.environ["MONEYRAIL_DB_POOL_SIZE"] = str(SEEDER_POOL)
        machine = harness.machine_info(run.services)
        load_before_seeding = harness.load_average()
        catalog_, seed_seconds = seed(
            args.subscriptions, min(args.customers, args.subscriptions), args.seeders
        )
        print(f"seeded {args.subscriptions} in {seed_seconds:.0f} s", flush=True)
        seeding = {
            "subscriptions": args.subscriptions,
            "customers": len(catalog_.customers),
            "processes": args.seeders,
            "seconds": round(seed_seconds, 1),
            "per_second": round(args.subscriptions / seed_seconds, 1),
            "load_average_before": load_before_seeding,
            "load_average_after": harness.load_average(),
        }
        for cycle in range(1, args.rounds + 1):
            vacuumed = asyncio.run(_vacuum_analyze(run.services.database_url))
            print(f"round {cycle}: VACUUM (ANALYZE) in {vacuumed} s", flush=True)
            engine = _when_connections_allow(engine_one_operation_rate, run, args.engine_operations)
            print(f"round {cycle}: engine one operation per message {engine['per_second']}/s", flush=True)
            renewal = renew_round(run, catalog_, cycle, args.subscriptions, args.round_timeout)
            ratio = renewal["renewals_per_second"] / engine["per_second"]
            rounds.append(
                {
                    "vacuum_analyze_seconds_before": vacuumed,
                    "engine_one_operation": engine,
                    "renewals": renewal,
                    "ratio": round(ratio, 3),
                }
            )
            print(
                f"round {cycle}: {renewal['renewals_paid']} renewals in"
                f" {renewal['seconds_until_all_paid']} s, {renewal['renewals_per_second']}/s,"
                f" ratio {ratio:.3f}, checks {renewal['checks']}",
                flush=True,
            )
            if not renewal["all_paid"]:
                problems.append(f"round {cycle}: {renewal['renewals_paid']} of {args.subscriptions} paid")
            problems += [f"round {cycle}: {name} = {n}" for name, n in renewal["checks"].items() if n]
        verify = _ledger_verify(run.env)
        if verify != 0:
            problems.append(f"moneyrail ledger verify exited {verify}")
    met = bool(rounds) and all(r["ratio"] >= 1.0 for r in rounds)
    document = {
        "benchmark": "renewals",
        "started_at": started_at,
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine,
        "software": harness.software_info(),
        "command": " ".join(sys.argv),
        "worker_processes": PROCESSES,
        "threads_per_process": THREADS,
        "engine_threads_per_process": ENGINE_THREADS,
        "seeding": seeding,
        "rounds": rounds,
        "target": "renewals/s >= the engine's one-operation rate, in every round of the run",
        "met": met,
        "ledger_verify_passed": verify == 0,
        "valid": not problems,
        "problems": problems,
    }
    print(f"met: {met}; problems: {problems or 'none'}")
    if args.record:
        path = harness.record("renewals", document, history_figures(document), args.note)
        print(f"recorded in {path.relative_to(harness.REPO_DIR)}")
    sys.exit(1 if problems else 0 if met else 2)


if __name__ == "__main__":
    main()
