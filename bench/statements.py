"""SQL statements and round trips of one payment (create + confirm + capture) and one intake request.

The stand-in for `pg_stat_statements`, which needs `shared_preload_libraries` (a server restart) and is
not loaded on the machine's shared PostgreSQL: `moneyrail web` talks to PostgreSQL through
tests/sql_counter.py, a wire-protocol proxy that counts every statement it executes (Execute and
simple Query messages, with their SQL) and every round trip (Sync and Query). The sandbox processor's
pool goes through it too (its statements name `sandbox_` tables; its BEGIN and COMMIT cannot be told apart).

    .venv/bin/python bench/statements.py [--payments 20] [--processor-latency-ms 1]

A fresh database, `moneyrail migrate`, one installation and key, the server warmed up with a few
payments (prepared statements cached), then `--payments` sequences one after the other; the count per
step is the mean, and the statements of the last sequence are printed with their SQL. Also the server
process's CPU per payment step and per customer, one request at a time (no queueing). Records
`results/statements-latest.json` and a row of `results/statements-history.csv`.
tests/payments/test_statement_budget.py holds the same counts as a budget.

`--processor-latency-ms L` puts the sandbox behind its network model (L ms a call, no jitter), so the
confirm and capture run in atomic phases (payments/phases.py): their counts are then the phased path's
(the server's CPU per step is still its own: the waits cost none). Records nothing (a different path).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import harness

from tests.sql_counter import StatementCounter, Tally

BENCH_DATABASE = f"{harness.BENCH_DATABASE}_statements"
CREATE_BODY = b'{"amount": 2000, "currency": "eur", "capture_method": "manual"}'
CARD = {"number": "4242424242424242", "exp_month": 12, "exp_year": 2034, "cvc": "123"}
SANDBOX_TABLES = ("sandbox_",)


def post(base_url: str, path: str, key: str, idempotency_key: str, body: bytes) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {key}", "Idempotency-Key": idempotency_key}
    if body:
        headers["Content-Type"] = "application/json"
    status, _, raw = harness.http("POST", f"{base_url}{path}", body=body, headers=headers)
    if status != 200:
        raise harness.BenchError(f"POST {path} answered {status}: {raw[:300]!r}")
    document: dict[str, Any] = json.loads(raw)
    return document


def one_payment(base_url: str, secret: str, counter: StatementCounter) -> dict[str, Tally]:
    key = f"stmt-{secrets.token_hex(6)}"
    counter.take()
    created = post(base_url, "/v1/payment-intents", secret, f"{key}-create", CREATE_BODY)
    tallies = {"create": counter.take()}
    path = f"/v1/payment-intents/{created['id']}"
    body = json.dumps({"client_secret": created["client_secret"], "card": CARD}).encode()
    post(base_url, f"{path}/confirm", created["publishable_key"], f"{key}-confirm", body)
    tallies["confirm"] = counter.take()
    post(base_url, f"{path}/capture", secret, f"{key}-capture", b"")
    tallies["capture"] = counter.take()
    return tallies


def one_customer(base_url: str, secret: str, counter: StatementCounter) -> Tally:
    counter.take()
    n = secrets.token_hex(6)
    body = json.dumps({"email": f"c{n}@example.com", "name": f"Bench {n}"}).encode()
    post(base_url, "/v1/customers", secret, f"stmt-{n}", body)
    return counter.take()


def is_processor(text: str) -> bool:
    return any(f" {table}" in text for table in SANDBOX_TABLES)


def measure(payments: int, database: str = BENCH_DATABASE, latency_ms: float = 0.0) -> dict[str, Any]:
    with harness.run_context(database) as run:
        upstream = make_url(run.services.database_url)
        with StatementCounter(upstream.host or "127.0.0.1", upstream.port or 5432) as counter:
            proxied = upstream.set(host="127.0.0.1", port=counter.port).render_as_string(hide_password=False)
            env = {**run.env, "DATABASE_URL": proxied}
            if latency_ms > 0:
                env |= {
                    "MONEYRAIL_SANDBOX_LATENCY_MS": str(latency_ms),
                    "MONEYRAIL_SANDBOX_LATENCY_JITTER_MS": "0",
                }
            server = harness.start_moneyrail(run.processes, env)
            for _ in range(5):  # warm-up: pools filled, statements prepared
                one_payment(server.base_url, run.secret, counter)
                one_customer(server.base_url, run.secret, counter)
            steps: dict[str, list[Tally]] = {"create": [], "confirm": [], "capture": [], "customer": []}
            cpu_before = harness.process_table()[server.process.pid].ticks
            for _ in range(payments):
                for name, tally in one_payment(server.base_url, run.secret, counter).items():
                    steps[name].append(tally)
            cpu_payments = harness.process_table()[server.process.pid].ticks - cpu_before
            cpu_before += cpu_payments
            for _ in range(payments):
                steps["customer"].append(one_customer(server.base_url, run.secret, counter))
            cpu_customers = harness.process_table()[server.process.pid].ticks - cpu_before
    hz = os.sysconf("SC_CLK_TCK")
    result: dict[str, Any] = {
        "payments": payments,
        # one request at a time, so this is the server's own cost, not queueing under load
        "server_cpu_ms_per_payment_step": round(1000.0 * cpu_payments / hz / (3 * payments), 2),
        "server_cpu_ms_per_customer": round(1000.0 * cpu_customers / hz / payments, 2),
        "steps": {},
    }
    for name, tallies in steps.items():
        last = tallies[-1]
        processor = sum(1 for text in last.statements if is_processor(text))
        result["steps"][name] = {
            "statements": sum(len(t.statements) for t in tallies) / len(tallies),
            "round_trips": sum(t.round_trips for t in tallies) / len(tallies),
            "sandbox_table_statements": processor,
            "last": [{"sql": text, "count": count} for text, count in last.by_text().items()],
        }
    flow = [result["steps"][name] for name in ("create", "confirm", "capture")]
    result["per_payment"] = {
        "statements": sum(step["statements"] for step in flow),
        "round_trips": sum(step["round_trips"] for step in flow),
        "sandbox_table_statements": sum(step["sandbox_table_statements"] for step in flow),
    }
    return result


def print_result(result: dict[str, Any]) -> None:
    for name, step in result["steps"].items():
        print(
            f"\n== {name}: {step['statements']:.1f} statements, {step['round_trips']:.1f} round trips "
            f"({step['sandbox_table_statements']} naming sandbox_ tables)"
        )
        for line in step["last"]:
            print(f"  {line['count']:>2} x {line['sql']}")
    total = result["per_payment"]
    print(
        f"\nserver CPU, one at a time: {result['server_cpu_ms_per_payment_step']} ms per payment step,"
        f" {result['server_cpu_ms_per_customer']} ms per customer"
    )
    print(
        f"\nper payment: {total['statements']:.1f} statements, {total['round_trips']:.1f} round trips, "
        f"{total['sandbox_table_statements']} naming sandbox_ tables"
    )


def history_figures(result: dict[str, Any]) -> dict[str, Any]:
    """The key figures of a run, for its history row."""
    steps, total = result["steps"], result["per_payment"]
    return {
        **{f"{name}_statements": round(steps[name]["statements"], 2) for name in steps},
        "per_payment_statements": round(total["statements"], 2),
        "per_payment_round_trips": round(total["round_trips"], 2),
        "server_cpu_ms_per_payment_step": result.get("server_cpu_ms_per_payment_step"),
        "server_cpu_ms_per_customer": result.get("server_cpu_ms_per_customer"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--payments", type=int, default=20, help="measured sequences")
    parser.add_argument("--database", default=BENCH_DATABASE, help="dropped and created for the run")
    parser.add_argument(
        "--processor-latency-ms",
        type=float,
        default=0.0,
        help="the sandbox behind its network model, this far away: the phased path's counts (not recorded)",
    )
    harness.add_record_options(parser)
    args = parser.parse_args(argv)
    if args.processor_latency_ms > 0:
        args.record = False
    started = datetime.now(UTC)
    result = {"benchmark": "statements", "started_at": started.isoformat(timespec="seconds")}
    result |= {"machine": harness.host_info(), "software": harness.software_info()}
    result |= measure(args.payments, args.database, args.processor_latency_ms)
    print_result(result)
    if args.record:
        path = harness.record("statements", result, history_figures(result), args.note)
        print(f"recorded in {path.relative_to(harness.REPO_DIR)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("MONEYRAIL_LOG_LEVEL", "WARNING")
    raise SystemExit(main())
