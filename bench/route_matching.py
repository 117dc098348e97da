"""What matching a request to its route costs: the app router's dispatch, indexed and linear.

    .venv/bin/python bench/route_matching.py [--matches 2000] [--rounds 5] [--record]

Two apps from `create_app` (no servers, no database): one as built (the route index of
api/route_index.py in place of the router's dispatch), one with FastAPI's own dispatch put back
(every route in order, as before the index). Every route's endpoint is replaced by a no-op ASGI app
in both, so what is timed is the request's path from the app router's entry to its endpoint:
matching, the 405 and 404 answers, the slash redirect. Rounds alternate linear and indexed, so both
meet the same neighbours on a shared machine. It prints this process's CPU time (user + system,
from the kernel) per dispatch, the median of the rounds; `--record` also writes
`results/route-matching-<UTC date>.json`.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from datetime import UTC, datetime
from typing import Any

import harness
from fastapi import FastAPI
from fastapi.routing import _iter_routes_with_context
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from moneyrail.api.route_index import RouteIndex
from moneyrail.app import create_app
from moneyrail.config import Settings

# (label, method, path): early, middle and late routes of the list, a 404, a 405 and a slash redirect
REQUESTS = (
    ("early: create a customer", "POST", "/v1/customers"),
    ("middle: create a payment", "POST", "/v1/payment-intents"),
    ("middle: confirm a payment", "POST", "/v1/payment-intents/pi_bench/confirm"),
    ("late: retrieve a subscription", "GET", "/v1/subscriptions/sub_bench"),
    ("late: create a subscription", "POST", "/v1/subscriptions"),
    ("last: a hosted onboarding page", "GET", "/onboarding/tok_bench"),
    ("404: no such path", "GET", "/v1/no-such-thing/xyz"),
    ("405: DELETE /v1/customers", "DELETE", "/v1/customers"),
    ("307: trailing slash", "GET", "/v1/customers/"),
)


async def no_endpoint(scope: Scope, receive: Receive, send: Send) -> None:
    return None


async def discard(message: Any) -> None:
    return None


async def no_body() -> dict[str, Any]:
    return {"type": "http.request", "body": b"", "more_body": False}


def app_without_endpoints(indexed: bool) -> FastAPI:
    app = create_app(Settings(database_url="postgresql://unused@127.0.0.1/unused"))
    if not indexed:
        assert isinstance(app.router.middleware_stack, RouteIndex)
        app.router.middleware_stack = app.router.app  # FastAPI's own dispatch: every route in order
    for route, context in _iter_routes_with_context(app.routes):
        if context is not None and context.app is not None:
            context.app = no_endpoint  # a route of an included router: its endpoint's ASGI app
        elif isinstance(route, Route):
            route.app = no_endpoint
    return app


def scope_for(method: str, path: str) -> Scope:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"bench")],
        "client": ("127.0.0.1", 1),
        "server": ("bench", 80),
    }


async def cpu_us_per_dispatch(app: FastAPI, method: str, path: str, matches: int) -> float:
    template = scope_for(method, path)
    router = app.router
    started = time.process_time_ns()
    for _ in range(matches):
        await router(dict(template), no_body, discard)
    return (time.process_time_ns() - started) / matches / 1000


async def measure(matches: int, rounds: int) -> dict[str, dict[str, list[float]]]:
    apps = {"linear": app_without_endpoints(indexed=False), "indexed": app_without_endpoints(indexed=True)}
    for app in apps.values():  # FastAPI builds an included router's routes at its first match
        for _, method, path in REQUESTS:
            await cpu_us_per_dispatch(app, method, path, 50)
    results: dict[str, dict[str, list[float]]] = {
        label: {name: [] for name in apps} for label, _, _ in REQUESTS
    }
    for _ in range(rounds):
        for label, method, path in REQUESTS:
            for name, app in apps.items():  # alternated: linear then indexed, request by request
                results[label][name].append(await cpu_us_per_dispatch(app, method, path, matches))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--matches", type=int, default=2000, help="dispatches per request and round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--record", action="store_true", help="write results/route-matching-<date>.json")
    options = parser.parse_args()
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    load_before = harness.load_average()
    with harness.MachineLoad() as machine:
        results = asyncio.run(measure(options.matches, options.rounds))
    print(f"µs of CPU per dispatch, median of {options.rounds} alternated rounds of {options.matches}")
    print(f"(load average {load_before} before; the machine {machine.busy_percent}% busy meanwhile)")
    print(f"{'request':<34} {'linear':>9} {'indexed':>9}  indexed ÷ linear")
    summary = {}
    for label, method, path in REQUESTS:
        linear = statistics.median(results[label]["linear"])
        indexed = statistics.median(results[label]["indexed"])
        summary[label] = {
            "method": method,
            "path": path,
            "linear_us": round(linear, 1),
            "indexed_us": round(indexed, 1),
        }
        print(f"{label:<34} {linear:>9.1f} {indexed:>9.1f}  {indexed / linear:.2f}")
    if options.record:
        path = harness.write_json(
            "route-matching",
            {
                "started_at": started_at,
                "matches": options.matches,
                "rounds": options.rounds,
                "machine": {**harness.host_info(), "load_average_before": load_before},
                "machine_busy_percent": machine.busy_percent,
                "software": harness.software_info(),
                "median_cpu_us_per_dispatch": summary,
                "every_round_cpu_us": results,
            },
        )
        print(f"recorded: {path}")


if __name__ == "__main__":
    main()
