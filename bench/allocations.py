"""Allocation commits benchmark: allocation groups of 4 recipients committed through the
workers per second, against the engine benchmark's one-operation-per-message rate in the same run.

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres REDIS_URL=redis://127.0.0.1:6379/3 \\
        .venv/bin/python bench/allocations.py --rounds 2

Each round, one after the other on the same fresh database (`moneyrail_bench_allocations`):

1. **engine**: bench/engine.py's `engine_rate` for the probe's one-operation-per-message type
   (imported, not copied): `--operations` probe operations committed at once, drained by
   `moneyrail worker --processes 2 --threads N` and `moneyrail scheduler`.
2. **allocations**, with the same worker count: seeded through the service functions, not over HTTP
   and not timed: a platform installation, `--accounts` connected accounts, `--groups` payments created
   and confirmed with the sandbox card 4242 (automatic capture: captured), and on each payment an
   allocation group reserving what it can distribute, split into 4 allocations (40/30/20/10 %, largest
   remainder) to 4 different accounts. With the fleet booted, every group's commit is requested
   (`transfers.commit_group`, what `POST /v1/allocation-groups/{id}/commit` calls) in one
   transaction, as a burst of requests leaves them; the clock starts at that transaction's commit and
   stops when every group is `committed`. The sandbox processor answers each transfer, as in the
   product. A commit is one `allocation_commit` operation whatever the number of recipients; sandbox
   commits are batched by the product itself (transfers.COMMIT_BATCH to a message, one processor call
   and one database commit per batch; live ones run alone): bench/README.md says what a batch is.

Target: allocation groups committed per second >= 0.5 x the engine's operations per second, met in
every round (`--rounds`, 2 by default). After each round, straight in the database: every allocation
has exactly one transfer, `paid`, with one successful processor call under its key and one `transfer`
journal transaction; each group's transfers sum to its allocations and its reserved amount; what the
connected accounts received in the ledger equals what was allocated; no operation retried or
dead-lettered; and `moneyrail ledger verify` exits 0 after the last round.

Recorded: `results/allocations-latest.json` (every round, the machine's load average, CPU per group by
part of the system) and a row of `results/allocations-history.csv`. `--statements N` counts instead the
SQL statements, round trips and CPU of N commits (alone and in batches) and N probe operations, one at
a time through tests/sql_counter.py's wire proxy; it records nothing.
Exit code 0 when every round met the target and every check held, 1 when a check failed, 2 on a miss.

At a real processor's latency (issue 31): `--processor-latency-ms 150` (round trips drawn within
± `--processor-jitter-ms`, 50 by default) replaces the engine reference: each round commits its groups
once with the fleet's sandbox processor at 0 ms, then once (freshly seeded) with the fleet reaching it
over the network model (MONEYRAIL_SANDBOX_LATENCY_MS and _JITTER_MS, processor/sandbox/network.py).
Target: transfers committed per second at the latency >= 0.8 x at 0 ms, in every round. Both
measurements record the database connections in use meanwhile (pg_stat_activity every 100 ms).
Recorded: `results/allocations-latency-latest.json` and a row of `results/allocations-latency-history.csv`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import engine as engine_bench  # bench/engine.py: its measurement, imported (it sets sys.path too)
import harness

from moneyrail.config import Settings
from moneyrail.connect import service as connect
from moneyrail.connect.schemas import ConnectedAccountCreate, ExternalAccountIn
from moneyrail.db.engine import create_engine, create_sessionmaker
from moneyrail.db.migrate import upgrade
from moneyrail.db.uow import UnitOfWork
from moneyrail.installations import service as installations
from moneyrail.kit.money import split_largest_remainder
from moneyrail.kit.tenant import Tenant
from moneyrail.logging import configure_logging
from moneyrail.payment_methods.schemas import CardIn
from moneyrail.payments import service as payments
from moneyrail.payments.schemas import PaymentIntentConfirm, PaymentIntentCreate
from moneyrail.processor.interface import TransferRequest
from moneyrail.processor.sandbox import SandboxProcessor
from moneyrail.transfers import commit as transfer_commit
from moneyrail.transfers import service as transfers
from moneyrail.transfers.schemas import AllocationCreate, AllocationGroupCreate
from tests.engine.probe import PROBE_TYPE

DATABASE = "moneyrail_bench_allocations"
RECIPIENTS = 4
SHARES = [40, 30, 20, 10]  # of each group's amount, in %: 4 recipients, largest remainder
SEED_BATCH = 100  # payments (or groups) per seeding transaction
TARGET = 0.5
# at a real processor's latency (issue 31): 150 ms ± 50 per call, committed/s >= 0.8 x at 0 ms
LATENCY_JITTER_MS = 50.0
LATENCY_TARGET = 0.8
BATCH = transfers.COMMIT_BATCH  # sandbox commits to a message
PROCESSES = engine_bench.PROCESSES


@dataclass
class Seeded:
    tenant: Tenant
    group_ids: list[str]
    allocated: int


async def seed(database_url: str, groups: int, accounts: int) -> Seeded:
    """A platform installation, its connected accounts, captured payments and an open group of 4
    allocations on each: every step through the service functions."""
    engine = create_engine(Settings(DATABASE_URL=database_url, db_pool_size=4))
    sessionmaker = create_sessionmaker(engine)
    # the sandbox network keeps its books on its own connections, as in the product (processor/provider.py)
    processor_engine = create_engine(Settings(DATABASE_URL=database_url, db_pool_size=2))
    processor = SandboxProcessor(create_sessionmaker(processor_engine))
    try:
        async with UnitOfWork(sessionmaker) as uow:
            installation = await installations.create_installation(
                uow.session, name="bench allocations", kind="platform"
            )
            tenant = Tenant(installation.id, False)
            account_ids = []
            for number in range(accounts):
                account = await connect.create_connected_account(
                    uow.session,
                    tenant,
                    ConnectedAccountCreate(
                        kind="courier",
                        display_name=f"Courier {number}",
                        external_account=ExternalAccountIn(account_number=f"DE89370400440532{number:06d}"),
                    ),
                )
                account_ids.append(account.id)
            await uow.commit()  # the processor's own transactions must see the installation
        card = CardIn(number="4242424242424242", exp_month=12, exp_year=2034, cvc="123")
        group_ids: list[str] = []
        allocated = 0
        while len(group_ids) < groups:
            async with UnitOfWork(sessionmaker) as uow:
                session = uow.session
                for _ in range(min(SEED_BATCH, groups - len(group_ids))):
                    number = len(group_ids)
                    created = await payments.create_payment_intent(
                        session,
                        tenant,
                        PaymentIntentCreate(amount=5000 + number % 997, currency="eur"),
                    )
                    payment = await payments.confirm_payment_intent(
                        session,
                        tenant,
                        processor,
                        created.payment.id,
                        PaymentIntentConfirm(client_secret=created.client_secret, card=card),
                        base_url="http://127.0.0.1",
                    )
                    amount = await transfers.distributable(session, payment)
                    group = await transfers.create_group(
                        session, tenant, AllocationGroupCreate(payment_intent=payment.id, amount=amount)
                    )
                    for slot, share in enumerate(split_largest_remainder(amount, SHARES)):
                        recipient = account_ids[(number * RECIPIENTS + slot) % len(account_ids)]
                        await transfers.add_allocation(
                            session, tenant, group.id, AllocationCreate(recipient=recipient, amount=share)
                        )
                    group_ids.append(group.id)
                    allocated += amount
                await uow.commit()
            print(f"seeded {len(group_ids)} groups", file=sys.stderr, flush=True)
        return Seeded(tenant, group_ids, allocated)
    finally:
        await engine.dispose()
        await processor_engine.dispose()


async def request_commits(database_url: str, seeded: Seeded) -> tuple[float, float]:
    """Every group's commit requested in one transaction; (seconds the requests took, its commit time)."""
    engine = create_engine(Settings(DATABASE_URL=database_url, db_pool_size=2))
    try:
        async with UnitOfWork(create_sessionmaker(engine)) as uow:
            started = time.perf_counter()
            for group_id in seeded.group_ids:
                await transfers.commit_group(uow.session, seeded.tenant, group_id)
            requested = time.perf_counter() - started
            await uow.commit()
            committed_at = time.perf_counter()
    finally:
        await engine.dispose()
    return requested, committed_at


