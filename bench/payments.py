"""The payments benchmark: create + confirm (4242) + capture of manual payments, against the bare endpoint.

    .venv/bin/python bench/payments.py [--duration 20] [--clients 64]
    .venv/bin/python bench/payments.py --processor-latency-ms 150 [--processor-jitter-ms 50] [--clients 256]

In one run, on one machine, the script sets up a fresh database, migrates it, creates an installation
and a sandbox key (bench/intake.py's helpers, imported), starts `moneyrail web` (one uvicorn process, as
in production) and bench/bare_app.py on free ports, then loads each in turn, alone, with the same load
generator: this script's `generate` command in its own process, asyncio on uvloop, one keep-alive
HTTP/1.1 connection per client.

- moneyrail: every client loops `POST /v1/payment-intents` (secret key, 2000 eur, manual capture),
  `POST /v1/payment-intents/{id}/confirm` (publishable key, client_secret, card 4242...) and
  `POST /v1/payment-intents/{id}/capture` (secret key), each with its own Idempotency-Key;
- bare: every client loops `POST /v1/customers` (the bare endpoint of the intake benchmark);
- bare with wrk: the intake benchmark's own measurement of the bare endpoint (bench/intake.lua), the
  reference that tells whether the Python generator holds the bare endpoint back.

A multi-step flow needs a generator that keeps each client's payment between requests, which wrk's
Lua cannot time per step; so both targets get this generator, and wrk only calibrates it. Recorded:
payments/s, requests/s, p50/p90/p99 per step, the bare endpoint's requests/s and latency, every
non-200 answer, CPU use of each process (the generator's included) and moneyrail's ratios to bare;
each target is loaded `--rounds` times in turn and the headline is the round with the lower ratio.
After the load, straight in the database: succeeded payments = successful captures, and
`moneyrail ledger verify` passes. Results: bench/results/payments-latest.json and a row of
payments-history.csv. Exit code 0 for a clean run, 1 when any request failed or a check broke (the
run is then not a valid measurement). `--profile PY_SPY` samples moneyrail's web process under the
load instead (py-spy `--gil`) and prints where its CPU goes; it records nothing.

At a real processor's latency (issue 31): `--processor-latency-ms 150` (round trips drawn within
± `--processor-jitter-ms`, 50 by default; 256 clients unless `--clients` says) starts two `moneyrail
web` processes instead, one plain and one whose sandbox processor is reached over the network model
(MONEYRAIL_SANDBOX_LATENCY_MS and _JITTER_MS, processor/sandbox/network.py), and loads them in turn
with the same flow, `--rounds` times; no bare. Target: steps/s at the latency >= 0.8 x steps/s at 0 ms
(the headline is the round with the lower ratio); exit code 2 when missed. Recorded besides: p99 per
step at both, and the database connections in use during each window (pg_stat_activity sampled every
100 ms: `active` and `idle in transaction`), which shows connections held across processor calls.
Results: bench/results/payments-latency-latest.json and a row of payments-latency-history.csv.

PostgreSQL and Redis: those of DATABASE_URL and REDIS_URL when set, else the embedded servers (as
bench/intake.py). Every process started here is stopped on the way out, Ctrl-C and SIGTERM included.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import resource
import secrets
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import harness
import intake
from harness import REPO_DIR, BenchError, http
from intake import Target

REQUEST_TIMEOUT_S = 30.0  # far above any healthy latency: a slow answer is measured, not dropped
GENERATOR_SATURATED = 90.0  # % of one core: the generator itself is then the limit
CLIENTS = 64
# at a real processor's latency (issue 31): 150 ms ± 50 per call, 256 clients, steps/s >= 0.8 x at 0 ms
LATENCY_CLIENTS = 256
LATENCY_JITTER_MS = 50.0
LATENCY_TARGET = 0.8
BENCH_DATABASE = f"{harness.BENCH_DATABASE}_payments"  # its own: the intake benchmark drops its database

CARD = {"number": "4242424242424242", "exp_month": 12, "exp_year": 2034, "cvc": "123"}
CREATE_BODY = json.dumps({"amount": 2000, "currency": "eur", "capture_method": "manual"}).encode()
STEPS = ("create", "confirm", "capture")
# what a 200 must say, as (field, value): anything else is counted as a failure
EXPECTED = {
    "create": ("status", "requires_payment_method"),
    "confirm": ("status", "requires_capture"),
    "capture": ("status", "succeeded"),
    "customer": ("object", "customer"),
}


# ---------------------------------------------------------------------------------------------- clients


class RawConnection:
    """One keep-alive HTTP/1.1 connection, one request at a time: about the least a Python client costs."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self, path: str, headers: Mapping[str, str], body: bytes) -> tuple[int, bytes]:
        if self.reader is None or self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        lines = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n{lines}"
            f"Content-Length: {len(body)}\r\n\r\n"
        )
        self.writer.write(head.encode() + body)
        try:
            status, answer, keep = await self._answer(self.reader)
        except BaseException:
            await self.close()
            raise
        if not keep:
            await self.close()
        return status, answer

    @staticmethod
    async def _answer(reader: asyncio.StreamReader) -> tuple[int, bytes, bool]:
        head = await reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        length, chunked, keep = -1, False, True
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"transfer-encoding":
                chunked = b"chunked" in value.lower()
            elif name == b"connection":
                keep = b"close" not in value.lower()
        if chunked:
            parts = []
            while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
                parts.append(await reader.readexactly(size + 2))
            await reader.readuntil(b"\r\n")  # the empty trailer
            return status, b"".join(part[:-2] for part in parts), keep
        if length >= 0:
            return status, await reader.readexactly(length), keep
        return status, await reader.read(), False

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


