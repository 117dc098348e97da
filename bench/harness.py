"""The machinery every benchmark of bench/ shares, so that each script says only what it measures.

- where things live (`WORK_DIR`, `LOG_DIR`, `RESULTS_DIR`) and the `moneyrail` command of this venv;
- PostgreSQL and Redis: those of DATABASE_URL / REDIS_URL, else the embedded ones, and a fresh
  database per run (`services`, `recreate_database`, `checkpoint`, `sessions_opened`);
- processes on free ports, each in its own session, stopped in reverse order also on Ctrl-C and
  SIGTERM (`Processes`, `start_moneyrail`, `start_bare`, `run_context`);
- load: `ensure_wrk`, `wait_until_quiet` (a shared machine's other load is the usual noise);
- the sandbox processor's network model for a moneyrail process (`processor_network_env`), and the
  database connections in use meanwhile (`ConnectionSampler`, sampling pg_stat_activity);
- CPU accounting from /proc: per process tree, PostgreSQL's processes of one database, interrupts and
  the rest of the machine (`CpuWindow`);
- the run's description (`machine_info`, `software_info`) and its results (`record`: the latest JSON
  and a row of the benchmark's history table).
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import os
import platform
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from types import FrameType
from typing import IO, Any, NamedTuple

import asyncpg
from cryptography.fernet import Fernet
from sqlalchemy.engine import make_url

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
WORK_DIR = BENCH_DIR / ".work"
LOG_DIR = WORK_DIR / "logs"
RESULTS_DIR = BENCH_DIR / "results"
VENV_BIN = Path(sys.executable).parent
MONEYRAIL = VENV_BIN / "moneyrail"

BENCH_DATABASE = "moneyrail_bench"  # every bench database's name starts with it: nothing else is dropped
STARTUP_TIMEOUT_S = 60.0
BACKGROUND_CPU_WARNING = 15.0  # % of one core used by processes outside the benchmark
QUIET_BUSY = 10.0  # % of all CPUs: the machine is quiet enough to start a load


class BenchError(RuntimeError):
    pass


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


async def checkpoint(database_url: str, wait_seconds: float = 60.0, *, vacuum: bool = False) -> None:
    """Flush PostgreSQL's dirty pages before a run, so no run pays for the previous one's writes.

    `vacuum`: a `VACUUM (ANALYZE)` of the database first, the stand-in for the autovacuum a service
    runs. The machine's server runs with autovacuum off (CI's configuration): without it, each load of a
    run meets the dead rows of all the loads before it, and the later ones measure that.

    On a shared server out of connections (others' test suites), wait for a free one rather than end
    the run: the previous target's pool has just been let go.
    """
    deadline = time.monotonic() + wait_seconds
    while True:
        try:
            connection = await asyncpg.connect(database_url)
            break
        except asyncpg.TooManyConnectionsError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(1.0)
    try:
        if vacuum:
            await connection.execute("VACUUM (ANALYZE)")
        await connection.execute("CHECKPOINT")
    except asyncpg.PostgresError as error:  # not a superuser: run without it
        print(f"VACUUM or CHECKPOINT skipped: {error}", file=sys.stderr)
    finally:
        await connection.close()


async def sessions_opened(database_url: str) -> int | None:
    """Sessions ever opened to the database (PostgreSQL 14+), this one's included; None when it cannot
    be asked (a shared server out of connections must not end the run: the figure is then missing)."""
    try:
        connection = await asyncpg.connect(database_url)
    except (OSError, asyncpg.PostgresError) as error:
        print(f"sessions not counted: {error}", file=sys.stderr)
        return None
    try:
        value = await connection.fetchval(
            "SELECT sessions FROM pg_stat_database WHERE datname = current_database()"
        )
    except asyncpg.PostgresError:
        return None
    finally:
        await connection.close()
    return None if value is None else int(value)


def sessions_opened_since(database_url: str, before: int) -> int | None:
    """New PostgreSQL sessions since `before` (a steady pool opens none), less the counting one."""
    time.sleep(1.0)  # backends publish their statistics at most once a second
    after = asyncio.run(sessions_opened(database_url))
    return None if after is None else max(0, after - before - 1)


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


def machine_cpu_ticks() -> tuple[int, int, int, int]:
    """(busy, interrupts, total, steal) jiffies of all CPUs, from /proc/stat.

    Interrupt time (mostly the loopback network's softirq) is in no process's CPU time. Steal is the
    time the hypervisor gave a CPU of this machine to another: on a shared host it makes a window
    slower with nothing here busier.
    """
    user, nice, system, idle, iowait, irq, softirq, steal = (
        int(value) for value in Path("/proc/stat").read_text().splitlines()[0].split()[1:9]
    )
    # Guest time is already in user; steal (the hypervisor's) is neither ours nor idle.
    return (
        user + nice + system + irq + softirq,
        irq + softirq,
        user + nice + system + idle + iowait + irq + softirq + steal,
        steal,
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


@dataclass
class CpuWindow:
    """Process and machine CPU between two snapshots."""

    started: float
    table: dict[int, Proc]
    machine: tuple[int, int, int, int]

    @classmethod
    def now(cls) -> CpuWindow:
        return cls(time.monotonic(), process_table(), machine_cpu_ticks())

    def until_now(self, database: str, **roles: int) -> dict[str, Any]:
        """CPU in % of one core of each role's process tree (`server=pid, ...`), PostgreSQL (its own
        processes and `database`'s backends, exited ones included), Redis, interrupts and the rest."""
        later = CpuWindow.now()
        seconds = later.started - self.started
        hz = os.sysconf("SC_CLK_TCK")
        used = cpu_delta(self.table, later.table)
        groups = {name: tree_members(later.table, pid) for name, pid in roles.items()}
        groups["postgres"] = postgres_members(later.table, database)
        groups["redis"] = {pid for pid, proc in later.table.items() if proc.name.startswith("redis-server")}
        ticks = {name: sum(used[pid] for pid in pids) for name, pids in groups.items()}
        ticks["postgres"] += postmasters_reaped(self.table, later.table)
        busy, interrupts, total, steal = (b - a for a, b in zip(self.machine, later.machine, strict=True))
        ticks["interrupts"] = interrupts
        ticks["other"] = max(0, busy - sum(ticks.values()))
        ours = set().union(*groups.values(), {os.getpid()})
        outside = sorted(((used[pid], pid) for pid in used.keys() - ours), reverse=True)[:3]
        return {
            "seconds": round(seconds, 3),
            "cpu_percent_of_one_core": {k: round(100.0 * v / hz / seconds, 1) for k, v in ticks.items()},
            "machine_cpu_busy_percent": round(100.0 * busy / total, 1) if total else 0.0,
            "machine_cpu_stolen_percent": round(100.0 * steal / total, 1) if total else 0.0,
            "other_processes": {
                f"{later.table[pid].name}[{pid}]": round(100.0 * t / hz / seconds, 1)
                for t, pid in outside
                if t > 0
            },
        }


def wait_until_quiet(max_wait_s: float) -> float | None:
    """Before a load, on a shared machine: wait (at most max_wait_s) for 5 s of a machine below QUIET_BUSY.

    The busy share seen last, in % of all CPUs; the load starts anyway when the wait is over.
    """
    if max_wait_s <= 0:
        return None
    deadline = time.monotonic() + max_wait_s
    while True:
        before = machine_cpu_ticks()
        time.sleep(5.0)
        after = machine_cpu_ticks()
        busy = 100.0 * (after[0] - before[0]) / max(1, after[2] - before[2])
        if busy < QUIET_BUSY or time.monotonic() >= deadline:
            return round(busy, 1)
        print(f"the machine is {busy:.0f}% busy: waiting for it to calm down", file=sys.stderr)


# What one sample of pg_stat_activity counts, for one database's client backends (the sampler's own not).
CONNECTIONS_SAMPLE = """
SELECT count(*) AS connections,
       count(*) FILTER (WHERE state = 'active') AS active,
       count(*) FILTER (WHERE state LIKE 'idle in transaction%') AS idle_in_transaction,
       count(*) FILTER (WHERE wait_event_type = 'Lock') AS waiting_for_a_lock
FROM pg_stat_activity
WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()
"""


class ConnectionSampler:
    """`with ConnectionSampler(url) as sampler:` (or `start()` ... `stop()`) samples pg_stat_activity of
    the URL's database every `interval_s` on a thread of its own; `sampler.summary()` then gives, per
    count, the mean and the maximum over the samples. In use = `active` + `idle in transaction` (a
    connection held in an open transaction while its process does something else: a network call,
    Python)."""

    def __init__(self, database_url: str, interval_s: float = 0.1) -> None:
        self.database_url = plain_url(database_url)
        self.interval_s = interval_s
        self.samples: list[dict[str, int]] = []
        self.error: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._sample()), daemon=True)

    async def _sample(self) -> None:
        try:
            connection = await asyncpg.connect(self.database_url)
        except (OSError, asyncpg.PostgresError) as error:  # a shared server out of connections
            self.error = repr(error)
            return
        try:
            while not self._stop.is_set():
                row = await connection.fetchrow(CONNECTIONS_SAMPLE)
                sample = {key: int(value) for key, value in row.items()}
                sample["in_use"] = sample["active"] + sample["idle_in_transaction"]
                self.samples.append(sample)
                await asyncio.sleep(self.interval_s)
        finally:
            await connection.close()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Idempotent, and harmless before `start`."""
        self._stop.set()
        if self._thread.ident is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> ConnectionSampler:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    def summary(self) -> dict[str, Any]:
        if not self.samples:
            return {"samples": 0, "error": self.error}
        keys = self.samples[0].keys()
        return {
            "samples": len(self.samples),
            "interval_s": self.interval_s,
            "mean": {key: round(sum(s[key] for s in self.samples) / len(self.samples), 1) for key in keys},
            "max": {key: max(s[key] for s in self.samples) for key in keys},
        }


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages: recorded with each run, since the machine is shared."""
    return [float(value) for value in Path("/proc/loadavg").read_text().split()[:3]]


