"""The payment create's CPU per request without uvicorn or client sockets: `POST /v1/payment-intents`
in-process, as bench/intake_inprocess.py does for the intake.

    .venv/bin/python bench/create_inprocess.py [--requests 3000] [--in-flight 32] [--rounds 3] [--keyless]
        [--listening N]

A fresh database (bench/harness.py), then moneyrail's ASGI app called directly by this process, each
request a plain payment (bench/statements.py's body) with a new Idempotency-Key (none with `--keyless`),
against real PostgreSQL and Redis; with `--listening N`, N webhook endpoints listen for
`payment_intent.created` (each create schedules N deliveries; no worker sends them). Prints this
process's CPU time per request (the app's request path plus the same thin ASGI driver for any code
under test): an A/B of two trees (`PYTHONPATH=<other src>`) alternated in the same minutes compares
their request paths on a shared machine.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from typing import Any

import harness
from intake_inprocess import cpu_seconds

BODY = b'{"amount": 2000, "currency": "eur", "capture_method": "manual"}'


async def post_payment(app: Any, secret: str, number: int, run: str | None) -> int:
    return await post(app, secret, "/v1/payment-intents", BODY, None if run is None else f"{run}-{number}")


async def post(app: Any, secret: str, path: str, body: bytes, idempotency_key: str | None) -> int:
    headers = [
        (b"host", b"bench"),
        (b"authorization", f"Bearer {secret}".encode()),
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    if idempotency_key is not None:
        headers.append((b"idempotency-key", idempotency_key.encode()))
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }
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
            if await post_payment(app, secret, number, run) != 200:
                failures += 1

    started, cpu_before = time.perf_counter(), cpu_seconds()
    await asyncio.gather(*(client() for _ in range(in_flight)))
    return time.perf_counter() - started, cpu_seconds() - cpu_before, failures


async def bench(secret: str, args: argparse.Namespace) -> None:
    from moneyrail.app import create_app  # after the environment points it at the bench database

    app = create_app()
    async with app.router.lifespan_context(app):
        for number in range(args.listening):
            endpoint = (
                f'{{"url": "http://127.0.0.1:9/hook-{number}", "enabled_events": ["payment_intent.created"]}}'
            )
            assert await post(app, secret, "/v1/webhook-endpoints", endpoint.encode(), None) == 200
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
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--in-flight", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keyless", action="store_true", help="no Idempotency-Key (the keyless create)")
    parser.add_argument("--listening", type=int, default=0, help="webhook endpoints listening for the create")
    parser.add_argument("--database", default=harness.BENCH_DATABASE + "_create_inprocess")
    args = parser.parse_args()
    with harness.run_context(args.database) as run:
        os.environ.update(run.env)
        import moneyrail

        print(f"moneyrail from {os.path.dirname(moneyrail.__file__)}", flush=True)
        asyncio.run(bench(run.secret, args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