# ---------------------------------------------------------------------------------------------- generator


@dataclass
class Recorder:
    """What the clients saw: every answer counted by phase, step and status; latencies of the window."""

    phase: str = "warmup"  # warmup -> measure -> drain (no new flow starts)
    started: float = 0.0
    ended: float = 0.0
    cpu_started: float = 0.0
    cpu_ended: float = 0.0
    counts: dict[str, dict[str, Counter[str]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(Counter))
    )
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    flows: list[float] = field(default_factory=list)  # whole payments completed in the window
    succeeded: int = 0  # captures answered 200 `succeeded`, every phase
    failures: list[dict[str, Any]] = field(default_factory=list)  # the first few, for the logs

    def answer(self, step: str, started: float, outcome: str, detail: str = "") -> None:
        self.counts[self.phase][step][outcome] += 1
        if self.phase == "measure":
            self.latencies[step].append(time.perf_counter() - started)
        if outcome != "200" and len(self.failures) < 20:
            self.failures.append({"phase": self.phase, "step": step, "outcome": outcome, "detail": detail})

    def switch(self, phase: str) -> None:
        now, usage = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
        if phase == "measure":
            self.started, self.cpu_started = now, usage.ru_utime + usage.ru_stime
        else:
            self.ended, self.cpu_ended = now, usage.ru_utime + usage.ru_stime
        self.phase = phase
        print(f"PHASE {phase}", flush=True)  # the orchestrator takes its CPU snapshots on these lines


async def step(
    connection: RawConnection,
    recorder: Recorder,
    name: str,
    path: str,
    headers: Mapping[str, str],
    body: bytes,
) -> dict[str, Any] | None:
    """One request; the answer's document when it is a 200 that says what it should, else None."""
    started = time.perf_counter()
    try:
        async with asyncio.timeout(REQUEST_TIMEOUT_S):
            status, raw = await connection.post(path, headers, body)
    except TimeoutError:
        await connection.close()
        recorder.answer(name, started, "timeout")
        return None
    except Exception as error:  # a refused or broken connection: counted, and a breath before retrying
        recorder.answer(name, started, "socket_error", repr(error))
        await asyncio.sleep(0.1)
        return None
    if status != 200:
        recorder.answer(name, started, str(status), raw[:300].decode(errors="replace"))
        return None
    document: dict[str, Any] = json.loads(raw)
    key, wanted = EXPECTED[name]
    if document.get(key) != wanted:
        recorder.answer(name, started, f"200 {key}={document.get(key)}", raw[:300].decode(errors="replace"))
        return None
    recorder.answer(name, started, "200")
    return document


async def payment_client(
    connection: RawConnection, recorder: Recorder, secret: str, tag: str, clients_done: Callable[[], None]
) -> None:
    """create -> confirm -> capture, again and again; a flow begun before the window closes is finished."""
    json_secret = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
    n = 0
    while recorder.phase != "drain":
        n += 1
        key = f"bench-{tag}-{n}"
        began = time.perf_counter()
        created = await step(
            connection,
            recorder,
            "create",
            "/v1/payment-intents",
            {**json_secret, "Idempotency-Key": f"{key}-create"},
            CREATE_BODY,
        )
        if created is None:
            continue
        path = f"/v1/payment-intents/{created['id']}"
        confirm_body = json.dumps({"client_secret": created["client_secret"], "card": CARD}).encode()
        publishable = {
            "Authorization": f"Bearer {created['publishable_key']}",
            "Content-Type": "application/json",
            "Idempotency-Key": f"{key}-confirm",
        }
        if await step(connection, recorder, "confirm", f"{path}/confirm", publishable, confirm_body) is None:
            continue
        capture_headers = {"Authorization": f"Bearer {secret}", "Idempotency-Key": f"{key}-capture"}
        if await step(connection, recorder, "capture", f"{path}/capture", capture_headers, b"") is None:
            continue
        recorder.succeeded += 1
        if recorder.phase == "measure":
            recorder.flows.append(time.perf_counter() - began)
    await connection.close()
    clients_done()


async def bare_client(
    connection: RawConnection, recorder: Recorder, secret: str, tag: str, clients_done: Callable[[], None]
) -> None:
    """`POST /v1/customers` again and again, the body and key of bench/intake.lua."""
    n = 0
    while recorder.phase != "drain":
        n += 1
        name = f"{tag}-{n}"
        headers = {
            "Authorization": f"Bearer {secret}",
            "Content-Type": "application/json",
            "Idempotency-Key": f"bench-{name}",
        }
        body = json.dumps({"email": f"c{name}@example.com", "name": f"Bench {name}"}).encode()
        await step(connection, recorder, "customer", "/v1/customers", headers, body)
    await connection.close()
    clients_done()