# ---------------------------------------------------------------------------------------------- servers


@dataclass
class Server:
    name: str
    base_url: str
    process: subprocess.Popen[bytes]


def server_env(services: Services) -> dict[str, str]:
    return {
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


def processor_network_env(latency_ms: float, jitter_ms: float) -> dict[str, str]:
    """A moneyrail process's settings for the sandbox processor's network model (processor/sandbox/
    network.py): every processor call waits a round trip drawn within latency ± jitter; none fails."""
    return {
        "MONEYRAIL_SANDBOX_LATENCY_MS": str(latency_ms),
        "MONEYRAIL_SANDBOX_LATENCY_JITTER_MS": str(jitter_ms),
    }


def start_moneyrail(processes: Processes, env: Mapping[str, str], name: str = "moneyrail") -> Server:
    """`moneyrail web` (one uvicorn process, the production shape) on a free port."""
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    process = processes.start(name, [str(MONEYRAIL), "web"], {**env, "MONEYRAIL_PORT": str(port)})
    wait_until_up(name, process, f"{base_url}/healthz")
    return Server(name, base_url, process)


def start_bare(processes: Processes, env: Mapping[str, str]) -> Server:
    """bench/bare_app.py: FastAPI + asyncpg, one INSERT per request, the floor of a durable endpoint."""
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    process = processes.start(
        "bare", [sys.executable, str(BENCH_DIR / "bare_app.py"), "--port", str(port)], env
    )
    wait_until_up("bare", process, f"{base_url}/healthz")
    return Server("bare", base_url, process)


@dataclass
class RunContext:
    services: Services
    processes: Processes
    env: dict[str, str]
    secret: str  # a sandbox key with scope * of a fresh installation


@contextmanager
def run_context(database: str) -> Iterator[RunContext]:
    """A fresh, migrated database with an installation and key; every process started is stopped."""
    signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    processes = Processes()
    with ExitStack() as stack:  # unwinds in reverse: servers, then PostgreSQL and Redis
        running = stack.enter_context(services(database))
        stack.callback(processes.stop_all)
        env = server_env(running)
        yield RunContext(running, processes, env, moneyrail_key(env))


# ---------------------------------------------------------------------------------------------- report


def host_info() -> dict[str, Any]:
    """The machine itself: CPUs, memory, kernel, Python, and how loaded it was when asked."""
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
        "load_average": load_average(),
    }


