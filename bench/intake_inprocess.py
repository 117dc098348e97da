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
import sys
from functools import partial
from typing import Any

import harness
import orjson


async def post(app: Any, secret: str, run: str | None, number: int) -> int:
    body = orjson.dumps({"email": f"c{number}@example.com", "name": f"Bench {number}"})
    key = None if run is None else f"{run}-{number}"
    status, _ = await harness.asgi_post(app, "/v1/customers", body, secret, key)
    return status


async def bench(args: argparse.Namespace, secret: str) -> None:
    from moneyrail.app import create_app  # after the environment points it at the bench database

    app = create_app()
    async with app.router.lifespan_context(app):
        await harness.rounds_of_requests(
            partial(post, app, secret),
            requests=args.requests,
            in_flight=args.in_flight,
            rounds=args.rounds,
            keyless=args.keyless,
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--in-flight", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keyless", action="store_true", help="no Idempotency-Key (the keyless create)")
    parser.add_argument("--database", default=harness.BENCH_DATABASE + "_inprocess")
    args = parser.parse_args()
    return harness.run_in_process(args.database, partial(bench, args))


if __name__ == "__main__":
    sys.exit(main())