def percentiles(seconds: list[float]) -> dict[str, float]:
    """Nearest-rank percentiles in milliseconds."""
    if not seconds:
        return {}
    ordered = sorted(seconds)

    def rank(q: float) -> float:
        return round(1000 * ordered[max(0, math.ceil(q * len(ordered)) - 1)], 2)

    return {
        "p50_ms": rank(0.50),
        "p90_ms": rank(0.90),
        "p99_ms": rank(0.99),
        "p99_9_ms": rank(0.999),
        "max_ms": round(1000 * ordered[-1], 2),
        "mean_ms": round(1000 * sum(ordered) / len(ordered), 2),
    }


def summary(recorder: Recorder, steps: tuple[str, ...]) -> dict[str, Any]:
    seconds = recorder.ended - recorder.started
    measured = {name: dict(recorder.counts["measure"][name]) for name in steps}
    report: dict[str, Any] = {
        "duration_s": round(seconds, 3),
        "steps": {
            name: {
                "requests": len(recorder.latencies[name]),
                "requests_per_s": round(len(recorder.latencies[name]) / seconds, 1),
                "statuses": measured[name],
                **percentiles(recorder.latencies[name]),
            }
            for name in steps
        },
        "statuses_by_phase": {
            phase: {name: dict(counter) for name, counter in by_step.items()}
            for phase, by_step in recorder.counts.items()
        },
        "failed": sum(
            count
            for by_step in recorder.counts.values()
            for counter in by_step.values()
            for outcome, count in counter.items()
            if outcome != "200"
        ),
        "failures_sample": recorder.failures,
        "generator_cpu_percent_of_one_core": round(
            100.0 * (recorder.cpu_ended - recorder.cpu_started) / seconds, 1
        ),
    }
    every = [latency for name in steps for latency in recorder.latencies[name]]
    report["requests"] = len(every)
    report["requests_per_s"] = round(len(every) / seconds, 1)
    report["all_requests"] = percentiles(every)
    if "capture" in steps:
        ok = recorder.counts["measure"]["capture"]["200"]
        report["payments"] = ok
        report["payments_per_s"] = round(ok / seconds, 1)
        report["payment"] = percentiles(recorder.flows)  # create sent -> capture answered
        report["succeeded_in_all_phases"] = recorder.succeeded
    return report


async def generate(args: argparse.Namespace) -> dict[str, Any]:
    recorder = Recorder()
    flow, steps = (payment_client, STEPS) if args.flow == "payments" else (bare_client, ("customer",))
    host, port = args.url.removeprefix("http://").split(":")
    remaining = args.clients

    def client_done() -> None:
        nonlocal remaining
        remaining -= 1

    async def phases() -> None:
        if args.warmup > 0:
            await asyncio.sleep(args.warmup)
        recorder.switch("measure")
        await asyncio.sleep(args.duration)
        recorder.switch("drain")

    tasks = [
        flow(RawConnection(host, int(port)), recorder, args.secret, f"{args.run_id}-{client}", client_done)
        for client in range(args.clients)
    ]
    await asyncio.gather(phases(), *tasks)
    assert remaining == 0
    return summary(recorder, steps)


def generator_main(args: argparse.Namespace) -> int:
    import uvloop

    report = uvloop.run(generate(args))
    print("RESULT " + json.dumps(report), flush=True)
    return 0


# ---------------------------------------------------------------------------------------------- orchestrator


def load(target: Target, flow: str, secret: str, run_id: str, args: argparse.Namespace) -> dict[str, Any]:
    """One target under the generator; CPU measured over the generator's window."""
    assert target.database_url is not None
    quiet = harness.wait_until_quiet(args.quiet_wait)
    # before the warm-up: the load never pauses, nor meets the dead rows of the loads before it
    asyncio.run(harness.checkpoint(target.database_url, vacuum=True))
    sessions_before: int | None = None
    argv = [
        sys.executable,
        str(Path(__file__).resolve()),
        "generate",
        *("--url", target.base_url, "--flow", flow, "--secret", secret, "--run-id", run_id),
        *("--clients", str(args.clients)),
        *("--warmup", str(args.warmup), "--duration", str(args.duration)),
    ]
    print(f"{target.name}: {flow}, {args.warmup} s warm-up, {args.duration} s measured", file=sys.stderr)
    harness.LOG_DIR.mkdir(parents=True, exist_ok=True)
    with (harness.LOG_DIR / f"generator-{target.name}-{run_id}.log").open("wb") as log:
        generator = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=log, cwd=REPO_DIR, text=True, start_new_session=True
        )
        sampler = harness.ConnectionSampler(target.database_url)  # the connections in use, in the window
        try:
            window: harness.CpuWindow | None = None
            cpu: dict[str, Any] = {}
            report: dict[str, Any] | None = None
            assert generator.stdout is not None
            for line in generator.stdout:
                if line.startswith("PHASE measure"):
                    window = harness.CpuWindow.now()
                    sessions_before = asyncio.run(harness.sessions_opened(target.database_url))
                    sampler.start()
                elif line.startswith("PHASE drain") and window is not None:
                    cpu = window.until_now(args.database, server=target.process.pid, generator=generator.pid)
                    sampler.stop()
                elif line.startswith("RESULT "):
                    report = json.loads(line.removeprefix("RESULT "))
            generator.wait()
        finally:
            sampler.stop()
            harness.stop_process(generator)
    if report is None or generator.returncode != 0:
        raise BenchError(
            f"the generator failed on {target.name} ({generator.returncode}): see bench/.work/logs"
        )
    cpu["cpu_percent_of_one_core"]["generator"] = report["generator_cpu_percent_of_one_core"]
    opened = None
    if sessions_before is not None:
        opened = harness.sessions_opened_since(target.database_url, sessions_before)
    server_ms = 10.0 * cpu["cpu_percent_of_one_core"]["server"] / max(report["requests_per_s"], 0.001)
    postgres_ms = 10.0 * cpu["cpu_percent_of_one_core"]["postgres"] / max(report["requests_per_s"], 0.001)
    return {
        **report,
        **cpu,
        "server_cpu_ms_per_request": round(server_ms, 2),
        "postgres_cpu_ms_per_request": round(postgres_ms, 2),
        "postgres_sessions_opened": opened,
        "postgres_connections": sampler.summary(),
        "machine_busy_before_percent": quiet,
        "load_average_after": harness.load_average(),
    }


