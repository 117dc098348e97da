"""The intake benchmark: `POST /v1/customers` with idempotency keys, moneyrail against two references.

    .venv/bin/python bench/intake.py [--duration 15] [--connections 64]

In one run, on one machine, the script sets up a fresh database, migrates it, creates an installation
and a sandbox key, starts three servers on free ports and loads each in turn with the same wrk script
(bench/intake.lua: a unique Idempotency-Key and a distinct customer per request):

- moneyrail: `moneyrail web` (one uvicorn process), the real intake path;
- bare: bench/bare_app.py, FastAPI + asyncpg doing one INSERT, the floor of any durable endpoint;
- localstripe: the fake Stripe server from PyPI (form-encoded), in its own virtualenv under bench/.work/.

It records requests/s, p50, p99, status counts and CPU use of each, and moneyrail's ratios to the two
references, in bench/results/intake-<UTC date>.json and bench/results/README.md. Targets: moneyrail's
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
import platform
import re
import resource
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from types import FrameType
from typing import IO, Any, Literal, NamedTuple

import asyncpg
from cryptography.fernet import Fernet
from sqlalchemy.engine import make_url

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
WORK_DIR = BENCH_DIR / ".work"
LOG_DIR = WORK_DIR / "logs"
RESULTS_DIR = BENCH_DIR / "results"
LUA_SCRIPT = BENCH_DIR / "intake.lua"
VENV_BIN = Path(sys.executable).parent
MONEYRAIL = VENV_BIN / "moneyrail"

LOCALSTRIPE_VERSION = "1.15.10"
LOCALSTRIPE_VENV = WORK_DIR / "localstripe-venv"
LOCALSTRIPE_KEY = "sk_test_12345"
# localstripe pickles its whole store to this fixed path after every write (see bench/README.md).
LOCALSTRIPE_PICKLE = Path("/tmp/localstripe.pickle")

BENCH_DATABASE = "moneyrail_bench"
WRK_TIMEOUT = "30s"  # far above any healthy latency: a slow answer is measured, not dropped
STARTUP_TIMEOUT_S = 60.0
BARE_RATIO_TARGET = 0.5
LOCALSTRIPE_RATIO_TARGET = 1.0
BACKGROUND_CPU_WARNING = 15.0  # % of one core used by processes outside the benchmark

BodyKind = Literal["json", "form"]


class BenchError(RuntimeError):
    pass


# ---------------------------------------------------------------------------------------------- processes


class Processes:
    """Every long-running process the run starts, each in its own session, stopped in reverse order."""

    def __init__(self) -> None:
        self._running: list[tuple[str, subprocess.Popen[bytes], IO[bytes]]] = []

    def start(self, name: str, argv: list[str], env: Mapping[str, str]) -> subprocess.Popen[bytes]:
        LOG_DIR.mkdir(parents=True, exist_ok=True)
        log = (LOG_DIR / f"{name}.log").open("wb")
        process = subprocess.Popen(
            argv,
            env=dict(env),
            cwd=REPO_DIR,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C reaches this script only; it stops the servers itself
        )
        self._running.append((name, process, log))
        return process

    def stop_all(self) -> None:
        while self._running:
            name, process, log = self._running.pop()
            stop_process(process)
            log.close()
            print(f"stopped {name} (pid {process.pid})", file=sys.stderr)


def stop_process(process: subprocess.Popen[bytes], grace_s: float = 10.0) -> None:
    """SIGTERM to the process group the process leads, SIGKILL after the grace period."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if process.poll() is not None:
            return
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            continue


def log_tail(name: str, lines: int = 20) -> str:
    path = LOG_DIR / f"{name}.log"
    if not path.exists():
        return ""
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def _raise_keyboard_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


# ---------------------------------------------------------------------------------------------- tools


def run(argv: list[str], env: Mapping[str, str] | None = None) -> str:
    completed = subprocess.run(argv, env=None if env is None else dict(env), capture_output=True, text=True)
    if completed.returncode != 0:
        raise BenchError(f"{' '.join(argv[:3])} failed ({completed.returncode}):\n{completed.stderr[-2000:]}")
    return completed.stdout


