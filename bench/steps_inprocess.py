"""The payment steps' CPU per request without uvicorn or client sockets: confirm and capture in-process.

    .venv/bin/python bench/steps_inprocess.py [--payments 1500] [--in-flight 16] [--rounds 3]

A fresh database (bench/harness.py), then moneyrail's ASGI app called directly by this process against
real PostgreSQL and Redis, as bench/intake_inprocess.py does for the intake. Each round creates
`--payments` manual-capture payments (not measured), then confirms them all with a new card and then
captures them all, `--in-flight` at a time, each step with its own Idempotency-Key, and prints this
process's CPU time (user + system) per confirm and per capture: the app's whole request path, the
sandbox processor (in this process too) and a thin ASGI driver that is the same for any code under
test. An A/B of two trees (`PYTHONPATH=<other src>`) alternated in the same minutes compares them even
on a shared machine.
"""

from __future__ import annotations

import argparse
import sys
import time
from functools import partial
from typing import Any

import harness
import orjson

CARD = {"number": "4242424242424242", "exp_month": 12, "exp_year": 2034, "cvc": "123"}


async def post(app: Any, path: str, key: str, idempotency_key: str, body: dict[str, Any] | None) -> Any:
    raw = orjson.dumps(body) if body is not None else b""
    status, answer = await harness.asgi_post(app, path, raw, key, idempotency_key)
    if status != 200:
        raise harness.BenchError(f"POST {path} answered {status}: {answer[:300]!r}")
    return orjson.loads(answer)


async def round_of(app: Any, secret: str, payments: int, in_flight: int, run: str) -> dict[str, float]:
    created: list[dict[str, Any]] = []

    async def create(number: int) -> None:
        body = {"amount": 2000, "currency": "eur", "capture_method": "manual"}
        created.append(await post(app, "/v1/payment-intents", secret, f"{run}-create-{number}", body))

    await harness.each_in_flight(list(range(payments)), in_flight, create)

    async def confirm(payment: dict[str, Any]) -> None:
        body = {"client_secret": payment["client_secret"], "card": CARD}
        path = f"/v1/payment-intents/{payment['id']}/confirm"
        await post(app, path, payment["publishable_key"], f"{run}-confirm-{payment['id']}", body)

    async def capture(payment: dict[str, Any]) -> None:
        path = f"/v1/payment-intents/{payment['id']}/capture"
        await post(app, path, secret, f"{run}-capture-{payment['id']}", None)

    _, confirm_cpu = await harness.each_in_flight(created, in_flight, confirm)
    _, capture_cpu = await harness.each_in_flight(created, in_flight, capture)
    return {"confirm": 1e6 * confirm_cpu / payments, "capture": 1e6 * capture_cpu / payments}


async def bench(args: argparse.Namespace, secret: str) -> None:
    from moneyrail.app import create_app  # after the environment points it at the bench database

    app = create_app()
    async with app.router.lifespan_context(app):
        await round_of(app, secret, 100, args.in_flight, "warm")  # pools fill, caches warm
        for round_number in range(args.rounds):
            cpu = await round_of(
                app, secret, args.payments, args.in_flight, f"r{round_number}-{time.time_ns()}"
            )
            print(
                f"round {round_number + 1}: {cpu['confirm']:.0f} µs CPU per confirm, {cpu['capture']:.0f} µs"
                f" per capture, load average {harness.load_average()[0]:.2f}",
                flush=True,
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--payments", type=int, default=1500)
    parser.add_argument("--in-flight", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--database", default=harness.BENCH_DATABASE + "_steps_inprocess")
    args = parser.parse_args()
    return harness.run_in_process(args.database, partial(bench, args))


if __name__ == "__main__":
    sys.exit(main())
