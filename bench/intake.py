"""The intake benchmark: `POST /v1/customers` with idempotency keys, moneyrail against two references.

    .venv/bin/python bench/intake.py [--duration 15] [--connections 64]

In one run, on one machine, the script sets up a fresh database, migrates it, creates an installation
and a sandbox key, starts three servers on free ports and loads each in turn with the same wrk script
(bench/intake.lua: a unique Idempotency-Key and a distinct customer per request):

- moneyrail: `moneyrail web` (one uvicorn process), the real intake path;
- bare: bench/bare_app.py, FastAPI + asyncpg doing one INSERT, the floor of any durable endpoint;
- localstripe: the fake Stripe server from PyPI (form-encoded), in its own virtualenv under bench/.work/.

It records requests/s, p50, p99, status counts and CPU use of each, and moneyrail's ratios to the two
references, in bench/results/intake-latest.json and a row of intake-history.csv. Each target is loaded
`--rounds` times in turn; the headline is the round with the median moneyrail ÷ bare ratio (of two,
the lower). Targets: moneyrail's
throughput at least 50% of bare's, and at least localstripe's. Exit code 0 when the run is clean and
both targets are met, 1 when any request failed (the run is then not a valid measurement), 2 when a
target is missed.

PostgreSQL and Redis: those of DATABASE_URL and REDIS_URL when set (the database named in the URL is
only used to connect; the run drops and re-creates `moneyrail_bench` on that server), else the embedded
servers moneyrail ships, with their data in bench/.work/. Every process started here is stopped on the
way out, Ctrl-C and SIGTERM included.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import secrets
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import harness
from harness import BenchError, Processes, Services, http

LUA_SCRIPT = harness.BENCH_DIR / "intake.lua"
LOCALSTRIPE_VERSION = "1.15.10"
LOCALSTRIPE_VENV = harness.WORK_DIR / "localstripe-venv"
LOCALSTRIPE_KEY = "sk_test_12345"
# localstripe pickles its whole store to this fixed path after every write (see bench/README.md).
LOCALSTRIPE_PICKLE = Path("/tmp/localstripe.pickle")

BENCH_DATABASE = harness.BENCH_DATABASE
WRK_TIMEOUT = "30s"  # far above any healthy latency: a slow answer is measured, not dropped
BARE_RATIO_TARGET = 0.5
LOCALSTRIPE_RATIO_TARGET = 1.0

BodyKind = Literal["json", "form"]


# ---------------------------------------------------------------------------------------------- tools


def ensure_localstripe() -> Path:
    """localstripe (pinned) in its own virtualenv: it must not share moneyrail's dependencies."""
    python = LOCALSTRIPE_VENV / "bin" / "python"
    if not python.exists():
        print(f"creating {LOCALSTRIPE_VENV.relative_to(harness.REPO_DIR)}", file=sys.stderr)
        harness.run([sys.executable, "-m", "venv", "--clear", str(LOCALSTRIPE_VENV)])
    if harness.installed_version(python, "localstripe") != LOCALSTRIPE_VERSION:
        print(f"pip install localstripe=={LOCALSTRIPE_VERSION}", file=sys.stderr)
        harness.run([str(python), "-m", "pip", "install", "--quiet", f"localstripe=={LOCALSTRIPE_VERSION}"])
    return LOCALSTRIPE_VENV / "bin" / "localstripe"


# ---------------------------------------------------------------------------------------------- HTTP


@dataclass
class Target:
    name: str
    base_url: str
    secret: str
    body: BodyKind
    process: subprocess.Popen[bytes]
    database_url: str | None = None  # set for targets that write to PostgreSQL


def create_customer(target: Target, key: str, n: str) -> tuple[int, dict[str, str], dict[str, Any]]:
    headers = {"Authorization": f"Bearer {target.secret}", "Idempotency-Key": key}
    if target.body == "json":
        body = json.dumps({"email": f"c{n}@example.com", "name": f"Bench {n}"}).encode()
        headers["Content-Type"] = "application/json"
    else:
        body = f"email=c{n}%40example.com&name=Bench+{n}".encode()
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    status, response_headers, raw = http(
        "POST", f"{target.base_url}/v1/customers", body=body, headers=headers
    )
    try:
        document = json.loads(raw)
    except ValueError:
        document = {"raw": raw[:500].decode(errors="replace")}
    return status, {k.lower(): v for k, v in response_headers.items()}, document