def ensure_wrk() -> str:
    """wrk from Debian's package, installed when missing (running apt-get update if the first try fails)."""
    found = shutil.which("wrk")
    if found:
        return found
    print("wrk is missing: apt-get install -y wrk", file=sys.stderr)
    install = ["apt-get", "install", "-y", "--no-install-recommends", "wrk"]
    if subprocess.run(install, stdout=subprocess.DEVNULL).returncode != 0:
        subprocess.run(["apt-get", "update"], stdout=subprocess.DEVNULL, check=True)
        subprocess.run(install, stdout=subprocess.DEVNULL, check=True)
    found = shutil.which("wrk")
    if not found:
        raise BenchError("wrk is still missing after apt-get install")
    return found


def wrk_version(wrk: str) -> str:
    completed = subprocess.run([wrk, "--version"], capture_output=True, text=True)
    return (completed.stdout + completed.stderr).splitlines()[0].split(" Copyright")[0].strip()


def ensure_localstripe() -> Path:
    """localstripe (pinned) in its own virtualenv: it must not share moneyrail's dependencies."""
    python = LOCALSTRIPE_VENV / "bin" / "python"
    if not python.exists():
        print(f"creating {LOCALSTRIPE_VENV.relative_to(REPO_DIR)}", file=sys.stderr)
        run([sys.executable, "-m", "venv", "--clear", str(LOCALSTRIPE_VENV)])
    if installed_version(python, "localstripe") != LOCALSTRIPE_VERSION:
        print(f"pip install localstripe=={LOCALSTRIPE_VERSION}", file=sys.stderr)
        run([str(python), "-m", "pip", "install", "--quiet", f"localstripe=={LOCALSTRIPE_VERSION}"])
    return LOCALSTRIPE_VENV / "bin" / "localstripe"


def installed_version(python: Path, package: str) -> str | None:
    code = f"import importlib.metadata as m; print(m.version({package!r}))"
    completed = subprocess.run([str(python), "-c", code], capture_output=True, text=True)
    return completed.stdout.strip() if completed.returncode == 0 else None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def parse_cli_json(output: str) -> dict[str, Any]:
    """The JSON object a `--json` CLI command prints (skipping any log line before it)."""
    start = output.find("{")
    if start < 0:
        raise BenchError(f"no JSON in CLI output: {output[:500]}")
    parsed: dict[str, Any] = json.JSONDecoder().raw_decode(output[start:])[0]
    return parsed


# ---------------------------------------------------------------------------------------------- services


@dataclass
class Services:
    database_url: str
    redis_url: str
    postgres_source: str
    redis_source: str
    postgres: dict[str, str] = field(default_factory=dict)


@contextmanager
def services(database: str) -> Iterator[Services]:
    """PostgreSQL and Redis: the environment's when set, else the embedded ones; a fresh database."""
    from moneyrail.embedded import EmbeddedPostgres, EmbeddedRedis  # only when running

    with ExitStack() as stack:
        server_url = os.environ.get("DATABASE_URL")
        postgres_source = "DATABASE_URL"
        if not server_url:
            print("DATABASE_URL is not set: starting the embedded PostgreSQL", file=sys.stderr)
            embedded_postgres = EmbeddedPostgres(WORK_DIR / "embedded-postgres")
            stack.callback(embedded_postgres.stop)
            server_url = embedded_postgres.start(database="postgres")
            postgres_source = "embedded"
        redis_url = os.environ.get("REDIS_URL")
        redis_source = "REDIS_URL"
        if not redis_url:
            print("REDIS_URL is not set: starting the embedded Redis", file=sys.stderr)
            embedded_redis = EmbeddedRedis(WORK_DIR / "embedded-redis")
            stack.callback(embedded_redis.stop)
            redis_url = embedded_redis.start()
            redis_source = "embedded"
        database_url, postgres = asyncio.run(recreate_database(server_url, database))
        yield Services(database_url, redis_url, postgres_source, redis_source, postgres)


def database_url_for(url: str, database: str) -> str:
    return make_url(url).set(drivername="postgresql", database=database).render_as_string(hide_password=False)