async def wait_until_committed(database_url: str, installation_id: str, groups: int, limit_s: float) -> str:
    """Polls one connection gently (the observer must not take the CPU it measures); the outcome."""
    connection = await asyncpg.connect(harness.plain_url(database_url))
    deadline = time.monotonic() + limit_s
    try:
        while True:
            committed, failed = await connection.fetchrow(
                "SELECT count(*) FILTER (WHERE status = 'committed'),"
                " count(*) FILTER (WHERE status = 'failed')"
                " FROM allocation_groups WHERE installation_id = $1",
                installation_id,
            )
            if committed == groups:
                return "committed"
            if failed:
                return f"{failed} group(s) failed"
            if time.monotonic() > deadline:
                return f"only {committed} of {groups} committed after {limit_s:.0f} s"
            await asyncio.sleep(0.1)
    finally:
        await connection.close()


CHECKS = """
WITH mine AS (SELECT id, amount, amount_allocated FROM allocation_groups WHERE installation_id = $1),
per_allocation AS (
    SELECT a.id, count(t.id) AS transfers, count(t.id) FILTER (WHERE t.status = 'paid') AS paid
    FROM allocations a LEFT JOIN transfers t ON t.allocation_id = a.id
    WHERE a.allocation_group_id IN (SELECT id FROM mine) GROUP BY a.id
),
per_group AS (
    SELECT g.id, g.amount, g.amount_allocated,
           (SELECT sum(amount) FROM allocations WHERE allocation_group_id = g.id) AS allocations_sum,
           (SELECT sum(amount) FROM transfers WHERE allocation_group_id = g.id) AS transfers_sum
    FROM mine g
)
SELECT
    (SELECT count(*) FROM per_allocation) AS allocations,
    (SELECT count(*) FROM per_allocation WHERE transfers = 1 AND paid = 1) AS allocations_paid_once,
    (SELECT count(*) FROM transfers WHERE installation_id = $1) AS transfers,
    (SELECT count(*) FROM per_group
      WHERE transfers_sum = allocations_sum AND allocations_sum = amount_allocated
        AND amount_allocated = amount)
      AS groups_summing_exactly,
    (SELECT coalesce(sum(amount), 0) FROM transfers WHERE installation_id = $1) AS transferred,
    (SELECT count(*) FROM sandbox_processor_calls
      WHERE installation_id = $1 AND operation_type = 'transfer' AND succeeded) AS processor_transfers,
    (SELECT count(DISTINCT idempotency_key) FROM sandbox_processor_calls
      WHERE installation_id = $1 AND operation_type = 'transfer') AS processor_keys,
    (SELECT count(*) FROM journal_transactions
      WHERE installation_id = $1 AND kind = 'transfer') AS journal_transfers,
    (SELECT count(DISTINCT reference) FROM journal_transactions
      WHERE installation_id = $1 AND kind = 'transfer') AS journal_transfer_references,
    (SELECT coalesce(sum(p.amount), 0) FROM postings p JOIN ledger_accounts la ON la.id = p.account_id
      JOIN journal_transactions j ON j.id = p.transaction_id
      WHERE la.installation_id = $1 AND la.code LIKE 'connect:%' AND j.kind = 'transfer')
      AS received_in_ledger,
    (SELECT count(*) FROM operations WHERE installation_id = $1 AND type = 'allocation_commit') AS operations,
    (SELECT count(*) FROM operations WHERE installation_id = $1 AND type = 'allocation_commit'
      AND status = 'succeeded') AS operations_succeeded,
    (SELECT count(*) FROM operations WHERE installation_id = $1 AND attempts > 1) AS operations_retried
"""