def post_json(
    target: Target, path: str, key: str, idempotency_key: str, body: bytes
) -> tuple[int, dict[str, str], Any]:
    headers = {"Authorization": f"Bearer {key}", "Idempotency-Key": idempotency_key}
    if body:
        headers["Content-Type"] = "application/json"
    status, answer_headers, raw = http("POST", f"{target.base_url}{path}", body=body, headers=headers)
    return status, {k.lower(): v for k, v in answer_headers.items()}, json.loads(raw or b"{}")


def smoke_payment(target: Target) -> dict[str, Any]:
    """One whole payment before the load, and the replay of its creation's Idempotency-Key."""
    key = f"smoke-{secrets.token_hex(8)}"
    status, _, created = post_json(target, "/v1/payment-intents", target.secret, f"{key}-create", CREATE_BODY)
    if status != 200 or created.get("status") != "requires_payment_method":
        raise BenchError(f"moneyrail: POST /v1/payment-intents answered {status}: {created}")
    again, again_headers, replayed = post_json(
        target, "/v1/payment-intents", target.secret, f"{key}-create", CREATE_BODY
    )
    if again != 200 or again_headers.get("idempotent-replayed") != "true" or replayed["id"] != created["id"]:
        raise BenchError(f"moneyrail did not replay the creation's Idempotency-Key: {again} {again_headers}")
    path = f"/v1/payment-intents/{created['id']}"
    confirm_body = json.dumps({"client_secret": created["client_secret"], "card": CARD}).encode()
    status, _, confirmed = post_json(
        target, f"{path}/confirm", created["publishable_key"], f"{key}-confirm", confirm_body
    )
    if status != 200 or confirmed.get("status") != "requires_capture":
        raise BenchError(f"moneyrail: confirm answered {status}: {confirmed}")
    status, _, captured = post_json(target, f"{path}/capture", target.secret, f"{key}-capture", b"")
    if status != 200 or captured.get("status") != "succeeded":
        raise BenchError(f"moneyrail: capture answered {status}: {captured}")
    return {"payment": "succeeded", "idempotent_replay": True}


async def database_counts(database_url: str) -> dict[str, Any]:
    connection = await asyncpg.connect(database_url)
    try:
        statuses = await connection.fetch("SELECT status, count(*) FROM payment_intents GROUP BY status")
        journal = await connection.fetchval(
            "SELECT count(*) FROM journal_transactions WHERE kind = 'payment_capture'"
        )
        captured = await connection.fetchval(
            "SELECT coalesce(sum(amount_received), 0) FROM payment_intents WHERE status = 'succeeded'"
        )
    finally:
        await connection.close()
    return {
        "payment_intents_by_status": {row["status"]: row["count"] for row in statuses},
        "capture_journal_transactions": journal,
        "amount_received_total": int(captured),
    }


def check_database(
    database_url: str, env: Mapping[str, str], captures_ok: int
) -> tuple[dict[str, Any], list[str]]:
    """Straight in the database: one succeeded payment and one capture posting per 200 capture."""
    counts = asyncio.run(database_counts(database_url))
    verify = subprocess.run(
        [str(harness.MONEYRAIL), "ledger", "verify", "--json"], env=dict(env), capture_output=True, text=True
    )
    try:
        report = harness.parse_cli_json(verify.stdout)
    except BenchError:
        report = {"output": (verify.stdout + verify.stderr)[-2000:]}
    succeeded = counts["payment_intents_by_status"].get("succeeded", 0)
    check = {
        **counts,
        "captures_answered_200": captures_ok,
        "ledger_verify": {"exit_code": verify.returncode, "report": report},
    }
    problems = []
    if succeeded != captures_ok:
        problems.append(
            f"{succeeded} succeeded payments in the database, {captures_ok} captures answered 200"
        )
    if counts["capture_journal_transactions"] != succeeded:
        problems.append(
            f"{counts['capture_journal_transactions']} capture journal transactions, {succeeded} succeeded"
        )
    if counts["amount_received_total"] != 2000 * succeeded:
        problems.append(f"amount received {counts['amount_received_total']}, expected {2000 * succeeded}")
    if verify.returncode != 0:
        problems.append(f"moneyrail ledger verify exited with {verify.returncode}")
    check["ok"] = not problems
    return check, problems


# ---------------------------------------------------------------------------------------------- report