def machine_info(services: Services, wrk: str | None = None) -> dict[str, Any]:
    info: dict[str, Any] = {
        **host_info(),
        "postgresql": services.postgres.get("server_version", "unknown"),
        "postgresql_source": services.postgres_source,
        "postgresql_settings": {k: v for k, v in services.postgres.items() if k != "server_version"},
        "redis_source": services.redis_source,
    }
    if wrk is not None:
        info["wrk"] = wrk_version(wrk)
    return info


class MachineLoad:
    """`with MachineLoad() as load:` then `load.busy_percent`: the whole machine's busy share meanwhile."""

    def __enter__(self) -> MachineLoad:
        self.before = machine_cpu_ticks()
        return self

    def __exit__(self, *_: object) -> None:
        after = machine_cpu_ticks()
        busy, total = after[0] - self.before[0], after[2] - self.before[2]
        self.busy_percent = round(100.0 * busy / total, 1) if total else 0.0


def plain_url(url: str) -> str:
    """A libpq / asyncpg URL (no SQLAlchemy driver suffix), same database."""
    parsed = make_url(url.replace("postgres://", "postgresql://", 1))
    return parsed.set(drivername="postgresql").render_as_string(hide_password=False)


def software_info(**extra: str) -> dict[str, Any]:
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
        # a run of another tree's code (PYTHONPATH=<its src>) says so: the commit above is then not it
        "pythonpath": os.environ.get("PYTHONPATH") or None,
        **extra,
        **{
            package: version(package) for package in ("fastapi", "uvicorn", "asyncpg", "sqlalchemy", "uvloop")
        },
    }


