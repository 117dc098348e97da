"""What one operation costs: CPU of the Python side and of PostgreSQL, without dramatiq or the relay.

    .venv/bin/python bench/engine_cost.py [--operations 2000] [--concurrency 8]

A diagnostic beside bench/engine.py (which measures the fleet against the issue's target): the same
probe operation (claim, two-leg journal transaction, outcome event, done; no processor call) run by
`run_operation` in this process, `--concurrency` at a time on one event loop, as one worker process
runs them. It prints operations/s, this process's CPU per operation and the CPU per operation of the
PostgreSQL backends serving it (read from /proc, so only when PostgreSQL runs on this machine).

Servers: DATABASE_URL (a fresh `moneyrail_bench_engine_cost` database is made on that server), else
127.0.0.1:5432 (user postgres). No Redis is used.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from datetime import timedelta
from pathlib import Path

import asyncpg

REPO_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_DIR))
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/15")  # the probe's module binds a broker; unused

import moneyrail.domains  # noqa: E402,F401  (every outcome listener, as in a worker)
from bench.engine import create_probe, fresh_database, plain_url  # noqa: E402
from moneyrail.config import Settings  # noqa: E402
from moneyrail.db.engine import create_engine, create_sessionmaker  # noqa: E402
from moneyrail.db.migrate import upgrade  # noqa: E402
from moneyrail.db.uow import UnitOfWork  # noqa: E402
from moneyrail.engine.service import run_operation  # noqa: E402
from moneyrail.installations import service as installations  # noqa: E402
from moneyrail.kit.tenant import Tenant  # noqa: E402
from moneyrail.logging import configure_logging  # noqa: E402
from tests.engine.probe import PROBE_TYPE  # noqa: E402
from tests.engine.probe_actors import execute_probe  # noqa: E402

DATABASE = "moneyrail_bench_engine_cost"
TICKS = os.sysconf("SC_CLK_TCK")


def _process_cpu_seconds(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / TICKS


async def _backend_cpu_seconds(admin_url: str) -> float | None:
    connection = await asyncpg.connect(plain_url(admin_url))
    try:
        pids = [
            row[0]
            for row in await connection.fetch("SELECT pid FROM pg_stat_activity WHERE datname = $1", DATABASE)
        ]
    finally:
        await connection.close()
    total = 0.0
    for pid in pids:
        seconds = _process_cpu_seconds(pid)
        if seconds is None:
            return None  # PostgreSQL is not on this machine (or its processes are not readable)
        total += seconds
    return total if pids else None


async def measure(admin_url: str, operations: int, concurrency: int) -> dict[str, object]:
    url, _ = await fresh_database(admin_url, DATABASE)
    await asyncio.to_thread(upgrade, url)
    engine = create_engine(Settings(DATABASE_URL=url, db_pool_size=concurrency * 2 + 2, db_max_overflow=0))
    sessionmaker = create_sessionmaker(engine)
    try:
        async with UnitOfWork(sessionmaker) as uow:
            installation = await installations.create_installation(uow.session, name="engine cost")
            await uow.commit()
        tenant = Tenant(installation.id, False)
        warmup = concurrency * 4
        async with UnitOfWork(sessionmaker) as uow:
            ids = [
                (await create_probe(uow.session, tenant, PROBE_TYPE, number, "cost")).id
                for number in range(operations + warmup)
            ]
            await uow.commit()
        queue = list(reversed(ids))

        async def runner_until(stop_at: int) -> None:
            while len(queue) > stop_at:
                operation_id = queue.pop()
                result = await run_operation(
                    sessionmaker, operation_id, execute_probe, worker="bench", lease=timedelta(seconds=60)
                )
                if result.outcome != "succeeded":
                    raise RuntimeError(f"operation {operation_id} ended {result.outcome}")

        async def run(count: int) -> None:
            stop_at = len(queue) - count
            await asyncio.gather(*(runner_until(stop_at) for _ in range(concurrency)))

        await run(warmup)  # the pool's connections opened, the statements prepared
        backend_before = await _backend_cpu_seconds(admin_url)
        started, cpu_started = time.perf_counter(), time.process_time()
        await run(operations)
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        backend_after = await _backend_cpu_seconds(admin_url)
    finally:
        await engine.dispose()
    backend = (
        None
        if backend_before is None or backend_after is None
        else round((backend_after - backend_before) / operations * 1000, 2)
    )
    return {
        "operations": operations,
        "concurrency": concurrency,
        "per_second": round(operations / wall, 1),
        "python_cpu_ms_per_operation": round(cpu / operations * 1000, 2),
        "postgresql_cpu_ms_per_operation": backend,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--operations", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    configure_logging("WARNING")
    admin_url = os.environ.get("DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
    print(json.dumps(asyncio.run(measure(admin_url, args.operations, args.concurrency)), indent=2))


if __name__ == "__main__":
    main()