def ratios(moneyrail: dict[str, Any], bare: dict[str, Any], bare_wrk: dict[str, Any]) -> dict[str, Any]:
    """moneyrail ÷ bare: for rates higher is better for moneyrail, for latencies lower is."""
    bare_all = bare["all_requests"]
    return {
        "steps_per_s": round(moneyrail["requests_per_s"] / bare["requests_per_s"], 3),
        "payments_per_s": round(moneyrail["payments_per_s"] / bare["requests_per_s"], 3),
        "p50": {name: round(s["p50_ms"] / bare_all["p50_ms"], 2) for name, s in moneyrail["steps"].items()},
        "p99": {name: round(s["p99_ms"] / bare_all["p99_ms"], 2) for name, s in moneyrail["steps"].items()},
        "steps_per_s_vs_bare_wrk": round(moneyrail["requests_per_s"] / bare_wrk["requests_per_s"], 3),
        "bare_generator_vs_bare_wrk": round(bare["requests_per_s"] / bare_wrk["requests_per_s"], 3),
    }


def generator_verdict(results: Mapping[str, Any], compared: Mapping[str, Any]) -> dict[str, Any]:
    used = {name: results[name]["cpu_percent_of_one_core"]["generator"] for name in ("moneyrail", "bare")}
    saturated = [name for name, percent in used.items() if percent >= GENERATOR_SATURATED]
    calibration = compared["bare_generator_vs_bare_wrk"]
    if saturated:
        verdict = (
            f"the generator was the limit on {', '.join(saturated)} (≥ {GENERATOR_SATURATED:.0f}% of a core)"
        )
    else:
        verdict = (
            f"the generator was not the limit (at most {max(used.values())}% of one core); on this machine it"
            f" still shares the CPUs with the server and PostgreSQL: bare reached {calibration:.2f} of its"
            " throughput under wrk"
        )
    return {"cpu_percent_of_one_core": used, "saturated": saturated, "verdict": verdict}


def history_figures(document: dict[str, Any]) -> dict[str, Any]:
    """The key figures of a run, for its history row: the headline round's, and every round's ratio."""
    mine = document["results"]["moneyrail"]
    return {
        "payments_per_s": mine["payments_per_s"],
        "steps_per_s": mine["requests_per_s"],
        "bare_rps": document["results"]["bare"]["requests_per_s"],
        "ratio": document["ratios"]["steps_per_s"],
        "ratio_by_round": [one["steps_per_s_ratio"] for one in document.get("rounds", [])],
        "server_cpu_ms_per_step": mine.get("server_cpu_ms_per_request"),
        "postgres_cpu_ms_per_step": mine.get("postgres_cpu_ms_per_request"),
        **{f"p99_{step}_ms": mine["steps"][step]["p99_ms"] for step in STEPS},
        "valid": document["valid"],
    }


# ---------------------------------------------------------------------------------------------- profile


def summarize_profile(path: Path, top: int = 30) -> None:
    """Samples by the package of the running frame, and moneyrail's functions with what they call.

    SQLAlchemy's async layer runs in greenlets and uvloop is C, so a sample's stack may begin anywhere
    in the coroutine chain: read shares within a stack, not as a call tree.
    """
    running: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        samples, frames = int(count), [frame.rsplit(":", 1)[0] + ")" for frame in stack.split(";")]
        total += samples
        where = frames[-1][frames[-1].rfind("(") + 1 : -1]
        running[where.split("/")[0] if "/" in where else where] += samples
        for frame in set(frames):
            inclusive[frame] += samples
    print(f"{total} samples; by the package of the running frame:")
    for package, samples in running.most_common(top):
        print(f"{100.0 * samples / total:6.1f}%  {package}")
    print("moneyrail's functions, with what they call:")
    for frame, samples in [item for item in inclusive.most_common() if "moneyrail/" in item[0]][:top]:
        print(f"{100.0 * samples / total:6.1f}%  {frame}")


def profile(py_spy: str, target: Target, run_id: str, args: argparse.Namespace) -> int:
    """The moneyrail load under py-spy (sampling the web process): a profile, never a recorded result."""
    output = harness.WORK_DIR / f"profile-{run_id}.txt"
    argv = [py_spy, "record", "--pid", str(target.process.pid), "--format", "raw", "--output", str(output)]
    # --gil: only samples where the server runs Python (its one thread holds the GIL), not its idle waits
    argv += ["--rate", "200", "--duration", str(args.warmup + args.duration), "--nonblocking", "--gil"]
    sampler = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        result = load(target, args.profile_flow, target.secret, run_id, args)
        sampler.wait(timeout=60)
    finally:
        harness.stop_process(sampler)
    # the intake's flow (bare) counts requests only
    paid = f"{result['payments_per_s']} payments/s, " if "payments_per_s" in result else ""
    print(f"{paid}{result['requests_per_s']} requests/s under py-spy; collapsed stacks in {output}")
    summarize_profile(output)
    return 0