HISTORY_HEAD = ("date", "machine", "commit", "note")


def add_record_options(parser: argparse.ArgumentParser) -> None:
    """`--note` (a word on this run for its history row: "quiet machine", "before the cut"...) and
    `--no-record` (print the results, write nothing)."""
    parser.add_argument("--note", default="", help="a word on this run, kept in its history row")
    parser.add_argument(
        "--no-record", dest="record", action="store_false", help="print the results, write nothing"
    )


def record(name: str, document: Mapping[str, Any], figures: Mapping[str, Any], note: str = "") -> Path:
    """The run's whole document as `results/<name>-latest.json`, and one row of its key `figures`
    appended to `results/<name>-history.csv` (date, machine, commit and note first). A figure the
    history has no column for yet gets one; older rows leave it empty. Returns the history's path."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    (RESULTS_DIR / f"{name}-latest.json").write_text(json.dumps(document, indent=2, default=str) + "\n")
    history = RESULTS_DIR / f"{name}-history.csv"
    append_history(history, {**history_head(document, note), **figures})
    return history


def history_head(document: Mapping[str, Any], note: str = "") -> dict[str, str]:
    """When, on what and which code a run measured: the first cells of its history row."""
    started = str(document.get("started_at", ""))
    machine = document.get("machine") or {}
    software = document.get("software") or {}
    load = machine.get("load_average") or []
    cpus = machine.get("cpu_count")
    described = f"{cpus} CPUs {machine.get('cpu_model', '')}".strip() if cpus else ""
    if load:
        described += f", load {load[0]:.1f}"
    commit = str(software.get("git_commit") or "")[:7]
    if software.get("src_modified"):
        commit += "+changes"
    if software.get("pythonpath"):
        commit = f"{commit} (code on PYTHONPATH)".strip()
    return {"date": started[:16].replace("T", " "), "machine": described, "commit": commit, "note": note}


def append_history(path: Path, row: Mapping[str, Any]) -> None:
    cells = {key: history_cell(value) for key, value in row.items()}
    rows: list[dict[str, str]] = []
    columns: list[str] = []
    if path.exists():
        with path.open(newline="") as existing:
            reader = csv.DictReader(existing)
            columns = list(reader.fieldnames or [])
            rows = list(reader)
    grown = columns + [key for key in cells if key not in columns]
    if grown == columns:
        with path.open("a", newline="") as history:
            csv.DictWriter(history, fieldnames=columns, restval="").writerow(cells)
        return
    with path.open("w", newline="") as history:
        writer = csv.DictWriter(history, fieldnames=grown, restval="")
        writer.writeheader()
        writer.writerows([*rows, cells])


def history_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple):
        return " ".join(history_cell(item) for item in value)
    return str(value)


def run_token() -> str:
    return time.strftime("%H%M%S", time.gmtime()) + secrets.token_hex(2)
