"""Engine benchmark: operations completed per second by 2 worker processes, against dramatiq
draining no-op messages with the same 2 processes x 8 threads on the same Redis, in one run.

    .venv/bin/python bench/engine.py [--operations 3000]

Each operation is the probe of tests/engine/probe_actors.py as the issue defines the measurement: the
worker claims its row, posts one balanced two-leg journal transaction and completes (the probe's
processor call is switched off: the engine alone is measured). Work local to the database is what
operation types with a policy batch_size > 1 are for, so the target's figure is the probe's batched
type (up to 16 operations a message, claimed in one statement and committed together, each still
its own journal transaction); the same work one operation per message is measured beside it, on a
fresh fleet. Each has two phases:

- burst: the operations are committed in one transaction (as a burst of requests would leave them);
  the scheduler's relay publishes them, woken by NOTIFY. Recorded: operations/s, and p50/p99 from
  acceptance (the row's created_at) to done (finished_at), which here is mostly the backlog's wait.
  Target: at least 30% of the no-op rate.
- steady: then operations arrive one per transaction at half the burst's rate for 15 s, as requests
  do; p50/p99 from acceptance to done measure one operation's path through outbox, relay and worker.

Servers: DATABASE_URL / REDIS_URL when set (a fresh `moneyrail_bench_engine` database is made on that
server), else 127.0.0.1:5432 (user postgres) and redis://127.0.0.1:6379/0. The no-op actors are
bench/noop_actors.py. Records `results/engine-latest.json` and a row of `results/engine-history.csv`;
bench/allocations.py and bench/renewals.py import `engine_rate` as their reference.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import psutil
from cryptography.fernet import Fernet
from redis import Redis
from sqlalchemy.ext.asyncio import AsyncSession

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
sys.path.insert(0, str(REPO_DIR))
sys.path.insert(0, str(BENCH_DIR))

import harness  # noqa: E402

from moneyrail.config import Settings  # noqa: E402
from moneyrail.db.engine import create_engine, create_sessionmaker  # noqa: E402
from moneyrail.db.migrate import upgrade  # noqa: E402
from moneyrail.db.uow import UnitOfWork  # noqa: E402
from moneyrail.engine.service import create_operation  # noqa: E402
from moneyrail.installations import service as installations  # noqa: E402
from moneyrail.kit.tenant import Tenant  # noqa: E402
from moneyrail.models import Operation  # noqa: E402
from tests.engine.probe import PROBE_ACTOR, PROBE_BATCHED_TYPE, PROBE_TYPE  # noqa: E402

LOG_DIR = harness.LOG_DIR
PROCESSES, THREADS = 2, 8
STEADY_SECONDS = 15.0


plain_url = harness.plain_url


async def _connect(database_url: str) -> asyncpg.Connection:
    """On a shared server out of connections, wait for one (a minute at most) rather than end the run."""
    for _ in range(60):
        try:
            return await asyncpg.connect(plain_url(database_url))
        except asyncpg.TooManyConnectionsError:
            await asyncio.sleep(1)
    return await asyncpg.connect(plain_url(database_url))


def _start(command: list[str], env: dict[str, str], log_name: str) -> subprocess.Popen[bytes]:
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    with (LOG_DIR / log_name).open("wb") as log:
        return subprocess.Popen(command, env=env, cwd=REPO_DIR, stdout=log, stderr=subprocess.STDOUT)


def _stop(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        if process.poll() is None:
            process.terminate()
    for process in processes:
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()


def noop_rate(redis_url: str, messages: int) -> dict[str, float]:
    """Enqueue `messages` no-ops, then time 2 x 8 dramatiq workers draining them."""
    import dramatiq
    from dramatiq.brokers.redis import RedisBroker

    broker = RedisBroker(url=redis_url)
    broker.declare_queue("bench_noop")
    redis = Redis.from_url(redis_url)
    redis.delete("dramatiq:bench_noop", "dramatiq:bench_noop.msgs")
    for number in range(messages):
        broker.enqueue(dramatiq.Message("bench_noop", "bench.noop", (number,), {}, {}))
    env = {**os.environ, "REDIS_URL": redis_url}
    workers = _start(
        [
            sys.executable,
            "-m",
            "dramatiq",
            "bench.noop_actors",
            "--processes",
            str(PROCESSES),
            "--threads",
            str(THREADS),
        ],
        env,
        "noop-workers.log",
    )
    try:
        # timed from the first message taken, as the engine's run is timed once its fleet has booted
        while (left := redis.hlen("dramatiq:bench_noop.msgs")) >= messages:
            time.sleep(0.002)
        started = time.perf_counter()
        while redis.hlen("dramatiq:bench_noop.msgs") > 0:
            time.sleep(0.02)
        elapsed = time.perf_counter() - started
    finally:
        _stop([workers])
    return {"messages": left, "seconds": round(elapsed, 3), "per_second": round(left / elapsed, 1)}


async def _prepare(database_url: str) -> Tenant:
    engine = create_engine(Settings(DATABASE_URL=database_url))
    async with UnitOfWork(create_sessionmaker(engine)) as uow:
        installation = await installations.create_installation(uow.session, name="bench engine")
        await uow.commit()
    await engine.dispose()
    return Tenant(installation.id, False)


async def create_probe(
    session: AsyncSession, tenant: Tenant, operation_type: str, number: int, phase: str
) -> Operation:
    """One probe operation, its amount and recipient varied by `number`, tagged with the phase."""
    return await create_operation(
        session,
        tenant,
        operation_type=operation_type,
        actor_name=PROBE_ACTOR,
        payload={
            "amount": 100 + number % 900,
            "currency": "eur",
            "destination": f"acct_{number % 50}",
            "call_processor": False,
            "phase": phase,
        },
    )


async def _arrive_steadily(
    database_url: str, tenant: Tenant, operation_type: str, rate: float, seconds: float
) -> int:
    """One operation per transaction, on a fixed schedule: requests arriving at `rate` per second."""
    engine = create_engine(Settings(DATABASE_URL=database_url))
    sessionmaker = create_sessionmaker(engine)
    count = int(rate * seconds)
    start = time.perf_counter()
    for number in range(count):
        delay = start + number / rate - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        async with UnitOfWork(sessionmaker) as uow:
            await create_probe(uow.session, tenant, operation_type, number, "steady")
            await uow.commit()
    await engine.dispose()
    return count


async def _create_operations(
    database_url: str, tenant: Tenant, operation_type: str, count: int, before_commit: Callable[[], None]
) -> float:
    engine = create_engine(Settings(DATABASE_URL=database_url))
    async with UnitOfWork(create_sessionmaker(engine)) as uow:
        for number in range(count):
            await create_probe(uow.session, tenant, operation_type, number, "burst")
        before_commit()
        committed_at = time.perf_counter()
        await uow.commit()
    await engine.dispose()
    return committed_at


async def _latencies(database_url: str, installation_id: str, phase: str) -> dict[str, float]:
    """Over the installation's operations (one installation per engine run, so one type)."""
    connection = await _connect(database_url)
    try:
        row = await connection.fetchrow(
            """
            SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM finished_at - created_at)),
                   percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM finished_at - created_at)),
                   extract(epoch FROM max(finished_at) - min(created_at)),
                   count(*) FILTER (WHERE attempts > 1)
            FROM operations WHERE installation_id = $1 AND payload->>'phase' = $2
            """,
            installation_id,
            phase,
        )
        postings, commits = await connection.fetchrow(
            "SELECT count(*), count(DISTINCT j.txid) FROM journal_transactions j"
            " JOIN operations o ON o.id = j.reference"
            " WHERE j.installation_id = $1 AND o.payload->>'phase' = $2",
            installation_id,
            phase,
        )
        return {
            "p50_ms": round(float(row[0]) * 1000, 1),
            "p99_ms": round(float(row[1]) * 1000, 1),
            "first_accepted_to_last_done_s": round(float(row[2]), 3),
            "retried_operations": int(row[3]),
            "journal_transactions": int(postings or 0),
            "operations_per_commit": round(int(postings or 0) / max(int(commits or 0), 1), 2),
        }
    finally:
        await connection.close()