async def recreate_database(server_url: str, database: str) -> tuple[str, dict[str, str]]:
    if not database.startswith(BENCH_DATABASE):
        raise BenchError(
            f"refusing to drop {database!r}: the bench database's name starts with {BENCH_DATABASE}"
        )
    connection = await asyncpg.connect(database_url_for(server_url, "postgres"))
    try:
        await connection.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        await connection.execute(f'CREATE DATABASE "{database}"')
        postgres = {
            name: str(await connection.fetchval(f"SHOW {name}"))
            for name in ("server_version", "max_connections", "shared_buffers", "synchronous_commit", "fsync")
        }
    finally:
        await connection.close()
    return database_url_for(server_url, database), postgres


async def checkpoint(database_url: str) -> None:
    """Flush PostgreSQL's dirty pages before a run, so no run pays for the previous one's writes."""
    connection = await asyncpg.connect(database_url)
    try:
        await connection.execute("CHECKPOINT")
    except asyncpg.PostgresError as error:  # not a superuser: run without it
        print(f"CHECKPOINT skipped: {error}", file=sys.stderr)
    finally:
        await connection.close()


async def sessions_opened(database_url: str) -> int | None:
    """Sessions ever opened to the database (PostgreSQL 14+), this one's included."""
    connection = await asyncpg.connect(database_url)
    try:
        value = await connection.fetchval(
            "SELECT sessions FROM pg_stat_database WHERE datname = current_database()"
        )
    except asyncpg.PostgresError:
        return None
    finally:
        await connection.close()
    return None if value is None else int(value)


def moneyrail_key(env: Mapping[str, str]) -> str:
    run([str(MONEYRAIL), "migrate"], env)
    installation = parse_cli_json(
        run([str(MONEYRAIL), "installations", "create", "--name", "bench", "--json"], env)
    )
    key = parse_cli_json(
        run(
            [
                str(MONEYRAIL),
                *("keys", "create", "--installation", installation["id"]),
                *("--env", "sandbox", "--scope", "*", "--json"),
            ],
            env,
        )
    )
    secret: str = key["secret"]
    return secret


# ---------------------------------------------------------------------------------------------- HTTP


@dataclass
class Target:
    name: str
    base_url: str
    secret: str
    body: BodyKind
    process: subprocess.Popen[bytes]
    database_url: str | None = None  # set for targets that write to PostgreSQL


def http(
    method: str, url: str, *, body: bytes | None = None, headers: Mapping[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, data=body, method=method, headers=dict(headers or {}))
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers.items()), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers.items()), error.read()


def wait_until_up(name: str, process: subprocess.Popen[bytes], probe: str) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise BenchError(f"{name} exited with {process.returncode}:\n{log_tail(name)}")
        try:
            status, _, _ = http("GET", probe)
            if status < 500:  # localstripe has no health route: any answer means it listens
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise BenchError(f"{name} did not answer {probe} within {STARTUP_TIMEOUT_S:.0f} s:\n{log_tail(name)}")


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


# ---------------------------------------------------------------------------------------------- CPU


def machine_cpu_ticks() -> tuple[int, int, int]:
    """(busy, interrupts, total) jiffies of all CPUs, from /proc/stat.

    Interrupt time (mostly the loopback network's softirq) is in no process's CPU time.
    """
    user, nice, system, idle, iowait, irq, softirq, steal = (
        int(value) for value in Path("/proc/stat").read_text().splitlines()[0].split()[1:9]
    )
    # Guest time is already in user; steal (the hypervisor's) is neither ours nor idle.
    return (
        user + nice + system + irq + softirq,
        irq + softirq,
        user + nice + system + idle + iowait + irq + softirq + steal,
    )


class Proc(NamedTuple):
    parent: int
    name: str
    ticks: int  # user + system jiffies of the process
    reaped_ticks: int  # those of its children that exited and were waited for


def process_table() -> dict[int, Proc]:
    """Every process, from /proc/<pid>/stat."""
    table: dict[int, Proc] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        rest = stat[stat.rindex(")") + 2 :].split()
        table[int(entry.name)] = Proc(
            int(rest[1]), name, int(rest[11]) + int(rest[12]), int(rest[13]) + int(rest[14])
        )
    return table