# ---------------------------------------------------------------------------------------------- main


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="moneyrail payments benchmark (see bench/README.md)")
    parser.add_argument("--duration", type=int, default=20, help="measured seconds per target")
    parser.add_argument("--warmup", type=int, default=3, help="unmeasured seconds of load first (0: none)")
    parser.add_argument("--rounds", type=int, default=2, help="each target loaded this many times, in turn")
    parser.add_argument(
        "--clients",
        type=int,
        default=None,
        help=f"concurrent clients (= connections): {CLIENTS}, or {LATENCY_CLIENTS} with a processor latency",
    )
    parser.add_argument(
        "--processor-latency-ms",
        type=float,
        default=0.0,
        help="measure moneyrail at 0 ms and at this mean processor round trip (the sandbox's network model),"
        " in turn, instead of against bare",
    )
    parser.add_argument(
        "--processor-jitter-ms",
        type=float,
        default=None,
        help=f"round trips are drawn within latency ± this ({LATENCY_JITTER_MS:.0f} with a latency)",
    )
    parser.add_argument("--wrk-threads", type=int, default=2, help="wrk threads for the bare reference")
    parser.add_argument("--database", default=BENCH_DATABASE, help="dropped and created for the run")
    parser.add_argument(
        "--quiet-wait",
        type=float,
        default=300,
        help="before each load, wait up to this many seconds for a quiet machine (0: never wait)",
    )
    parser.add_argument("--profile", metavar="PY_SPY", help="only profile moneyrail's run with this py-spy")
    parser.add_argument(
        "--profile-flow",
        choices=("payments", "bare"),
        default="payments",
        help="what --profile loads moneyrail with: payments, or bare's POST /v1/customers (the intake)",
    )
    harness.add_record_options(parser)
    if argv[:1] == ["generate"]:  # the generator, in its own process
        parser.add_argument("command")
        parser.add_argument("--url", required=True)
        parser.add_argument("--flow", choices=("payments", "bare"), required=True)
        parser.add_argument("--secret", required=True)
        parser.add_argument("--run-id", required=True)
    args = parser.parse_args(argv)
    latency = args.processor_latency_ms > 0
    if args.clients is None:
        args.clients = LATENCY_CLIENTS if latency else CLIENTS
    if args.processor_jitter_ms is None:
        args.processor_jitter_ms = LATENCY_JITTER_MS if latency else 0.0
    return args


def bench(args: argparse.Namespace, argv: list[str]) -> int:
    if args.processor_latency_ms > 0:
        return latency_bench(args, argv)
    wrk = harness.ensure_wrk()
    started_at = datetime.now(UTC)
    software = harness.software_info()  # before the servers start: the code they run
    run_id = harness.run_token()
    with harness.run_context(args.database) as run:
        running, env, secret = run.services, run.env, run.secret
        targets = intake.start_targets(run.processes, running, secret, ["moneyrail", "bare"], None)
        smoke = {"moneyrail": smoke_payment(targets["moneyrail"]), "bare": intake.smoke_test(targets["bare"])}
        if args.profile:
            return profile(args.profile, targets["moneyrail"], run_id, args)
        rounds = []
        for number in range(args.rounds):  # each target again, in the same order
            rounds.append(
                {
                    "moneyrail": load(targets["moneyrail"], "payments", secret, f"{run_id}m{number}", args),
                    "bare": load(targets["bare"], "bare", secret, f"{run_id}b{number}", args),
                }
            )
        # the headline is the round with the lower ratio: one lucky round never decides the verdict
        results = dict(
            min(rounds, key=lambda one: one["moneyrail"]["requests_per_s"] / one["bare"]["requests_per_s"])
        )
        wrk_args = argparse.Namespace(
            duration=args.duration,
            warmup=args.warmup,
            connections=args.clients,
            threads=args.wrk_threads,
            database=args.database,
        )
        quiet = harness.wait_until_quiet(args.quiet_wait)
        results["bare_wrk"] = {
            **asdict(intake.load(wrk, targets["bare"], f"{run_id}k", wrk_args)),
            "machine_busy_before_percent": quiet,
        }
        captures_ok = sum(one["moneyrail"]["succeeded_in_all_phases"] for one in rounds) + 1  # and the smoke
        database, problems = check_database(running.database_url, env, captures_ok)
        machine = harness.machine_info(running, wrk)
    finished_at = datetime.now(UTC)

    mr, bare, bare_wrk = results["moneyrail"], results["bare"], results["bare_wrk"]
    for name, result in (("moneyrail", mr), ("bare", bare)):
        if result["failed"]:
            statuses = result["statuses_by_phase"]
            problems.append(f"{name}: {result['failed']} failed requests {statuses}")
    wrk_failed = bare_wrk["non_2xx"] + sum(bare_wrk["socket_errors"].values())
    if wrk_failed:
        problems.append(f"bare under wrk: {wrk_failed} failed requests {bare_wrk['statuses']}")
    warnings = [
        f"{name}: other processes used {result['cpu_percent_of_one_core']['other']}% of one core"
        f" (busiest: {result['other_processes'] or 'short-lived ones'})"
        for name, result in results.items()
        if result["cpu_percent_of_one_core"]["other"] > harness.BACKGROUND_CPU_WARNING
    ]
    compared = ratios(mr, bare, bare_wrk)
    document = {
        "benchmark": "payments",
        "started_at": started_at.isoformat(timespec="seconds"),
        "finished_at": finished_at.isoformat(timespec="seconds"),
        "flow": "POST /v1/payment-intents (2000 eur, manual capture) -> /confirm (card 4242, publishable key)"
        " -> /capture (secret key), an Idempotency-Key on each; bare: POST /v1/customers",
        "settings": {
            "command": " ".join([".venv/bin/python", "bench/payments.py", *argv]),
            "duration_s": args.duration,
            "warmup_s": args.warmup,
            "clients": args.clients,
            "wrk_threads": args.wrk_threads,
            "request_timeout_s": REQUEST_TIMEOUT_S,
            "quiet_wait_s": args.quiet_wait,
            "quiet_below_percent": harness.QUIET_BUSY,
            "rounds": args.rounds,
        },
        "machine": machine,
        "software": software,
        "smoke": smoke,
        "results": results,
        "ratios": compared,
        "rounds": [
            {
                "steps_per_s": {name: one[name]["requests_per_s"] for name in one},
                "steps_per_s_ratio": round(
                    one["moneyrail"]["requests_per_s"] / one["bare"]["requests_per_s"], 3
                ),
                "p99_ms": {step: one["moneyrail"]["steps"][step]["p99_ms"] for step in STEPS},
                "server_cpu_ms_per_step": one["moneyrail"]["server_cpu_ms_per_request"],
                "postgres_cpu_ms_per_step": one["moneyrail"]["postgres_cpu_ms_per_request"],
                "cpu_other_percent": {name: one[name]["cpu_percent_of_one_core"]["other"] for name in one},
            }
            for one in rounds
        ],
        "generator": generator_verdict(results, compared),
        "database_check": database,
        "problems": problems,
        "warnings": warnings,
        "valid": not problems,
    }
    p99 = ", ".join(f"{s} {mr['steps'][s]['p99_ms']} ms" for s in STEPS)
    print(
        f"\nmoneyrail: {mr['payments_per_s']} payments/s, {mr['requests_per_s']} steps/s, p99 {p99}"
        f"\nbare: {bare['requests_per_s']} req/s (generator), {bare_wrk['requests_per_s']} req/s (wrk)"
        f"\nsteps/s ÷ bare req/s: {compared['steps_per_s']}; generator: {document['generator']['verdict']}"
    )
    for problem in problems:
        print(f"INVALID RUN: {problem}")
    for warning in warnings:
        print(f"NOISY MACHINE: {warning}")
    if args.record:
        path = harness.record("payments", document, history_figures(document), args.note)
        print(f"recorded in {path.relative_to(REPO_DIR)}")
    return 1 if problems else 0