async def check(database_url: str, seeded: Seeded) -> tuple[dict[str, int], list[str]]:
    """Every transfer exactly once, the amounts exact: the figures, and what did not hold."""
    connection = await asyncpg.connect(harness.plain_url(database_url))
    try:
        row = await connection.fetchrow(CHECKS, seeded.tenant.installation_id)
    finally:
        await connection.close()
    figures = {key: int(value) for key, value in row.items()}
    groups = len(seeded.group_ids)
    transfers_expected = groups * RECIPIENTS
    expected = {
        "allocations": transfers_expected,
        "allocations_paid_once": transfers_expected,
        "transfers": transfers_expected,
        "groups_summing_exactly": groups,
        "transferred": seeded.allocated,
        "processor_transfers": transfers_expected,
        "processor_keys": transfers_expected,
        "journal_transfers": transfers_expected,
        "journal_transfer_references": transfers_expected,
        "received_in_ledger": seeded.allocated,
        "operations": groups,
        "operations_succeeded": groups,
    }  # operations_retried is recorded, not checked: a retry (a shared server out of connections) is allowed
    problems = [
        f"{name}: {figures[name]}, expected {value}"
        for name, value in expected.items()
        if figures[name] != value
    ]
    return figures, problems


def wait_until_ready(log_name: str, processes: int, limit_s: float = 120.0) -> None:
    """On a loaded machine the workers' imports outlast engine.py's 4 s: wait for each process's own
    "ready for action" line (dramatiq's log), so the window never includes a boot."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if harness.log_tail(log_name, 200).count("Worker process is ready for action") >= processes:
            return
        time.sleep(0.2)
    raise harness.BenchError(
        f"the workers did not boot within {limit_s:.0f} s:\n{harness.log_tail(log_name)}"
    )


def allocation_rate(
    services: harness.Services,
    groups: int,
    accounts: int,
    threads: int,
    network: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Seed, boot the fleet, request every commit at once, time until every group is committed. With
    `network` (harness.processor_network_env), the fleet's sandbox processor is reached over it."""
    database_url = services.database_url
    seeding_started = time.perf_counter()
    seeded = asyncio.run(seed(database_url, groups, accounts))
    seeding_s = time.perf_counter() - seeding_started
    env = {
        **harness.server_env(services),
        # one connection per thread and a few spare, as bench/engine.py gives its fleet
        "MONEYRAIL_DB_POOL_SIZE": str(max(20, threads + 4)),
        # the level a deployment runs at, and the one whose lines say each worker process is ready
        "MONEYRAIL_LOG_LEVEL": "INFO",
        "MONEYRAIL_WORKER_METRICS_PORT": str(harness.free_port()),
        **(network or {}),
    }
    processes = harness.Processes()
    try:
        scheduler = processes.start("allocations-scheduler", [str(harness.MONEYRAIL), "scheduler"], env)
        workers = processes.start(
            "allocations-workers",
            [str(harness.MONEYRAIL), "worker", "--processes", str(PROCESSES), "--threads", str(threads)],
            env,
        )
        time.sleep(4)  # the fleet boots, as in bench/engine.py: steady work is measured, not start-up
        wait_until_ready("allocations-workers", PROCESSES)
        asyncio.run(harness.checkpoint(database_url, vacuum=True))  # the seeding's dead rows too
        requested_s, committed_at = asyncio.run(request_commits(database_url, seeded))
        # the requests' own work (writing 4 pending transfers, an operation, events per group) happens
        # before the commit; the workers see nothing of it until then: that is when the clock starts
        cpu = harness.CpuWindow.now()
        with harness.ConnectionSampler(database_url) as connections:
            outcome = asyncio.run(
                wait_until_committed(database_url, seeded.tenant.installation_id, groups, limit_s=600)
            )
        elapsed = time.perf_counter() - committed_at
        window = cpu.until_now(DATABASE, workers=workers.pid, scheduler=scheduler.pid)
    finally:
        processes.stop_all()
    figures, problems = asyncio.run(check(database_url, seeded))
    if outcome != "committed":
        problems.insert(0, outcome)
    return {
        "groups": groups,
        "recipients_per_group": RECIPIENTS,
        "connected_accounts": accounts,
        "seeding_s": round(seeding_s, 1),
        "commit_requests_s": round(requested_s, 3),
        "seconds": round(elapsed, 3),
        "per_second": round(groups / elapsed, 1),
        "transfers_per_second": round(groups * RECIPIENTS / elapsed, 1),
        "cpu": window,
        "postgres_connections": connections.summary(),
        "cpu_ms_per_group": {
            role: round(percent * 10 * elapsed / groups, 2)
            for role, percent in window["cpu_percent_of_one_core"].items()
        },
        "checks": figures,
        "problems": problems,
    }


