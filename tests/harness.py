"""Real servers for the tests: PostgreSQL and Redis (the machine's, or embedded), and moneyrail processes.

`MONEYRAIL_TEST_DATABASE_URL` / `MONEYRAIL_TEST_REDIS_URL` point the suite at running servers (CI does);
unset, the suite starts the embedded ones the project ships, exactly as `moneyrail dev` does.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import socket
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import httpx
import psutil
import psycopg
import structlog
from redis import Redis
from redis.exceptions import WatchError
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from moneyrail.config import Settings
from moneyrail.db.engine import create_engine, create_sessionmaker
from moneyrail.db.uow import UnitOfWork
from moneyrail.embedded import EmbeddedPostgres, EmbeddedRedis
from moneyrail.installations import service as installations
from moneyrail.kit.crypto import generate_key
from moneyrail.kit.tenant import Tenant
from moneyrail.ledger import service as ledger

ROOT = Path(__file__).resolve().parent.parent
# pytest-xdist names each worker process (gw0, gw1, ...); each keeps its processes' logs apart
WORKER_NAME = os.environ.get("PYTEST_XDIST_WORKER", "main")
OUTPUT_DIR = ROOT / "test-output" / WORKER_NAME
# Redis has 16 numbered databases; a test session claims one of 1-15 (0 stays the developer's own)
REDIS_DATABASES = range(1, 16)
REDIS_CLAIM_KEY = "moneyrail-test-session"
T = TypeVar("T")
CLAIM_SECONDS = 4 * 3600  # longer than any suite run
# How long the suite's web processes remember keys and settings (MONEYRAIL_KEY_CACHE_SECONDS; 5 s in
# production): a change made elsewhere reaches them within this, and tests wait this long, not 5 s.
KEY_CACHE_SECONDS = 0.5
# httpx loads its CA bundle into a new TLS context for every client it makes (~20 ms of CPU), and every
# `httpx.get` is a client: the suite's clients share this one (the servers under test speak plain HTTP)
TLS = httpx.create_ssl_context()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def libpq_url(url: str) -> str:
    """psycopg wants plain `postgresql://`, without SQLAlchemy's driver suffix."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def with_database(url: str, database: str) -> str:
    return make_url(url).set(database=database).render_as_string(hide_password=False)


@dataclass
class Servers:
    database_url: str
    redis_url: str
    admin_url: str
    database: str
    # the processes' MONEYRAIL_DATA_DIR: a temporary folder of the session, never a developer's
    # `.moneyrail/` (a running `moneyrail dev`, its logs, its evidence files)
    data_dir: Path
    _embedded: list[Any] = field(default_factory=list)
    redis_claimed: bool = False  # a numbered database of a shared server, given back at the end
    # the processes' MONEYRAIL_SECRET_KEYS (secrets at rest), one key per test session
    secret_keys: str = field(default_factory=generate_key)

    @classmethod
    def start(cls, work_dir: Path) -> Servers:
        embedded: list[Any] = []
        admin_url = os.environ.get("MONEYRAIL_TEST_DATABASE_URL")
        if not admin_url:
            postgres = EmbeddedPostgres(work_dir / "postgres")
            admin_url = postgres.start(database="postgres")
            embedded.append(postgres)
        shared_redis = os.environ.get("MONEYRAIL_TEST_REDIS_URL")
        if shared_redis:
            redis_url = claim_redis_database(shared_redis)
        else:
            redis = EmbeddedRedis(work_dir / "redis")
            redis_url = redis.start()
            embedded.append(redis)
        database = f"moneyrail_test_{secrets.token_hex(4)}"
        with psycopg.connect(libpq_url(admin_url), autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{database}"')
        return cls(
            database_url=with_database(admin_url, database),
            redis_url=redis_url,
            admin_url=admin_url,
            database=database,
            data_dir=work_dir / "data",
            _embedded=embedded,
            redis_claimed=bool(shared_redis),
        )

    def stop(self) -> None:
        try:
            with psycopg.connect(libpq_url(self.admin_url), autocommit=True) as connection:
                connection.execute(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)')
        finally:
            if self.redis_claimed:
                release_redis_database(self.redis_url)
            for server in reversed(self._embedded):
                server.stop()

    def environment(self, **extra: str) -> dict[str, str]:
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith("MONEYRAIL_") and key not in {"DATABASE_URL", "REDIS_URL"}
        }
        env.update(
            {
                "DATABASE_URL": self.database_url,
                "REDIS_URL": self.redis_url,
                "MONEYRAIL_SECRET_KEYS": self.secret_keys,
                "MONEYRAIL_DATA_DIR": str(self.data_dir),
                # several suites' workers share one PostgreSQL (100 connections by default): the
                # processes of one test session stay well inside their share
                "MONEYRAIL_DB_POOL_SIZE": "8",
                "MONEYRAIL_KEY_CACHE_SECONDS": str(KEY_CACHE_SECONDS),
                **extra,
            }
        )
        return env