async def _wait_until_done(database_url: str, installation_id: str) -> None:
    # one connection, polled gently: the observer must not take the CPU it is measuring
    connection = await _connect(database_url)
    try:
        while True:
            unfinished = await connection.fetchval(
                "SELECT count(*) FROM operations WHERE installation_id = $1 AND status <> 'succeeded'",
                installation_id,
            )
            if not unfinished:
                return
            await asyncio.sleep(0.1)
    finally:
        await connection.close()


def _processes_by_role(
    workers: subprocess.Popen[bytes], scheduler: subprocess.Popen[bytes]
) -> dict[str, list[psutil.Process]]:
    def tree(popen: subprocess.Popen[bytes]) -> list[psutil.Process]:
        root = psutil.Process(popen.pid)
        return [root, *root.children(recursive=True)]

    roles: dict[str, list[psutil.Process]] = {
        "workers": tree(workers),
        "scheduler": tree(scheduler),
        "postgresql": [],
        "redis": [],
        "benchmark": [psutil.Process()],
    }
    for process in psutil.process_iter(["name"]):
        name = process.info["name"] or ""
        if name.startswith("postgres"):
            roles["postgresql"].append(process)
        elif name.startswith("redis-server"):
            roles["redis"].append(process)
    return roles


def _cpu_seconds(roles: dict[str, list[psutil.Process]]) -> dict[str, dict[int, float]]:
    readings: dict[str, dict[int, float]] = {}
    for role, processes in roles.items():
        readings[role] = {}
        for process in processes:
            try:
                times = process.cpu_times()
            except psutil.NoSuchProcess:
                continue
            readings[role][process.pid] = times.user + times.system
    return readings