def postgres_members(table: Mapping[int, Proc], database: str) -> set[int]:
    """The server's own processes (WAL writer, checkpointer...) and the backends of `database`.

    Backends of other databases (another benchmark, a test suite) are someone else's load.
    """
    members: set[int] = set()
    for pid, process in table.items():
        if process.name != "postgres":
            continue
        try:
            title = (
                (Path("/proc") / str(pid) / "cmdline")
                .read_bytes()
                .replace(b"\0", b" ")
                .decode(errors="replace")
            )
        except OSError:
            continue
        is_backend = "(" in title or "[local]" in title  # "user database host(port) state"
        if not is_backend or database in title.split():
            members.add(pid)
    return members


def cpu_delta(before: Mapping[int, Proc], after: Mapping[int, Proc]) -> dict[int, int]:
    """CPU jiffies each process alive at the end used since the start (one gone by then is missed)."""
    return {pid: now.ticks - (before[pid].ticks if pid in before else 0) for pid, now in after.items()}


def postmasters_reaped(before: Mapping[int, Proc], after: Mapping[int, Proc]) -> int:
    """CPU jiffies of PostgreSQL backends that exited during the run (closed connections).

    The postmaster waits for its backends, so their time is added to its children's time.
    """
    return sum(
        now.reaped_ticks - (before[pid].reaped_ticks if pid in before else 0)
        for pid, now in after.items()
        if now.name == "postgres" and (now.parent not in after or after[now.parent].name != "postgres")
    )


def tree_members(table: Mapping[int, Proc], root: int) -> set[int]:
    members = {root}
    grew = True
    while grew:
        grew = False
        for pid, process in table.items():
            if process.parent in members and pid not in members:
                members.add(pid)
                grew = True
    return members


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
    (LOG_DIR / f"wrk-{target.name}-{run_id}.txt").write_text(completed.stdout + completed.stderr)
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
        asyncio.run(checkpoint(target.database_url))
        sessions_before = asyncio.run(sessions_opened(target.database_url))
    print(f"{target.name}: {args.duration} s at {args.connections} connections", file=sys.stderr)

    clock_ticks = os.sysconf("SC_CLK_TCK")
    before_table, before_machine = process_table(), machine_cpu_ticks()
    before_wrk = resource.getrusage(resource.RUSAGE_CHILDREN)
    report = run_wrk(wrk, target, run_id, args, args.duration)
    after_wrk = resource.getrusage(resource.RUSAGE_CHILDREN)
    after_table, after_machine = process_table(), machine_cpu_ticks()
    new_sessions: int | None = None
    if target.database_url is not None and sessions_before is not None:
        time.sleep(1.0)  # backends publish their statistics at most once a second
        sessions_after = asyncio.run(sessions_opened(target.database_url))
        if sessions_after is not None:
            new_sessions = max(0, sessions_after - sessions_before - 1)  # less the counting connection

    seconds = float(report["duration_us"]) / 1e6

    def percent(ticks: float) -> float:
        return round(100.0 * ticks / clock_ticks / seconds, 1)

    wrk_cpu_s = (after_wrk.ru_utime + after_wrk.ru_stime) - (before_wrk.ru_utime + before_wrk.ru_stime)
    used = cpu_delta(before_table, after_table)
    server = tree_members(after_table, target.process.pid)
    postgres = postgres_members(after_table, args.database)
    cpu = {
        "server": percent(sum(used[pid] for pid in server)),
        "postgres": percent(
            sum(used[pid] for pid in postgres) + postmasters_reaped(before_table, after_table)
        ),
        "wrk": round(100.0 * wrk_cpu_s / seconds, 1),
    }
    busy, interrupts, total = (
        after - before for after, before in zip(after_machine, before_machine, strict=True)
    )
    cpu["interrupts"] = percent(interrupts)
    # Whatever else ran on the machine meanwhile (another test suite, a build): it skews the numbers.
    cpu["other"] = max(0.0, round(percent(busy) - sum(cpu.values()), 1))
    outside = sorted(
        (
            (used[pid], f"{after_table[pid].name}[{pid}]")
            for pid in used.keys() - server - postgres - {os.getpid()}
        ),
        reverse=True,
    )
    others = {label: percent(ticks) for ticks, label in outside[:3] if percent(ticks) >= 1.0}

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
        machine_cpu_busy_percent=round(100.0 * busy / total, 1) if total else 0.0,
        other_processes=others,
        postgres_sessions_opened=new_sessions,
    )