def claim_redis_database(server_url: str) -> str:
    """A numbered database of a shared Redis server that no other test session on this machine uses:
    each xdist worker, and each suite run beside it, gets its own broker queues and rate-limit keys.
    A session that dies without releasing its claim (killed) leaves it to expire, or to be taken over at
    once by a session of the same machine, which sees that its owner's process is gone."""
    owner = f"{socket.gethostname()}:{os.getpid()}"
    for number in REDIS_DATABASES:
        parts = urlsplit(server_url)
        url = urlunsplit((parts.scheme, parts.netloc, f"/{number}", parts.query, parts.fragment))
        with Redis.from_url(url) as client:
            if client.set(REDIS_CLAIM_KEY, owner, nx=True, ex=CLAIM_SECONDS) or _took_over(client, owner):
                with client.pipeline(transaction=True) as claim:  # what a killed session left goes
                    claim.flushdb().set(REDIS_CLAIM_KEY, owner, ex=CLAIM_SECONDS).execute()
                return url
    raise RuntimeError(f"every Redis database {REDIS_DATABASES} of {server_url} is claimed by a test session")


def _took_over(client: Redis, owner: str) -> bool:
    """The claim of a session of this machine whose process is gone, now this one's (compare and set:
    two sessions taking over the same claim at once, one of them wins)."""
    held = client.get(REDIS_CLAIM_KEY)
    host, _, pid = (held or b"").decode().rpartition(":")
    if host != socket.gethostname() or not pid.isdigit() or psutil.pid_exists(int(pid)):
        return False
    with client.pipeline(transaction=True) as swap:
        try:
            swap.watch(REDIS_CLAIM_KEY)
            if swap.get(REDIS_CLAIM_KEY) != held:
                return False
            swap.multi()
            swap.set(REDIS_CLAIM_KEY, owner, ex=CLAIM_SECONDS)
            swap.execute()
        except WatchError:
            return False
    return True


def release_redis_database(url: str) -> None:
    with Redis.from_url(url) as client:
        client.flushdb()


@dataclass
class Process:
    """A moneyrail process started with `python -m moneyrail <role>`, its output in a file."""

    role: str
    popen: subprocess.Popen[bytes]
    log_path: Path

    @classmethod
    def start(cls, role: str, servers: Servers, log_path: Path, *args: str, **env: str) -> Process:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        if role == "worker":  # dramatiq's metrics exposition binds a port: one of its own per worker
            env.setdefault("MONEYRAIL_WORKER_METRICS_PORT", str(free_port()))
        with log_path.open("wb") as log:  # a fresh log per start: assertions read only this run
            popen = subprocess.Popen(
                [sys.executable, "-m", "moneyrail", role, *args],
                env=servers.environment(**env),
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=ROOT,
                start_new_session=True,
            )
        return cls(role=role, popen=popen, log_path=log_path)

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self, timeout: float = 15) -> None:
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()


def verify_ledger(servers: Servers) -> None:
    """Every ledger invariant `moneyrail ledger verify` checks (balance, postings, the hash chain,
    checkpoints, the immutability triggers), on one read-only snapshot, in this process: the checks after
    a test's faults need not start a process each; the command itself runs as one in
    tests/ledger/test_cli.py, after the whole suite (conftest.py) and in the live walk."""

    async def check() -> ledger.VerificationReport:
        engine = create_engine(Settings(DATABASE_URL=servers.database_url, db_pool_size=1, db_max_overflow=0))
        try:
            async with UnitOfWork(create_sessionmaker(engine)) as uow:
                await uow.session.connection(
                    execution_options={"isolation_level": "REPEATABLE READ", "postgresql_readonly": True}
                )
                return await ledger.verify(uow.session)
        finally:
            await engine.dispose()

    report = asyncio.run(check())
    assert report.ok, "\n".join(report.problems)