def smoke_test(target: Target) -> dict[str, Any]:
    """One customer before the load; for moneyrail also the replay of the same key."""
    key = f"smoke-{secrets.token_hex(8)}"
    status, _, document = create_customer(target, key, "smoke")
    if status != 200 or not str(document.get("id", "")).startswith("cus_"):
        raise BenchError(f"{target.name}: POST /v1/customers answered {status}: {document}")
    outcome: dict[str, Any] = {"status": status, "id_prefix": "cus_"}
    if target.name == "moneyrail":
        again, again_headers, again_document = create_customer(target, key, "smoke")
        replayed = (
            again == 200
            and again_headers.get("idempotent-replayed") == "true"
            and again_document.get("id") == document["id"]
        )
        if not replayed:
            raise BenchError(f"moneyrail did not replay an idempotency key: {again} {again_headers}")
        outcome["idempotent_replay"] = True
    return outcome


# ---------------------------------------------------------------------------------------------- load


@dataclass
class LoadResult:
    requests: int
    duration_s: float
    requests_per_s: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    p99_9_ms: float
    mean_ms: float
    max_ms: float
    statuses: dict[str, int]
    non_2xx: int
    socket_errors: dict[str, int]
    cpu_percent_of_one_core: dict[str, float]
    machine_cpu_busy_percent: float
    other_processes: dict[str, float]  # the busiest processes outside the benchmark, % of one core
    # New PostgreSQL connections the server opened during the run: a steady pool opens none.
    postgres_sessions_opened: int | None
    # The server's CPU time (from /proc) over the measured window ÷ requests: steadier than
    # requests/s on a shared machine, where the throughput follows the other processes' load.
    server_cpu_ms_per_request: float

    @property
    def failed(self) -> int:
        return self.non_2xx + sum(self.socket_errors.values())


def run_wrk(
    wrk: str, target: Target, run_id: str, args: argparse.Namespace, duration_s: int
) -> dict[str, Any]:
    argv = [
        wrk,
        *(f"-t{args.threads}", f"-c{args.connections}", f"-d{duration_s}s", "--timeout", WRK_TIMEOUT),
        *("-s", str(LUA_SCRIPT), "-H", f"Authorization: Bearer {target.secret}"),
        f"{target.base_url}/v1/customers",
        *("--", run_id, target.body),
    ]
    completed = subprocess.run(argv, capture_output=True, text=True)
    (harness.LOG_DIR / f"wrk-{target.name}-{run_id}.txt").write_text(completed.stdout + completed.stderr)
    if completed.returncode != 0:
        raise BenchError(f"wrk failed on {target.name} ({completed.returncode}): {completed.stderr[-2000:]}")
    for line in completed.stdout.splitlines():
        if line.startswith("BENCH_JSON "):
            report: dict[str, Any] = json.loads(line.removeprefix("BENCH_JSON "))
            return report
    raise BenchError(f"wrk printed no BENCH_JSON line for {target.name}:\n{completed.stdout[-2000:]}")