async def count_statements(services: harness.Services, groups: int, accounts: int) -> dict[str, Any]:
    """Diagnostic (`--statements N`): SQL statements and round trips of one allocation commit against one
    probe operation, each run by `run_operation` in this process, one at a time, through the wire
    proxy of tests/sql_counter.py (bench/statements.py's way of counting). Records nothing."""
    from sqlalchemy.engine import make_url

    import moneyrail.domains  # noqa: F401  (every outcome listener, as in a worker)
    from moneyrail.engine.service import each, run_phased_operations
    from tests.engine.probe_actors import prepare_probe
    from tests.sql_counter import StatementCounter

    # N commits alone, then N batches of the sandbox's COMMIT_BATCH, as a worker gets them
    seeded = await seed(services.database_url, groups * (1 + BATCH), accounts)
    url = make_url(services.database_url)
    async with UnitOfWork(
        create_sessionmaker(create_engine(Settings(DATABASE_URL=services.database_url)))
    ) as uow:
        probes = [
            # number x 50: every probe pays acct_0 (engine.py's accounts cycle mod 50), so the ledger's
            # accounts exist after the first and the counts are the steady state, as with --accounts 4
            (await engine_bench.create_probe(uow.session, seeded.tenant, PROBE_TYPE, number * 50, "count")).id
            for number in range(groups)
        ]
        await uow.commit()
    await request_commits(services.database_url, seeded)
    connection = await asyncpg.connect(harness.plain_url(services.database_url))
    commits = [
        row["id"]
        for row in await connection.fetch(
            "SELECT id FROM operations WHERE type = 'allocation_commit' ORDER BY created_at, id"
        )
    ]
    await connection.close()
    with StatementCounter(url.host or "127.0.0.1", url.port or 5432) as counter:
        proxied = url.set(host="127.0.0.1", port=counter.port).render_as_string(hide_password=False)
        engine = create_engine(Settings(DATABASE_URL=proxied, db_pool_size=4))
        processor_engine = create_engine(Settings(DATABASE_URL=proxied, db_pool_size=2))
        sessionmaker = create_sessionmaker(engine)
        processor = SandboxProcessor(create_sessionmaker(processor_engine))

        async def commit(session: Any, operations: Any) -> Any:
            return await transfer_commit.prepare_commits(session, operations, processor)

        async def four_processor_calls(number: int) -> None:
            # a commit's one batch call of 4 transfers (each under its own key), as prepare_commits asks it
            await processor.create_transfers(
                seeded.tenant,
                idempotency_key=f"bench:{number}:transfers",
                transfers=[
                    TransferRequest(f"bench:{number}:{slot}", 100 + slot, "eur", f"acct_bench{slot}")
                    for slot in range(RECIPIENTS)
                ],
            )

        def postgres_ticks() -> int:
            table = harness.process_table()
            return sum(table[pid].ticks for pid in harness.postgres_members(table, DATABASE))

        tallies: dict[str, list[Any]] = {}
        cpu: dict[str, tuple[float, int]] = {}
        try:
            alone, batched = commits[:groups], commits[groups:]
            batches = [batched[start : start + BATCH] for start in range(0, len(batched), BATCH)]
            for kind, work, handler in (
                ("probe", [[operation_id] for operation_id in probes], each(prepare_probe)),
                ("allocation_commit", [[operation_id] for operation_id in alone], commit),
                ("processor_calls_alone", [[str(n)] for n in range(groups)], None),
                (f"allocation_commit_batch_of_{BATCH}", batches, commit),
            ):
                tallies[kind] = []
                thread_s, ticks = 0.0, 0
                for number, operation_ids in enumerate(work):
                    counter.take()
                    thread_before, ticks_before = time.thread_time(), postgres_ticks()
                    if handler is None:  # what the processor's batch call of a commit costs by itself
                        await four_processor_calls(number)
                    else:
                        # a batch as a worker runs it: the engine's phased handler, for all at once
                        results = await run_phased_operations(
                            sessionmaker, operation_ids, handler, worker="bench", lease=timedelta(seconds=60)
                        )
                        if any(result.outcome != "succeeded" for result in results):
                            raise harness.BenchError(f"{operation_ids} ended {results}")
                    if number >= 2 or len(work) <= 2:  # the first ones prepare statements, open connections
                        taken = counter.take()
                        # per operation: a batch's counts are shared by its operations
                        tallies[kind].append((taken, len(operation_ids)))
                        thread_s += time.thread_time() - thread_before
                        ticks += postgres_ticks() - ticks_before
                cpu[kind] = (thread_s, ticks)
        finally:
            await engine.dispose()
            await processor_engine.dispose()
    hz = os.sysconf("SC_CLK_TCK")
    summary: dict[str, Any] = {}
    for kind, taken in tallies.items():
        thread_s, ticks = cpu[kind]
        operations = sum(count for _, count in taken)
        summary[kind] = {
            "operations": operations,
            "statements": round(sum(len(t.statements) for t, _ in taken) / operations, 1),
            "round_trips": round(sum(t.round_trips for t, _ in taken) / operations, 1),
            # one at a time on an otherwise shared machine: the event loop thread's own CPU (the proxy's
            # thread excluded) and PostgreSQL's (this database's backends and the server's own processes)
            "python_cpu_ms": round(thread_s * 1000 / operations, 2),
            "postgresql_cpu_ms": round(ticks * 1000 / hz / operations, 2),
            "last": dict(taken[-1][0].by_text().most_common()),
        }
    return summary