def latency_bench(args: argparse.Namespace, argv: list[str]) -> int:
    """moneyrail at 0 ms and at `--processor-latency-ms` (± `--processor-jitter-ms`), two web processes
    on one database loaded in turn, `--rounds` times; the headline is the round with the lower ratio."""
    started_at = datetime.now(UTC)
    software = harness.software_info()
    run_id = harness.run_token()
    latency, jitter = args.processor_latency_ms, args.processor_jitter_ms
    with harness.run_context(args.database) as run:
        running, env, secret = run.services, run.env, run.secret
        network = harness.processor_network_env(latency, jitter)
        servers = {
            "at_0ms": harness.start_moneyrail(run.processes, env, name="moneyrail"),
            "at_latency": harness.start_moneyrail(
                run.processes, {**env, **network}, name="moneyrail-latency"
            ),
        }
        targets = {
            name: Target(server.name, server.base_url, secret, "json", server.process, running.database_url)
            for name, server in servers.items()
        }
        smoke = {name: smoke_payment(target) for name, target in targets.items()}
        if args.profile:  # each web process in turn, under the same load
            for name, target in targets.items():
                print(f"== {name}")
                profile(args.profile, target, f"{run_id}-{name}", args)
            return 0
        rounds = [
            {
                name: load(target, "payments", secret, f"{run_id}-{name}-{number}", args)
                for name, target in targets.items()
            }
            for number in range(args.rounds)
        ]
        results = dict(
            min(rounds, key=lambda one: one["at_latency"]["requests_per_s"] / one["at_0ms"]["requests_per_s"])
        )
        captures_ok = sum(one[name]["succeeded_in_all_phases"] for one in rounds for name in one) + len(smoke)
        database, problems = check_database(running.database_url, run.env, captures_ok)
        machine = harness.machine_info(running)
    finished_at = datetime.now(UTC)

    for name, result in results.items():
        if result["failed"]:
            problems.append(f"{name}: {result['failed']} failed requests {result['statuses_by_phase']}")
    warnings = [
        f"{name}: other processes used {result['cpu_percent_of_one_core']['other']}% of one core"
        f" (busiest: {result['other_processes'] or 'short-lived ones'})"
        for name, result in results.items()
        if result["cpu_percent_of_one_core"]["other"] > harness.BACKGROUND_CPU_WARNING
    ]
    fast, slow = results["at_0ms"], results["at_latency"]
    ratio = round(slow["requests_per_s"] / fast["requests_per_s"], 3)
    document = {
        "benchmark": "payments-latency",
        "mode": "processor_latency",
        "started_at": started_at.isoformat(timespec="seconds"),
        "finished_at": finished_at.isoformat(timespec="seconds"),
        "flow": "POST /v1/payment-intents (2000 eur, manual capture) -> /confirm (card 4242, publishable key)"
        " -> /capture (secret key), an Idempotency-Key on each; the same flow on a web process whose sandbox"
        " processor is reached over the network model",
        "target": f"steps/s at {latency:g} ms >= {LATENCY_TARGET} x steps/s at 0 ms",
        "settings": {
            "command": " ".join([".venv/bin/python", "bench/payments.py", *argv]),
            "processor_latency_ms": latency,
            "processor_jitter_ms": jitter,
            "processor_network_env": network,
            "duration_s": args.duration,
            "warmup_s": args.warmup,
            "clients": args.clients,
            "request_timeout_s": REQUEST_TIMEOUT_S,
            "quiet_wait_s": args.quiet_wait,
            "rounds": args.rounds,
        },
        "machine": machine,
        "software": software,
        "smoke": smoke,
        "results": results,
        "ratios": {
            "steps_per_s": ratio,
            "payments_per_s": round(slow["payments_per_s"] / max(fast["payments_per_s"], 0.001), 3),
            "p99": {
                step: round(slow["steps"][step]["p99_ms"] / fast["steps"][step]["p99_ms"], 2)
                for step in STEPS
            },
        },
        "rounds": [
            {
                "steps_per_s": {name: one[name]["requests_per_s"] for name in one},
                "ratio": round(one["at_latency"]["requests_per_s"] / one["at_0ms"]["requests_per_s"], 3),
                "p99_ms": {
                    name: {step: one[name]["steps"][step]["p99_ms"] for step in STEPS} for name in one
                },
                "postgres_connections_in_use": {
                    name: {
                        "mean": one[name]["postgres_connections"].get("mean", {}).get("in_use"),
                        "max": one[name]["postgres_connections"].get("max", {}).get("in_use"),
                    }
                    for name in one
                },
                "cpu_other_percent": {name: one[name]["cpu_percent_of_one_core"]["other"] for name in one},
                # a round's ratio moves with the CPU a step costs, or with the CPU the machine gave
                "cpu_ms_per_step": {
                    name: {
                        "server": one[name]["server_cpu_ms_per_request"],
                        "postgres": one[name]["postgres_cpu_ms_per_request"],
                    }
                    for name in one
                },
                "machine_cpu_busy_percent": {name: one[name]["machine_cpu_busy_percent"] for name in one},
                "machine_cpu_stolen_percent": {name: one[name]["machine_cpu_stolen_percent"] for name in one},
            }
            for one in rounds
        ],
        "database_check": database,
        "problems": problems,
        "warnings": warnings,
        "valid": not problems,
        "met": not problems and ratio >= LATENCY_TARGET,
    }
    for name, result in results.items():
        p99 = ", ".join(f"{step} {result['steps'][step]['p99_ms']} ms" for step in STEPS)
        in_use = result["postgres_connections"].get("mean", {})
        print(
            f"\n{name}: {result['payments_per_s']} payments/s, {result['requests_per_s']} steps/s, p99 {p99};"
            f" connections in use {in_use.get('in_use')} on average ({in_use.get('idle_in_transaction')} idle"
            " in a transaction)"
        )
    print(
        f"steps/s at {latency:g} ms ÷ at 0 ms: {ratio} (target {LATENCY_TARGET}):"
        f" {'met' if document['met'] else 'MISSED'}; by round {[one['ratio'] for one in document['rounds']]}"
    )
    for number, one in enumerate(document["rounds"], start=1):
        cpu, stolen = one["cpu_ms_per_step"], one["machine_cpu_stolen_percent"]
        print(
            f"round {number}: steps/s {one['steps_per_s']}; CPU ms a step (server, postgres)"
            f" {[(cpu[name]['server'], cpu[name]['postgres']) for name in cpu]}; stolen % {stolen}"
        )
    for problem in problems:
        print(f"INVALID RUN: {problem}")
    for warning in warnings:
        print(f"NOISY MACHINE: {warning}")
    if args.record:
        path = harness.record("payments-latency", document, latency_history_figures(document), args.note)
        print(f"recorded in {path.relative_to(REPO_DIR)}")
    return 1 if problems else 0 if document["met"] else 2