def load(wrk: str, target: Target, run_id: str, args: argparse.Namespace) -> LoadResult:
    if args.warmup > 0:
        print(f"{target.name}: warm-up {args.warmup} s", file=sys.stderr)
        run_wrk(wrk, target, f"{run_id}w", args, args.warmup)
        if target.name == "localstripe":
            http("DELETE", f"{target.base_url}/_config/data")  # start the measured run on an empty store
    sessions_before: int | None = None
    if target.database_url is not None:
        asyncio.run(harness.checkpoint(target.database_url))
        sessions_before = asyncio.run(harness.sessions_opened(target.database_url))
    print(f"{target.name}: {args.duration} s at {args.connections} connections", file=sys.stderr)

    window = harness.CpuWindow.now()
    before_wrk = resource.getrusage(resource.RUSAGE_CHILDREN)
    report = run_wrk(wrk, target, run_id, args, args.duration)
    after_wrk = resource.getrusage(resource.RUSAGE_CHILDREN)
    measured = window.until_now(args.database, server=target.process.pid)
    new_sessions: int | None = None
    if target.database_url is not None and sessions_before is not None:
        new_sessions = harness.sessions_opened_since(target.database_url, sessions_before)

    seconds = float(report["duration_us"]) / 1e6
    wrk_cpu_s = (after_wrk.ru_utime + after_wrk.ru_stime) - (before_wrk.ru_utime + before_wrk.ru_stime)
    cpu = dict(measured["cpu_percent_of_one_core"])
    cpu["wrk"] = round(100.0 * wrk_cpu_s / measured["seconds"], 1)  # a child of this script: in "other"
    cpu["other"] = max(0.0, round(cpu["other"] - cpu["wrk"], 1))
    statuses = {str(status): int(count) for status, count in sorted(report["statuses"].items())}
    non_2xx = sum(count for status, count in statuses.items() if not status.startswith("2"))
    errors = report["errors"]
    latency = report["latency_us"]
    return LoadResult(
        requests=report["requests"],
        duration_s=round(seconds, 3),
        requests_per_s=round(report["requests"] / seconds, 1),
        p50_ms=latency["p50"] / 1000,
        p90_ms=latency["p90"] / 1000,
        p99_ms=latency["p99"] / 1000,
        p99_9_ms=latency["p99_9"] / 1000,
        mean_ms=round(latency["mean"] / 1000, 3),
        max_ms=latency["max"] / 1000,
        statuses=statuses,
        non_2xx=non_2xx,
        socket_errors={name: int(errors[name]) for name in ("connect", "read", "write", "timeout")},
        cpu_percent_of_one_core=cpu,
        machine_cpu_busy_percent=measured["machine_cpu_busy_percent"],
        other_processes=measured["other_processes"],
        postgres_sessions_opened=new_sessions,
        server_cpu_ms_per_request=round(
            10.0 * cpu["server"] * measured["seconds"] / max(report["requests"], 1), 3
        ),
    )


# ---------------------------------------------------------------------------------------------- report


