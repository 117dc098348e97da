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
import sys
from functools import partial
from typing import Any

import harness

BODY = b'{"amount": 2000, "currency": "eur", "capture_method": "manual"}'


async def post(app: Any, secret: str, run: str | None, number: int) -> int:
    key = None if run is None else f"{run}-{number}"
    status, _ = await harness.asgi_post(app, "/v1/payment-intents", BODY, secret, key)
    return status


async def bench(args: argparse.Namespace, secret: str) -> None:
    from moneyrail.app import create_app  # after the environment points it at the bench database

    app = create_app()
    async with app.router.lifespan_context(app):
        for number in range(args.listening):
            endpoint = (
                f'{{"url": "http://127.0.0.1:9/hook-{number}", "enabled_events": ["payment_intent.created"]}}'
            )
            status, _ = await harness.asgi_post(app, "/v1/webhook-endpoints", endpoint.encode(), secret)
            assert status == 200
        await harness.rounds_of_requests(
            partial(post, app, secret),
            requests=args.requests,
            in_flight=args.in_flight,
            rounds=args.rounds,
            keyless=args.keyless,
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
    return harness.run_in_process(args.database, partial(bench, args))


if __name__ == "__main__":
    sys.exit(main())