def latency_history_figures(document: dict[str, Any]) -> dict[str, Any]:
    """A latency run's history row (results/payments-latency-history.csv)."""
    settings, results = document["settings"], document["results"]
    fast, slow = results["at_0ms"], results["at_latency"]
    in_use = slow["postgres_connections"]
    return {
        "clients": settings["clients"],
        "processor_latency_ms": settings["processor_latency_ms"],
        "processor_jitter_ms": settings["processor_jitter_ms"],
        "steps_per_s_at_0ms": fast["requests_per_s"],
        "steps_per_s_at_latency": slow["requests_per_s"],
        "latency_ratio": document["ratios"]["steps_per_s"],
        "latency_ratio_by_round": [one["ratio"] for one in document["rounds"]],
        **{f"p99_{step}_ms_at_0ms": fast["steps"][step]["p99_ms"] for step in STEPS},
        **{f"p99_{step}_ms_at_latency": slow["steps"][step]["p99_ms"] for step in STEPS},
        "connections_in_use_at_latency_mean": in_use.get("mean", {}).get("in_use"),
        "connections_in_use_at_latency_max": in_use.get("max", {}).get("in_use"),
        "connections_in_use_at_0ms_mean": fast["postgres_connections"].get("mean", {}).get("in_use"),
        "met": document["met"],
        "valid": document["valid"],
    }


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if argv[:1] == ["generate"]:
        return generator_main(args)
    try:
        return bench(args, argv)
    except KeyboardInterrupt:
        print("interrupted: every started process was stopped", file=sys.stderr)
        return 130
    except BenchError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