def _cpu_per_operation(
    before: dict[str, dict[int, float]], after: dict[str, dict[int, float]], operations: int
) -> dict[str, float]:
    """Milliseconds of CPU per operation by each part of the system (a process started since counts whole)."""
    return {
        role: round(
            sum(seconds - before.get(role, {}).get(pid, 0.0) for pid, seconds in pids.items())
            * 1000
            / operations,
            2,
        )
        for role, pids in after.items()
    }


def engine_rate(
    database_url: str, redis_url: str, operation_type: str, operations: int, threads: int
) -> dict[str, Any]:
    tenant = asyncio.run(_prepare(database_url))
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "MONEYRAIL_WORKER_MODULES": "tests.engine.probe_actors",
        "MONEYRAIL_SECRET_KEYS": os.environ.get("MONEYRAIL_SECRET_KEYS") or Fernet.generate_key().decode(),
        "MONEYRAIL_LOG_LEVEL": "WARNING",
        "MONEYRAIL_WORKER_METRICS_PORT": "19292",
        # one connection per thread and a few spare: an operation never waits for the pool
        "MONEYRAIL_DB_POOL_SIZE": str(max(20, threads + 4)),
    }
    moneyrail = [sys.executable, "-m", "moneyrail"]
    scheduler = _start([*moneyrail, "scheduler"], env, "engine-scheduler.log")
    workers = _start(
        [*moneyrail, "worker", "--processes", str(PROCESSES), "--threads", str(threads)],
        env,
        "engine-workers.log",
    )
    try:
        time.sleep(4)  # let the fleet boot: the measurement is of steady work, not of start-up
        cpu_before: dict[str, dict[int, float]] = {}
        machine_before: list[Any] = []

        def start_measuring() -> None:  # at the commit: creating the rows is not the engine's work
            cpu_before.update(_cpu_seconds(_processes_by_role(workers, scheduler)))
            machine_before.append(psutil.cpu_times())

        committed_at = asyncio.run(
            _create_operations(database_url, tenant, operation_type, operations, start_measuring)
        )
        asyncio.run(_wait_until_done(database_url, tenant.installation_id))
        elapsed = time.perf_counter() - committed_at
        cpu = _cpu_per_operation(cpu_before, _cpu_seconds(_processes_by_role(workers, scheduler)), operations)
        machine_after = psutil.cpu_times()
        total = sum(machine_after) - sum(machine_before[0])
        cpu["machine_idle_share"] = round((machine_after.idle - machine_before[0].idle) / total, 3)
        steady_rate = round(operations / elapsed / 2, 1)
        steady_count = asyncio.run(
            _arrive_steadily(database_url, tenant, operation_type, steady_rate, STEADY_SECONDS)
        )
        asyncio.run(_wait_until_done(database_url, tenant.installation_id))
    finally:
        _stop([workers, scheduler])
    burst = asyncio.run(_latencies(database_url, tenant.installation_id, "burst"))
    steady = asyncio.run(_latencies(database_url, tenant.installation_id, "steady"))
    return {
        "operation_type": operation_type,
        "operations": operations,
        "seconds": round(elapsed, 3),
        "per_second": round(operations / elapsed, 1),
        **burst,
        "burst_cpu_ms_per_operation": cpu,
        "steady": {"arrival_per_second": steady_rate, "operations": steady_count, **steady},
    }