def history_figures(document: dict[str, Any]) -> dict[str, Any]:
    """The key figures of a run, for its history row: each round's."""
    rounds = document["rounds"]
    return {
        "groups_per_round": rounds[0]["allocations"].get("groups") if rounds else None,
        "engine_ops_per_s_by_round": [entry["engine_one_per_message"]["per_second"] for entry in rounds],
        "groups_per_s_by_round": [entry["allocations"]["per_second"] for entry in rounds],
        "ratio_by_round": [entry["ratio"] for entry in rounds],
        "met": document["met"],
        "valid": document["valid"],
    }


def ledger_verify(services: harness.Services) -> tuple[bool, str]:
    completed = subprocess.run(
        [str(harness.MONEYRAIL), "ledger", "verify"],
        env=harness.server_env(services),
        capture_output=True,
        text=True,
        timeout=1800,
    )
    return completed.returncode == 0, (completed.stdout + completed.stderr).strip()[-2000:]


def latency_rounds(
    services: harness.Services, args: argparse.Namespace, started_at: str, machine: dict[str, Any]
) -> None:
    """Each round: the commits with the fleet's processor at 0 ms, then over the network model at
    `--processor-latency-ms`; the ratio of transfers committed per second, recorded; exits as main."""
    network = harness.processor_network_env(args.processor_latency_ms, args.processor_jitter_ms)
    rounds: list[dict[str, Any]] = []
    for number in range(1, args.rounds + 1):
        load_before = harness.load_average()
        fast = allocation_rate(services, args.groups, args.accounts, args.threads)
        slow = allocation_rate(services, args.groups, args.accounts, args.threads, network)
        ratio = slow["transfers_per_second"] / fast["transfers_per_second"]
        problems = fast["problems"] + slow["problems"]
        rounds.append(
            {
                "round": number,
                "load_average_before": load_before,
                "load_average_after": harness.load_average(),
                "at_0ms": fast,
                "at_latency": slow,
                "ratio": round(ratio, 3),
                "met": ratio >= LATENCY_TARGET and not problems,
            }
        )
        print(
            f"round {number}: {fast['transfers_per_second']} transfers/s at 0 ms,"
            f" {slow['transfers_per_second']} at {args.processor_latency_ms:g} ms, ratio {ratio:.3f}"
            f" (target {LATENCY_TARGET}); connections in use on average"
            f" {fast['postgres_connections'].get('mean', {}).get('in_use')} /"
            f" {slow['postgres_connections'].get('mean', {}).get('in_use')}; problems: {problems or 'none'}",
            file=sys.stderr,
            flush=True,
        )
    verified, verify_output = ledger_verify(services)
    problems = [
        problem
        for entry in rounds
        for name in ("at_0ms", "at_latency")
        for problem in entry[name]["problems"]
    ]
    if not verified:
        problems.append(f"ledger verify failed: {verify_output}")
    document = {
        "benchmark": "allocations-latency",
        "mode": "processor_latency",
        "started_at": started_at,
        "command": " ".join(["bench/allocations.py", *sys.argv[1:]]),
        "machine": machine,
        "software": harness.software_info(),
        "workers": f"{PROCESSES} processes x {args.threads} threads, for both measurements",
        "processor_latency_ms": args.processor_latency_ms,
        "processor_jitter_ms": args.processor_jitter_ms,
        "processor_network_env": network,
        "target": f"transfers committed/s at {args.processor_latency_ms:g} ms >= {LATENCY_TARGET} x at 0 ms,"
        " in every round",
        "rounds": rounds,
        "ratios": [entry["ratio"] for entry in rounds],
        "ledger_verify_passed": verified,
        "ledger_verify": verify_output,
        "valid": not problems,
        "problems": problems,
        "met": bool(rounds) and all(entry["met"] for entry in rounds) and not problems,
    }
    print(
        f"ratios {document['ratios']}, target {LATENCY_TARGET}: {'met' if document['met'] else 'MISSED'};"
        f" ledger verify {'passed' if verified else 'FAILED'}"
    )
    if args.record:
        path = harness.record("allocations-latency", document, latency_history_figures(document), args.note)
        print(f"recorded in {path.relative_to(harness.REPO_DIR)}")
    sys.exit(1 if problems else 0 if document["met"] else 2)


