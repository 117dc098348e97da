"""The intake's CPU per request without uvicorn or client sockets: `POST /v1/customers` in-process.

    .venv/bin/python bench/intake_inprocess.py [--requests 4000] [--in-flight 32] [--rounds 3] [--keyless]

A fresh database (bench/harness.py), then moneyrail's ASGI app called directly by this process, 32
requests in flight, each with a new Idempotency-Key (none with `--keyless`) and a distinct customer
(as bench/intake.lua),
against real PostgreSQL and Redis. It prints this process's CPU time (user + system, from the kernel)
per request: the app's whole request path plus a thin ASGI driver that is the same for any code
under test, so an A/B of two trees (`PYTHONPATH=<other src>`) alternated in the same minutes compares
their request paths even on a shared machine, where wrk's throughput follows the other processes.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import sys
import time
from typing import Any

import harness
import orjson


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def post_customer(app: Any, secret: str, number: int, run: str | None) -> int:
    body = orjson.dumps({"email": f"c{number}@example.com", "name": f"Bench {number}"})
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/v1/customers",
        "raw_path": b"/v1/customers",
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"bench"),
            (b"authorization", f"Bearer {secret}".encode()),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }
    if run is not None:
        scope["headers"].append((b"idempotency-key", f"{run}-{number}".encode()))
    messages = [{"type": "http.request", "body": body, "more_body": False}]
    status = 0

    async def receive() -> dict[str, Any]:
        return messages.pop() if messages else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    await app(scope, receive, send)
    return status


async def load(
    app: Any, secret: str, requests: int, in_flight: int, run: str | None
) -> tuple[float, float, int]:
    numbers = iter(range(requests))
    failures = 0

    async def client() -> None:
        nonlocal failures
        for number in numbers:
            if await post_customer(app, secret, number, run) != 200:
                failures += 1

    started, cpu_before = time.perf_counter(), cpu_seconds()
    await asyncio.gather(*(client() for _ in range(in_flight)))
    return time.perf_counter() - started, cpu_seconds() - cpu_before, failures


async def bench(secret: str, args: argparse.Namespace) -> None:
    from moneyrail.app import create_app  # after the environment points it at the bench database

    app = create_app()
    async with app.router.lifespan_context(app):
        await load(app, secret, 300, args.in_flight, "warm")  # pools fill, caches warm
        for round_number in range(args.rounds):
            run = None if args.keyless else f"r{round_number}-{time.time_ns()}"
            wall, cpu, failures = await load(app, secret, args.requests, args.in_flight, run)
            print(
                f"round {round_number + 1}: {1e6 * cpu / args.requests:.0f} µs CPU per request,"
                f" {args.requests / wall:.0f} req/s, {failures} failed, load average"
                f" {harness.load_average()[0]:.2f}",
                flush=True,
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--in-flight", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keyless", action="store_true", help="no Idempotency-Key (the keyless create)")
    parser.add_argument("--database", default=harness.BENCH_DATABASE + "_inprocess")
    args = parser.parse_args()
    with harness.run_context(args.database) as run:
        os.environ.update(run.env)
        print(f"moneyrail from {os.environ.get('PYTHONPATH') or 'this tree'}", flush=True)
        asyncio.run(bench(run.secret, args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