async def fresh_database(admin_url: str, name: str) -> tuple[str, str]:
    """A fresh database of that name (harness.recreate_database), its URL and the server's version."""
    url, settings = await harness.recreate_database(admin_url, name)
    return url, settings["server_version"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--operations", type=int, default=3000)
    parser.add_argument(
        "--threads",
        type=int,
        default=THREADS,
        help="threads per moneyrail worker process (the no-op reference keeps 8: the issue's figure)",
    )
    harness.add_record_options(parser)
    args = parser.parse_args()
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    software = harness.software_info()
    admin_url = os.environ.get("DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
    redis_url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    database_url, pg_version = asyncio.run(fresh_database(admin_url, "moneyrail_bench_engine"))
    upgrade(database_url)

    noop = noop_rate(redis_url, args.operations * 3)
    # The target's figure: the operation is local to the database, and such types run up to 16 to a
    # message (policy batch_size). Beside it, the same work one operation per message.
    engine = engine_rate(database_url, redis_url, PROBE_BATCHED_TYPE, args.operations, args.threads)
    one_per_message = engine_rate(database_url, redis_url, PROBE_TYPE, args.operations, args.threads)
    ratio = engine["per_second"] / noop["per_second"]
    result = {
        "benchmark": "engine",
        "started_at": started_at,
        "machine": {**harness.host_info(), "postgresql": pg_version},
        "software": software,
        "workers": f"{PROCESSES} processes x {args.threads} threads (no-op reference: x {THREADS})",
        "noop": noop,
        "moneyrail": engine,
        "moneyrail_one_per_message": one_per_message,
        "ratio": round(ratio, 3),
        "ratio_one_per_message": round(one_per_message["per_second"] / noop["per_second"], 3),
        "target": 0.30,
        "met": ratio >= 0.30,
    }
    print(json.dumps(result, indent=2))
    if args.record:
        path = harness.record("engine", result, history_figures(result), args.note)
        print(f"recorded in {path.relative_to(REPO_DIR)}")


def history_figures(result: dict[str, Any]) -> dict[str, Any]:
    """The key figures of a run, for its history row."""
    batched, alone = result["moneyrail"], result["moneyrail_one_per_message"]
    return {
        "operations": batched["operations"],
        "noop_msg_per_s": result["noop"]["per_second"],
        "batched_ops_per_s": batched["per_second"],
        "ratio": result["ratio"],
        "one_per_message_ops_per_s": alone["per_second"],
        "ratio_one_per_message": result["ratio_one_per_message"],
        "steady_p50_ms": batched["steady"].get("p50_ms"),
        "steady_p99_ms": batched["steady"].get("p99_ms"),
        "met": result["met"],
    }


if __name__ == "__main__":
    main()
