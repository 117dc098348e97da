"""The web process's own CPU per request through uvicorn, at low concurrency: two trees alternated.

    .venv/bin/python bench/web_cpu.py --before /work/main/src [--clients 4] [--duration 10] [--alternations 3]

For what the in-process benchmarks cannot see (they call the ASGI app directly): uvicorn's options, its
HTTP parser and event loop, the process's settings. One fresh database (bench/harness.py); then, in turn
`--alternations` times, `moneyrail web` of the `--before` tree (PYTHONPATH) and of this tree, each on a
free port, loaded by `--clients` keep-alive clients of this process sending keyed `POST /v1/customers`
for `--duration` seconds after a 2 s warm-up. Printed per server: requests/s, the server process's CPU
(user + system, /proc) per request, and its resident memory after the load. Light on purpose (4 clients,
10 s): it measures CPU per request, not throughput, and leaves the shared machine to the others.
`--env NAME=VALUE` (repeatable) adds a setting to the "after" server only, e.g. MONEYRAIL_LOG_LEVEL=INFO.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

import harness
import httpx
import orjson


def process_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def resident_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def load(base_url: str, secret: str, clients: int, seconds: float, run: str) -> int:
    """Keyed customer creations by `clients` clients for `seconds`: how many answered 200."""
    done = 0
    deadline = time.monotonic() + seconds

    async def client(number: int) -> None:
        nonlocal done
        headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
        async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=30) as session:
            sent = 0
            while time.monotonic() < deadline:
                sent += 1
                body = orjson.dumps({"email": f"c{number}-{sent}@example.com", "name": f"Bench {sent}"})
                answer = await session.post(
                    "/v1/customers", content=body, headers={"Idempotency-Key": f"{run}-{number}-{sent}"}
                )
                if answer.status_code != 200:
                    raise harness.BenchError(f"answered {answer.status_code}: {answer.text[:300]}")
                done += 1

    await asyncio.gather(*(client(number) for number in range(clients)))
    return done


def measure(run: harness.RunContext, name: str, env: dict[str, str], args: argparse.Namespace) -> str:
    server = harness.start_moneyrail(run.processes, env, name=name)
    pid = server.process.pid
    asyncio.run(load(server.base_url, run.secret, args.clients, 2.0, f"{name}-warm-{time.time_ns()}"))
    cpu_before, started = process_cpu_seconds(pid), time.monotonic()
    answered = asyncio.run(
        load(server.base_url, run.secret, args.clients, args.duration, f"{name}-{time.time_ns()}")
    )
    wall, cpu = time.monotonic() - started, process_cpu_seconds(pid) - cpu_before
    rss = resident_kb(pid)
    harness.stop_process(server.process)
    return (
        f"{name:8s} {answered / wall:7.1f} req/s, {1e6 * cpu / answered:6.0f} µs server CPU per request,"
        f" RSS {rss / 1024:.1f} MiB, load average {harness.load_average()[0]:.2f}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="the src directory of the tree to compare with")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--alternations", type=int, default=3)
    parser.add_argument("--env", action="append", default=[], help="NAME=VALUE for the 'after' server")
    parser.add_argument("--database", default=harness.BENCH_DATABASE + "_web_cpu")
    args = parser.parse_args()
    extra = dict(setting.split("=", 1) for setting in args.env)
    with harness.run_context(args.database) as run:
        before_env = {**run.env, "PYTHONPATH": args.before}
        after_env = {**run.env, **extra}
        for alternation in range(1, args.alternations + 1):
            print(f"alternation {alternation}:", flush=True)
            print("  " + measure(run, "before", before_env, args), flush=True)
            print("  " + measure(run, "after", after_env, args), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