# ---------------------------------------------------------------------------------------------- report


def ratios(mine: LoadResult, other: LoadResult) -> dict[str, float]:
    return {
        "requests_per_s": round(mine.requests_per_s / other.requests_per_s, 3),
        "p50": round(mine.p50_ms / other.p50_ms, 3),
        "p99": round(mine.p99_ms / other.p99_ms, 3),
    }


def machine_info(wrk: str, services: Services) -> dict[str, Any]:
    cpu_model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor() or "unknown",
    )
    memory = re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text())
    memory_kib = int(memory.group(1)) if memory else 0
    return {
        "cpu_count": os.cpu_count(),
        "cpu_model": cpu_model,
        "memory_gib": round(memory_kib / 1024 / 1024, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "postgresql": services.postgres.get("server_version", "unknown"),
        "postgresql_source": services.postgres_source,
        "postgresql_settings": {k: v for k, v in services.postgres.items() if k != "server_version"},
        "redis_source": services.redis_source,
        "wrk": wrk_version(wrk),
    }


def software_info() -> dict[str, Any]:
    def version(package: str) -> str:
        try:
            return metadata.version(package)
        except metadata.PackageNotFoundError:
            return "missing"

    git_env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}  # read-only: never refresh the index
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_DIR, capture_output=True, text=True)
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no", "--", "src", "workers"],
        cwd=REPO_DIR,
        capture_output=True,
        text=True,
        env=git_env,
    )
    return {
        "moneyrail": version("moneyrail"),
        "git_commit": commit.stdout.strip() or None,
        "src_modified": bool(status.stdout.strip()) if status.returncode == 0 else None,
        "localstripe": LOCALSTRIPE_VERSION,
        **{
            package: version(package) for package in ("fastapi", "uvicorn", "asyncpg", "sqlalchemy", "uvloop")
        },
    }


def print_table(results: Mapping[str, LoadResult]) -> None:
    header = f"{'target':<12} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'non-2xx':>8} {'sock err':>8}  cpu %"
    print(header)
    print("-" * len(header))
    for name, result in results.items():
        cpu = " ".join(f"{k}={v:g}" for k, v in result.cpu_percent_of_one_core.items())
        print(
            f"{name:<12} {result.requests_per_s:>9.1f} {result.p50_ms:>8.2f} {result.p99_ms:>8.2f}"
            f" {result.non_2xx:>8} {sum(result.socket_errors.values()):>8}  {cpu}"
        )


def write_results(document: dict[str, Any]) -> Path:
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"intake-{document['started_at'][:10]}.json"
    path.write_text(json.dumps(document, indent=2) + "\n")
    readme = RESULTS_DIR / "README.md"
    existing = readme.read_text() if readme.exists() else RESULTS_README_HEAD
    readme.write_text(replace_section(existing, results_readme(document, path.name)))
    return path


RESULTS_README_HEAD = "# Benchmark results\n\nEach benchmark of `bench/` keeps its own section here.\n"
SECTION_BEGIN = "<!-- intake:begin (written by bench/intake.py) -->"
SECTION_END = "<!-- intake:end -->"


def replace_section(page: str, section: str) -> str:
    """The page with this benchmark's section replaced (or appended): other benchmarks' text is kept."""
    block = f"{SECTION_BEGIN}\n{section.strip()}\n{SECTION_END}\n"
    begin, end = page.find(SECTION_BEGIN), page.find(SECTION_END)
    if begin >= 0 and end > begin:
        rest = page[end + len(SECTION_END) :].lstrip("\n")
        return page[:begin] + block + ("\n" + rest if rest else "")
    if page.startswith("# Intake benchmark results"):  # the page of an earlier version: all ours
        page = RESULTS_README_HEAD
    return page.rstrip("\n") + "\n\n" + block