def verify_ledger_as_an_operator_does(servers: Servers) -> None:
    """`moneyrail ledger verify`, as an operator runs it; it exits non-zero on any break."""
    result = run_moneyrail(servers, "ledger", "verify", timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


def run_moneyrail(
    servers: Servers, *args: str, stdin: str | None = None, timeout: float = 120, **env: str
) -> subprocess.CompletedProcess[str]:
    """`moneyrail <args>` as `python -m moneyrail` runs it (`moneyrail.entry.main`: its parsing, its own
    handling of failures, its exit code, its two streams), with the servers' environment (`env` over
    it), in this process: a process per command would load every domain again, ~2 s of CPU each for
    the suite's ~180 commands. Settings are read afresh for each command, and the logging it configures
    is put back. tests/test_operator_cli.py runs the real `python -m moneyrail` for what only a process
    shows (its exit on a missing database, its logs kept off its output, run.py's hand-over)."""
    from click.testing import CliRunner

    from moneyrail.config import get_settings
    from moneyrail.entry import main

    environment = {name: value for name, value in servers.environment(**env).items() if name != "PWD"}
    outcome: dict[str, Any] = {}

    def command() -> None:
        root = logging.getLogger()
        handlers, level = list(root.handlers), root.level
        structlog_config = structlog.get_config()
        with CliRunner().isolation(input=stdin, env=environment) as (stdout, stderr, _):
            code: int | str | None
            try:
                get_settings.cache_clear()
                main(list(args))
                code = 0
            except SystemExit as exit_:
                code = exit_.code
            except Exception:  # as the interpreter does for a process: the traceback, exit 1
                traceback.print_exc()
                code = 1
            finally:
                get_settings.cache_clear()
                structlog.configure(**structlog_config)
                for handler in list(root.handlers):
                    root.removeHandler(handler)
                for handler in handlers:
                    root.addHandler(handler)
                root.setLevel(level)
            if isinstance(code, str):  # sys.exit("message"): the message on stderr, exit 1
                print(code, file=sys.stderr)
                code = 1
            sys.stdout.flush()
            sys.stderr.flush()
            outcome["result"] = subprocess.CompletedProcess(
                ["moneyrail", *args], code or 0, stdout.getvalue().decode(), stderr.getvalue().decode()
            )

    # its own thread: the command runs its own event loop (asyncio.run), whoever calls it
    runner = threading.Thread(target=command, name="moneyrail command")
    runner.start()
    runner.join(timeout)
    if runner.is_alive():
        raise subprocess.TimeoutExpired(["moneyrail", *args], timeout)
    result: subprocess.CompletedProcess[str] = outcome["result"]
    return result


def json_lines(text: str) -> list[dict[str, Any]]:
    """Every line of a process's output, each asserted to be one JSON object (a log line)."""
    parsed = []
    for number, line in enumerate(text.splitlines(), start=1):
        try:
            entry = json.loads(line)
        except ValueError:
            raise AssertionError(f"line {number} is not JSON: {line!r}\n{text[-4000:]}") from None
        assert isinstance(entry, dict), f"line {number} is not a JSON object: {line!r}"
        parsed.append(entry)
    return parsed


def wait_until_ready(base_url: str, process: Process, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.popen.poll() is not None:
            raise RuntimeError(f"{process.role} exited early:\n{process.log_text()[-4000:]}")
        try:
            if httpx.get(f"{base_url}/readyz", timeout=2, verify=TLS).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise TimeoutError(f"{base_url} not ready:\n{process.log_text()[-4000:]}")


class AsyncBridge:
    """Runs the project's own async service functions from synchronous tests, on one loop."""

    def __init__(self, database_url: str) -> None:
        self._runner = asyncio.Runner()
        self._settings = Settings(DATABASE_URL=database_url, db_pool_size=2, db_max_overflow=2)
        self._engine = create_engine(self._settings)
        self._sessionmaker = create_sessionmaker(self._engine)

    @property
    def sessionmaker(self) -> async_sessionmaker[AsyncSession]:
        return self._sessionmaker

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return self._runner.run(coroutine)

    def in_unit_of_work(self, work: Any) -> Any:
        async def go() -> Any:
            async with UnitOfWork(self._sessionmaker) as uow:
                result = await work(uow.session)
                await uow.commit()
                return result

        return self.run(go())

    def close(self) -> None:
        self._runner.run(self._engine.dispose())
        self._runner.close()


@dataclass
class TenantKeys:
    installation_id: str
    livemode: bool
    secret: str
    key_id: str
    publishable_key: str

    @property
    def tenant(self) -> Tenant:
        return Tenant(self.installation_id, self.livemode)


def create_tenant(
    bridge: AsyncBridge, *, scopes: tuple[str, ...] = ("*",), livemode: bool = False, kind: str = "direct"
) -> TenantKeys:
    async def work(session: Any) -> TenantKeys:
        installation = await installations.create_installation(session, name="test installation", kind=kind)
        tenant = Tenant(installation.id, livemode)
        issued = await installations.create_api_key(session, tenant, scopes=list(scopes), name="test")
        account = await installations.get_account(session, tenant)
        assert account.publishable_key is not None
        return TenantKeys(installation.id, livemode, issued.secret, issued.key.id, account.publishable_key)

    result: TenantKeys = bridge.in_unit_of_work(work)
    return result


def add_key(bridge: AsyncBridge, tenant: Tenant, scopes: tuple[str, ...]) -> str:
    async def work(session: Any) -> str:
        issued = await installations.create_api_key(session, tenant, scopes=list(scopes))
        return issued.secret

    secret: str = bridge.in_unit_of_work(work)
    return secret


def use_stripe(
    bridge: AsyncBridge,
    tenant: Tenant,
    *,
    api_key: str | None = None,
    publishable_key: str | None = None,
    webhook_secret: str | None = None,
    connect_webhook_secret: str | None = None,
) -> str:
    """Put the tenant's environment on Stripe, as `moneyrail settings set --processor stripe` does once
    the key passed its check (this makes no call to Stripe). Returns the key."""
    from moneyrail.installations import processors

    mode = "live" if tenant.livemode else "test"
    key = api_key or f"sk_{mode}_moneyrail_{secrets.token_hex(8)}"

    async def work(session: Any) -> None:
        await processors.set_processor(
            session,
            tenant,
            processor="stripe",
            api_key=key,
            publishable_key=publishable_key,
            webhook_secret=webhook_secret,
            connect_webhook_secret=connect_webhook_secret,
        )

    bridge.in_unit_of_work(work)
    return key