def best_round(rounds: list[dict[str, LoadResult]]) -> dict[str, LoadResult]:
    """The round whose moneyrail ÷ bare ratio is the median (of two: the lower), so one lucky round
    never decides the verdict; every round is recorded beside it."""
    if any("moneyrail" not in one or "bare" not in one for one in rounds):
        return rounds[-1]
    ordered = sorted(rounds, key=lambda one: one["moneyrail"].requests_per_s / one["bare"].requests_per_s)
    return ordered[(len(ordered) - 1) // 2]


def ratios(mine: LoadResult, other: LoadResult) -> dict[str, float]:
    return {
        "requests_per_s": round(mine.requests_per_s / other.requests_per_s, 3),
        "p50": round(mine.p50_ms / other.p50_ms, 3),
        "p99": round(mine.p99_ms / other.p99_ms, 3),
    }


def print_table(results: Mapping[str, LoadResult]) -> None:
    header = (
        f"{'target':<12} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'non-2xx':>8} {'sock err':>8}"
        f" {'cpu ms/req':>10}  cpu %"
    )
    print(header)
    print("-" * len(header))
    for name, result in results.items():
        cpu = " ".join(f"{k}={v:g}" for k, v in result.cpu_percent_of_one_core.items())
        print(
            f"{name:<12} {result.requests_per_s:>9.1f} {result.p50_ms:>8.2f} {result.p99_ms:>8.2f}"
            f" {result.non_2xx:>8} {sum(result.socket_errors.values()):>8}"
            f" {result.server_cpu_ms_per_request:>10.3f}  {cpu}"
        )


def history_figures(document: dict[str, Any]) -> dict[str, Any]:
    """The key figures of a run, for its history row: the headline round's, and every round's ratio."""
    results, compared = document["results"], document["ratios"]

    def figure(target: str, key: str) -> Any:
        return results[target].get(key) if target in results else None

    def ratio(pair: str) -> Any:
        return compared[pair]["requests_per_s"] if pair in compared else None

    return {
        "moneyrail_rps": figure("moneyrail", "requests_per_s"),
        "bare_rps": figure("bare", "requests_per_s"),
        "localstripe_rps": figure("localstripe", "requests_per_s"),
        "ratio_bare": ratio("moneyrail/bare"),
        "ratio_bare_by_round": [
            one["ratios"]["moneyrail/bare"]["requests_per_s"]
            for one in document.get("rounds", [])
            if "moneyrail/bare" in one["ratios"]
        ],
        "ratio_localstripe": ratio("moneyrail/localstripe"),
        "moneyrail_cpu_ms_per_request": figure("moneyrail", "server_cpu_ms_per_request"),
        "bare_cpu_ms_per_request": figure("bare", "server_cpu_ms_per_request"),
        "moneyrail_p99_ms": figure("moneyrail", "p99_ms"),
        "valid": document["valid"],
    }


# ---------------------------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="moneyrail intake benchmark (see bench/README.md)")
    parser.add_argument("--duration", type=int, default=15, help="seconds of measured load per target")
    parser.add_argument("--connections", type=int, default=64, help="concurrent connections")
    parser.add_argument("--threads", type=int, default=2, help="wrk threads")
    parser.add_argument("--warmup", type=int, default=3, help="seconds of unmeasured load first (0: none)")
    parser.add_argument("--rounds", type=int, default=2, help="each target loaded this many times, in turn")
    parser.add_argument("--database", default=BENCH_DATABASE, help="database dropped and created for the run")
    parser.add_argument(
        "--targets",
        default="moneyrail,bare,localstripe",
        help="comma-separated subset, in load order (recorded when moneyrail and bare are both in it)",
    )
    harness.add_record_options(parser)
    return parser.parse_args(argv)


def start_targets(
    processes: Processes, services: Services, secret: str, names: list[str], localstripe: Path | None
) -> dict[str, Target]:
    env = harness.server_env(services)
    targets: dict[str, Target] = {}
    for name in names:
        if name == "moneyrail":
            server = harness.start_moneyrail(processes, env)
            targets[name] = Target(
                name, server.base_url, secret, "json", server.process, services.database_url
            )
        elif name == "bare":
            server = harness.start_bare(processes, env)
            targets[name] = Target(
                name, server.base_url, secret, "json", server.process, services.database_url
            )
        elif name == "localstripe" and localstripe is not None:
            port = harness.free_port()
            base_url = f"http://127.0.0.1:{port}"
            argv = [str(localstripe), "--port", str(port), "--from-scratch"]
            process = processes.start(name, argv, os.environ)
            harness.wait_until_up(name, process, f"{base_url}/v1/customers")
            targets[name] = Target(name, base_url, LOCALSTRIPE_KEY, "form", process)
        else:
            raise BenchError(f"unknown target {name!r}")
    return targets


@contextmanager
def localstripe_pickle_kept() -> Iterator[None]:
    """localstripe overwrites /tmp/localstripe.pickle: put back whatever was there before the run."""
    saved = LOCALSTRIPE_PICKLE.with_name(f"localstripe.pickle.before-bench-{os.getpid()}")
    existed = LOCALSTRIPE_PICKLE.exists()
    if existed:
        LOCALSTRIPE_PICKLE.rename(saved)
    try:
        yield
    finally:
        LOCALSTRIPE_PICKLE.unlink(missing_ok=True)
        if existed:
            saved.rename(LOCALSTRIPE_PICKLE)


def bench(args: argparse.Namespace) -> int:
    names = [name.strip() for name in args.targets.split(",") if name.strip()]
    wrk = harness.ensure_wrk()
    localstripe = ensure_localstripe() if "localstripe" in names else None
    started_at = datetime.now(UTC)
    software = harness.software_info(localstripe=LOCALSTRIPE_VERSION)  # before the servers start
    run_id = harness.run_token()
    with ExitStack() as stack:  # unwinds in reverse: servers, then PostgreSQL and Redis, then the pickle
        if "localstripe" in names:
            stack.enter_context(localstripe_pickle_kept())
        run = stack.enter_context(harness.run_context(args.database))
        targets = start_targets(run.processes, run.services, run.secret, names, localstripe)
        smoke = {name: smoke_test(target) for name, target in targets.items()}
        rounds: list[dict[str, LoadResult]] = []
        for round_number in range(args.rounds):  # every target again, in the same order
            rounds.append(
                {
                    name: load(wrk, target, f"{run_id}r{round_number}", args)
                    for name, target in targets.items()
                }
            )
        machine = harness.machine_info(run.services, wrk)
    results = rounds[-1] if len(rounds) == 1 else best_round(rounds)
    finished_at = datetime.now(UTC)

    print()
    print_table(results)
    problems = [
        f"{name}: {result.non_2xx} non-2xx answers {result.statuses},"
        f" {sum(result.socket_errors.values())} socket errors {result.socket_errors}"
        for name, result in results.items()
        if result.failed
    ]
    pairs = {"moneyrail/bare": "bare", "moneyrail/localstripe": "localstripe"}
    compared = {
        label: ratios(results["moneyrail"], results[other])
        for label, other in pairs.items()
        if "moneyrail" in results and other in results
    }
    thresholds = {"moneyrail/bare": BARE_RATIO_TARGET, "moneyrail/localstripe": LOCALSTRIPE_RATIO_TARGET}
    targets_met = [
        {
            "name": f"{label} requests/s",
            "threshold": thresholds[label],
            "measured": ratio["requests_per_s"],
            "met": ratio["requests_per_s"] >= thresholds[label],
        }
        for label, ratio in compared.items()
    ]
    print()
    for target in targets_met:
        verdict = "met" if target["met"] else "MISSED"
        print(f"{target['name']}: {target['measured']:.3f} (target ≥ {target['threshold']:.2f}) {verdict}")
    for problem in problems:
        print(f"INVALID RUN: {problem}")
    warnings = [
        f"{name}: other processes used {result.cpu_percent_of_one_core['other']}% of one core during the run"
        f" (busiest: {result.other_processes or 'short-lived ones'})"
        for name, result in results.items()
        if result.cpu_percent_of_one_core["other"] > harness.BACKGROUND_CPU_WARNING
    ]
    for warning in warnings:
        print(f"NOISY MACHINE: {warning}")

    if "moneyrail/bare" not in compared:
        print("\n(moneyrail and bare were not both loaded: nothing recorded)")
    elif args.record:
        document = {
            "benchmark": "intake",
            "started_at": started_at.isoformat(timespec="seconds"),
            "finished_at": finished_at.isoformat(timespec="seconds"),
            "request": "POST /v1/customers, a new Idempotency-Key and a distinct customer per request",
            "settings": {
                "duration_s": args.duration,
                "warmup_s": args.warmup,
                "connections": args.connections,
                "threads": args.threads,
                "rounds": args.rounds,
                "wrk_timeout": WRK_TIMEOUT,
            },
            "machine": machine,
            "software": software,
            "smoke": smoke,
            "results": {name: asdict(result) for name, result in results.items()},
            "rounds": [
                {
                    "results": {name: asdict(result) for name, result in one.items()},
                    "ratios": {
                        label: ratios(one["moneyrail"], one[other])
                        for label, other in pairs.items()
                        if "moneyrail" in one and other in one
                    },
                }
                for one in rounds
            ],
            "ratios": compared,
            "targets": targets_met,
            "problems": problems,
            "warnings": warnings,
            "valid": not problems,
        }
        written = harness.record("intake", document, history_figures(document), args.note)
        print(f"\nrecorded in {written.relative_to(harness.REPO_DIR)}")
    if problems:
        return 1
    return 0 if all(target["met"] for target in targets_met) else 2


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        return bench(args)
    except KeyboardInterrupt:
        print("interrupted: every started process was stopped", file=sys.stderr)
        return 130
    except BenchError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