def results_readme(latest: dict[str, Any], latest_name: str) -> str:
    machine, settings = latest["machine"], latest["settings"]
    lines = [
        "## Intake: `POST /v1/customers` with idempotency keys",
        "",
        "Written by `bench/intake.py` (see `bench/README.md`); each run rewrites this section and its",
        "`intake-<UTC date>.json`. Latency in milliseconds, CPU in % of one core.",
        "",
        f"### Latest run: {latest['started_at']} (`{latest_name}`)",
        "",
        f"- Machine: {machine['cpu_count']} CPUs ({machine['cpu_model']}), {machine['memory_gib']} GiB,"
        f" Linux {machine['kernel']}",
        f"- Python {machine['python']}, PostgreSQL {machine['postgresql']} ({machine['postgresql_source']}),"
        f" Redis ({machine['redis_source']}), {machine['wrk']}",
        f"- moneyrail {latest['software']['moneyrail']} at `{(latest['software']['git_commit'] or '?')[:12]}`"
        + (" with local changes in src/" if latest["software"]["src_modified"] else ""),
        f"- Load: wrk -t{settings['threads']} -c{settings['connections']} -d{settings['duration_s']}s"
        f" after a {settings['warmup_s']} s warm-up, `POST /v1/customers`, a new Idempotency-Key per request",
        "",
        "| target | req/s | p50 | p90 | p99 | max | non-2xx | socket errors | CPU server | CPU postgres"
        " | CPU wrk | CPU interrupts | CPU other | machine busy | new PG connections |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, result in latest["results"].items():
        cpu = result["cpu_percent_of_one_core"]
        sessions = result.get("postgres_sessions_opened")
        lines.append(
            f"| {name} | {result['requests_per_s']:.1f} | {result['p50_ms']:.2f} | {result['p90_ms']:.2f}"
            f" | {result['p99_ms']:.2f} | {result['max_ms']:.1f} | {result['non_2xx']}"
            f" | {sum(result['socket_errors'].values())} | {cpu['server']} | {cpu['postgres']}"
            f" | {cpu['wrk']} | {cpu['interrupts']} | {cpu['other']}"
            f" | {result['machine_cpu_busy_percent']}% | {'-' if sessions is None else sessions} |"
        )
    lines += ["", "| ratio | req/s | p50 | p99 |", "|---|---:|---:|---:|"]
    for name, ratio in latest["ratios"].items():
        lines.append(f"| {name} | {ratio['requests_per_s']:.3f} | {ratio['p50']:.3f} | {ratio['p99']:.3f} |")
    lines += ["", "| target | wanted | measured | met |", "|---|---:|---:|---|"]
    for target in latest["targets"]:
        lines.append(
            f"| {target['name']} | ≥ {target['threshold']:.2f} | {target['measured']:.3f}"
            f" | {'yes' if target['met'] else '**no**'} |"
        )
    lines.append("")
    if latest["problems"]:
        lines += ["**Not a valid measurement:**", "", *(f"- {problem}" for problem in latest["problems"]), ""]
    else:
        lines += ["Every request of every target answered 2xx.", ""]
    if latest.get("warnings"):
        lines += ["**Noisy machine** (other processes competed for the CPUs):", ""]
        lines += [*(f"- {warning}" for warning in latest["warnings"]), ""]
    lines += history_table()
    return "\n".join(lines)


def history_table() -> list[str]:
    lines = [
        "### All recorded intake runs",
        "",
        "| run | CPUs | moneyrail req/s | bare req/s | localstripe req/s | ÷ bare | ÷ localstripe | valid |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for path in sorted(RESULTS_DIR.glob("intake-*.json"), reverse=True):
        run = json.loads(path.read_text())
        rps = {name: result["requests_per_s"] for name, result in run["results"].items()}
        lines.append(
            f"| [{run['started_at']}]({path.name}) | {run['machine']['cpu_count']}"
            f" | {rps.get('moneyrail', 0):.1f} | {rps.get('bare', 0):.1f} | {rps.get('localstripe', 0):.1f}"
            f" | {run['ratios']['moneyrail/bare']['requests_per_s']:.3f}"
            f" | {run['ratios']['moneyrail/localstripe']['requests_per_s']:.3f}"
            f" | {'yes' if not run['problems'] else 'no'} |"
        )
    return [*lines, ""]


# ---------------------------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="moneyrail intake benchmark (see bench/README.md)")
    parser.add_argument("--duration", type=int, default=15, help="seconds of measured load per target")
    parser.add_argument("--connections", type=int, default=64, help="concurrent connections")
    parser.add_argument("--threads", type=int, default=2, help="wrk threads")
    parser.add_argument("--warmup", type=int, default=3, help="seconds of unmeasured load first (0: none)")
    parser.add_argument("--database", default=BENCH_DATABASE, help="database dropped and created for the run")
    parser.add_argument(
        "--targets",
        default="moneyrail,bare,localstripe",
        help="comma-separated subset, in load order (ratios need all three)",
    )
    return parser.parse_args(argv)


def start_targets(
    processes: Processes, services: Services, secret: str, names: list[str], localstripe: Path | None
) -> dict[str, Target]:
    env = {
        **os.environ,
        "DATABASE_URL": services.database_url,
        "REDIS_URL": services.redis_url,
        "MONEYRAIL_HOST": "127.0.0.1",
        "MONEYRAIL_LOG_LEVEL": "WARNING",
        # secrets at rest need a key; the per-key limit stays on (its Redis call is part of the cost)
        # but far above what the load reaches
        "MONEYRAIL_SECRET_KEYS": os.environ.get("MONEYRAIL_SECRET_KEYS") or Fernet.generate_key().decode(),
        "MONEYRAIL_RATE_LIMIT_PER_SECOND": "1000000",
    }
    targets: dict[str, Target] = {}
    for name in names:
        port = free_port()
        base_url = f"http://127.0.0.1:{port}"
        if name == "moneyrail":
            process = processes.start(name, [str(MONEYRAIL), "web"], {**env, "MONEYRAIL_PORT": str(port)})
            wait_until_up(name, process, f"{base_url}/healthz")
            targets[name] = Target(name, base_url, secret, "json", process, services.database_url)
        elif name == "bare":
            argv = [sys.executable, str(BENCH_DIR / "bare_app.py"), "--port", str(port)]
            process = processes.start(name, argv, env)
            wait_until_up(name, process, f"{base_url}/healthz")
            targets[name] = Target(name, base_url, secret, "json", process, services.database_url)
        elif name == "localstripe" and localstripe is not None:
            argv = [str(localstripe), "--port", str(port), "--from-scratch"]
            process = processes.start(name, argv, os.environ)
            wait_until_up(name, process, f"{base_url}/v1/customers")
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
    wrk = ensure_wrk()
    localstripe = ensure_localstripe() if "localstripe" in names else None
    started_at = datetime.now(UTC)
    software = software_info()  # before the servers start: the code they run
    run_id = started_at.strftime("%H%M%S") + secrets.token_hex(2)
    processes = Processes()
    with ExitStack() as stack:  # unwinds in reverse: servers, then PostgreSQL and Redis, then the pickle
        if "localstripe" in names:
            stack.enter_context(localstripe_pickle_kept())
        running = stack.enter_context(services(args.database))
        stack.callback(processes.stop_all)
        env = {**os.environ, "DATABASE_URL": running.database_url, "REDIS_URL": running.redis_url}
        secret = moneyrail_key(env)
        targets = start_targets(processes, running, secret, names, localstripe)
        smoke = {name: smoke_test(target) for name, target in targets.items()}
        results = {name: load(wrk, target, run_id, args) for name, target in targets.items()}
        machine = machine_info(wrk, running)
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
        if result.cpu_percent_of_one_core["other"] > BACKGROUND_CPU_WARNING
    ]
    for warning in warnings:
        print(f"NOISY MACHINE: {warning}")

    if len(compared) < len(pairs):
        print("\n(not all three targets were loaded: nothing written to bench/results/)")
    else:
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
                "wrk_timeout": WRK_TIMEOUT,
            },
            "machine": machine,
            "software": software,
            "smoke": smoke,
            "results": {name: asdict(result) for name, result in results.items()},
            "ratios": compared,
            "targets": targets_met,
            "problems": problems,
            "warnings": warnings,
            "valid": not problems,
        }
        print(f"\nwrote {write_results(document).relative_to(REPO_DIR)} and bench/results/README.md")
    if problems:
        return 1
    return 0 if all(target["met"] for target in targets_met) else 2


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
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