def latency_history_figures(document: dict[str, Any]) -> dict[str, Any]:
    """A latency run's history row (results/allocations-latency-history.csv)."""
    rounds = document["rounds"]

    def in_use(entry: dict[str, Any], name: str) -> Any:
        return entry[name]["postgres_connections"].get("mean", {}).get("in_use")

    return {
        "groups_per_round": rounds[0]["at_0ms"].get("groups") if rounds else None,
        "processor_latency_ms": document["processor_latency_ms"],
        "processor_jitter_ms": document["processor_jitter_ms"],
        "transfers_per_s_at_0ms_by_round": [entry["at_0ms"]["transfers_per_second"] for entry in rounds],
        "transfers_per_s_at_latency_by_round": [
            entry["at_latency"]["transfers_per_second"] for entry in rounds
        ],
        "latency_ratio_by_round": [entry["ratio"] for entry in rounds],
        "connections_in_use_at_0ms_mean_by_round": [in_use(entry, "at_0ms") for entry in rounds],
        "connections_in_use_at_latency_mean_by_round": [in_use(entry, "at_latency") for entry in rounds],
        "met": document["met"],
        "valid": document["valid"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2, help="engine then allocations, this many times")
    parser.add_argument("--groups", type=int, default=5000, help="allocation groups committed per round")
    parser.add_argument("--accounts", type=int, default=40, help="connected accounts the groups pay")
    parser.add_argument("--operations", type=int, default=6000, help="probe operations per engine round")
    parser.add_argument("--threads", type=int, default=engine_bench.THREADS, help="per worker process")
    parser.add_argument(
        "--statements",
        type=int,
        default=0,
        help="diagnostic: count SQL statements of N commits and N probe operations, one at a time; no load",
    )
    parser.add_argument(
        "--processor-latency-ms",
        type=float,
        default=0.0,
        help="measure the commits at 0 ms and at this mean processor round trip (the sandbox's network"
        " model), in turn, instead of against the engine",
    )
    parser.add_argument(
        "--processor-jitter-ms",
        type=float,
        default=None,
        help=f"round trips are drawn within latency ± this ({LATENCY_JITTER_MS:.0f} with a latency)",
    )
    harness.add_record_options(parser)
    args = parser.parse_args()
    if args.processor_jitter_ms is None:
        args.processor_jitter_ms = LATENCY_JITTER_MS if args.processor_latency_ms > 0 else 0.0
    configure_logging("WARNING", json=False, stream=sys.stderr)  # the seeding's INFO lines are not the run's
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    rounds: list[dict[str, Any]] = []
    with harness.services(DATABASE) as services:
        os.environ["DATABASE_URL"], os.environ["REDIS_URL"] = services.database_url, services.redis_url
        upgrade(services.database_url)
        if args.statements:
            counted = asyncio.run(count_statements(services, args.statements, args.accounts))
            print(json.dumps(counted, indent=2))
            return
        machine = harness.machine_info(services)
        if args.processor_latency_ms > 0:
            latency_rounds(services, args, started_at, machine)
            return
        for number in range(1, args.rounds + 1):
            load_before = harness.load_average()
            engine = engine_bench.engine_rate(
                services.database_url, services.redis_url, PROBE_TYPE, args.operations, args.threads
            )
            allocations = allocation_rate(services, args.groups, args.accounts, args.threads)
            ratio = allocations["per_second"] / engine["per_second"]
            if engine["retried_operations"]:  # a few probes waiting out a lease make the reference slow
                allocations["problems"].append(
                    f"the engine measurement re-ran {engine['retried_operations']} operations"
                    " (lease expired or the server out of connections): not a valid reference"
                )
            rounds.append(
                {
                    "round": number,
                    "load_average_before": load_before,
                    "load_average_after": harness.load_average(),
                    "engine_one_per_message": engine,
                    "allocations": allocations,
                    "ratio": round(ratio, 3),
                    "met": ratio >= TARGET and not allocations["problems"],
                }
            )
            print(
                f"round {number}: engine {engine['per_second']} ops/s,"
                f" allocations {allocations['per_second']} groups/s, ratio {ratio:.3f} (target {TARGET});"
                f" problems: {allocations['problems'] or 'none'}",
                file=sys.stderr,
                flush=True,
            )
        verified, verify_output = ledger_verify(services)
    problems = [problem for entry in rounds for problem in entry["allocations"]["problems"]]
    if not verified:
        problems.append(f"ledger verify failed: {verify_output}")
    document = {
        "benchmark": "allocations",
        "started_at": started_at,
        "command": " ".join(["bench/allocations.py", *sys.argv[1:]]),
        "machine": machine,
        "software": harness.software_info(),
        "workers": f"{PROCESSES} processes x {args.threads} threads, for both measurements",
        "target": f"allocation groups/s >= {TARGET} x engine one-per-message operations/s, in every round",
        "rounds": rounds,
        "ratios": [entry["ratio"] for entry in rounds],
        "ledger_verify_passed": verified,
        "ledger_verify": verify_output,
        "valid": not problems,
        "problems": problems,
        "met": bool(rounds) and all(entry["met"] for entry in rounds) and not problems,
    }
    print(
        f"ratios {document['ratios']}, target {TARGET}: {'met' if document['met'] else 'MISSED'};"
        f" ledger verify {'passed' if verified else 'FAILED'}"
    )
    if args.record:
        path = harness.record("allocations", document, history_figures(document), args.note)
        print(f"recorded in {path.relative_to(harness.REPO_DIR)}")
    sys.exit(1 if problems else 0 if document["met"] else 2)


if __name__ == "__main__":
    main()
