"""`moneyrail dev`: the whole service on one laptop, in one command.

The screen shows one short line per step, then the key, a curl line that works, what runs and how to
run the operator CLI against it. Everything the servers and processes say goes to `<data dir>/logs/`.
"ready" is printed only once the web process answers `/readyz` with its database and broker up, the
worker's metrics exposition answers, and a scheduler holds the leader lock.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TextIO

import httpx
import structlog
from sqlalchemy.ext.asyncio import AsyncEngine

from moneyrail.api import keys
from moneyrail.clihelpers import DevInstance
from moneyrail.config import Settings
from moneyrail.db.engine import create_engine, create_sessionmaker
from moneyrail.db.uow import UnitOfWork
from moneyrail.embedded import EmbeddedPostgres, EmbeddedRedis, EmbeddedServersMissing
from moneyrail.engine.leadership import LEADERS_HELD
from moneyrail.installations import service as installations
from moneyrail.kit.crypto import generate_key, hash_secret
from moneyrail.kit.tenant import Tenant
from moneyrail.logging import configure_logging

DEV_INSTALLATION_NAME = "Dev sandbox"
READY_TIMEOUT_SECONDS = 90
ROLES = ("web", "worker", "scheduler")


class StartFailed(RuntimeError):
    """A step of the start-up failed; the message says which and where its log is."""


def _say(message: str = "") -> None:
    print(message, flush=True)


@contextmanager
def _step(label: str) -> Iterator[list[str]]:
    """One progress line per step: `  label ... detail (1.2 s)`; details may be appended by the step."""
    print(f"  {label:<11}", end="", flush=True)
    started = time.monotonic()
    details: list[str] = []
    try:
        yield details
    except BaseException:
        print("failed", flush=True)
        raise
    print(f"{' '.join(details) or 'ok'} ({time.monotonic() - started:.1f} s)", flush=True)


def _display(path: Path) -> str:
    """A path relative to the current folder when it is inside it (shorter lines), else absolute."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _send_logs_to(log_file: Path, settings: Settings) -> TextIO:
    """This process's own logs (embedded PostgreSQL's commands, Alembic, warnings) go to a file."""
    stream = log_file.open("a", buffering=1)
    # JSON lines like every process's, warnings too (e.g. platformdirs' runtime-directory warning)
    configure_logging(settings.log_level, json=settings.log_json, stream=stream)
    return stream


async def ensure_dev_key(settings: Settings, remembered: str | None) -> tuple[str, str]:
    """Create the sandbox installation and its all-scopes key once; reuse the key while it is active.

    The database keeps only a hash, so the caller remembers the secret in the git-ignored data folder.
    Returns (secret, installation id).
    """
    engine = create_engine(settings)
    try:
        async with UnitOfWork(create_sessionmaker(engine)) as uow:
            if remembered:
                key = await keys.lookup_secret_key(uow.session, hash_secret(remembered))
                if key is not None:
                    return remembered, key.installation_id
            installation = await installations.create_installation(
                uow.session, name=DEV_INSTALLATION_NAME, kind="direct"
            )
            issued = await installations.create_api_key(
                uow.session, Tenant(installation.id, livemode=False), scopes=["*"], name="moneyrail dev"
            )
            await uow.commit()
            return issued.secret, installation.id
    finally:
        await engine.dispose()


def dev_key(settings: Settings, key_file: Path) -> tuple[str, str]:
    remembered = key_file.read_text().strip() if key_file.exists() else None
    secret, installation_id = asyncio.run(ensure_dev_key(settings, remembered))
    if secret != remembered:
        key_file.parent.mkdir(parents=True, exist_ok=True)
        key_file.write_text(secret + "\n")
        key_file.chmod(0o600)
    return secret, installation_id


def dev_secret_keys(settings: Settings, key_file: Path) -> str:
    """MONEYRAIL_SECRET_KEYS for the dev processes: the environment's, else one made once and kept."""
    if settings.secret_keys:
        return settings.secret_keys
    if not key_file.exists():
        key_file.parent.mkdir(parents=True, exist_ok=True)
        key_file.write_text(generate_key() + "\n")
        key_file.chmod(0o600)
    return key_file.read_text().strip()


def _port_free(host: str, port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def _free_port(host: str) -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


async def _web_ready(client: httpx.AsyncClient, base_url: str) -> bool:
    try:
        answer = await client.get(f"{base_url}/readyz")
    except httpx.HTTPError:
        return False
    checks = answer.json().get("checks", {}) if answer.status_code == 200 else {}
    return bool(checks) and all(value == "ok" for value in checks.values())


async def _worker_ready(client: httpx.AsyncClient, metrics_url: str) -> bool:
    try:
        return (await client.get(metrics_url)).status_code == 200
    except httpx.HTTPError:
        return False


async def _scheduler_leads(engine: AsyncEngine) -> bool:
    async with engine.connect() as connection:
        return bool(await connection.scalar(LEADERS_HELD))


async def _wait_ready(
    settings: Settings, metrics_url: str, processes: dict[str, subprocess.Popen[bytes]], logs: Path
) -> None:
    """Until web, worker and scheduler each answer; a process that exits stops the wait at once."""
    pending = set(ROLES)
    engine = create_engine(settings.model_copy(update={"db_pool_size": 1}))
    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    try:
        async with httpx.AsyncClient(timeout=2) as client:
            while pending:
                for role, process in processes.items():
                    if process.poll() is not None:
                        raise StartFailed(f"`moneyrail {role}` exited; see {_display(logs / f'{role}.log')}")
                if "web" in pending and await _web_ready(client, settings.base_url):
                    pending.discard("web")
                if "worker" in pending and await _worker_ready(client, metrics_url):
                    pending.discard("worker")
                if "scheduler" in pending and await _scheduler_leads(engine):
                    pending.discard("scheduler")
                if not pending:
                    return
                if time.monotonic() > deadline:
                    waiting = ", ".join(sorted(pending))
                    raise StartFailed(
                        f"{waiting} did not answer within {READY_TIMEOUT_SECONDS} s; see {_display(logs)}/"
                    )
                await asyncio.sleep(0.25)
    finally:
        await engine.dispose()


def run_dev(settings: Settings) -> int:
    data_dir = settings.data_dir.resolve()
    running = DevInstance.read(data_dir)
    if running is not None:  # its servers own this data folder; a second one would fight over them
        _say(
            f"moneyrail dev: already running from {_display(data_dir)}/ "
            f"(pid {running.pid}, {running.base_url})"
        )
        return 1
    logs = data_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log_stream = _send_logs_to(logs / "dev.log", settings)
    logger = structlog.get_logger("moneyrail.dev")
    postgres = EmbeddedPostgres(data_dir / "postgres") if not settings.database_url else None
    redis = EmbeddedRedis(data_dir / "redis", log_file=logs / "redis.log") if not settings.redis_url else None
    processes: dict[str, subprocess.Popen[bytes]] = {}
    stopping = False

    def request_stop(signum: int, _frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)
    started = time.monotonic()
    _say(f"moneyrail dev: data in {_display(data_dir)}/, logs in {_display(logs)}/")
    try:
        database_url = settings.database_url
        with _step("PostgreSQL") as detail:
            if postgres is not None:
                database_url = postgres.start()
                detail.append("embedded, started")
            else:
                detail.append("from DATABASE_URL")
        redis_url = settings.redis_url
        with _step("Redis") as detail:
            if redis is not None:
                redis_url = redis.start()
                detail.append("embedded, started")
            else:
                detail.append("from REDIS_URL")
        assert database_url is not None and redis_url is not None
        settings = settings.model_copy(update={"database_url": database_url, "redis_url": redis_url})

        with _step("database") as detail:
            from moneyrail.db.migrate import upgrade  # imports Alembic, which logs: after the redirect

            upgrade(database_url)
            detail.append("migrated")
        with _step("sandbox") as detail:
            secret, installation_id = dev_key(settings, data_dir / "dev-key")
            detail.append(f"installation {installation_id} and its key")

        metrics_host = settings.worker_metrics_host
        metrics_port = settings.worker_metrics_port
        if not _port_free(metrics_host, metrics_port):  # another fleet on this laptop has it
            metrics_port = _free_port(metrics_host)
        environment = {
            **os.environ,
            "DATABASE_URL": database_url,
            "REDIS_URL": redis_url,
            "MONEYRAIL_SECRET_KEYS": dev_secret_keys(settings, data_dir / "secret-keys"),
            "MONEYRAIL_WORKER_METRICS_PORT": str(metrics_port),
        }
        metrics_url = f"http://{metrics_host}:{metrics_port}/"
        with _step("processes") as detail:
            for role in ROLES:
                with (logs / f"{role}.log").open("wb") as role_log:
                    # Own process groups: a terminal Ctrl-C reaches only us, and we stop them in order.
                    processes[role] = subprocess.Popen(
                        [sys.executable, "-m", "moneyrail", role],
                        env=environment,
                        stdin=subprocess.DEVNULL,
                        stdout=role_log,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
            asyncio.run(_wait_ready(settings, metrics_url, processes, logs))
            detail.append("web, worker and scheduler answer")
        DevInstance(os.getpid(), database_url, redis_url, settings.base_url).write(data_dir)
        logger.info("dev_ready", seconds=round(time.monotonic() - started, 1))

        _say(f"  {'ready':<11}in {time.monotonic() - started:.1f} s")
        _say()
        _say(f"  sandbox API key: {secret}")
        _say()
        _say(f'  curl -s {settings.base_url}/v1/account -H "Authorization: Bearer {secret}"')
        _say()
        _say(f"  web        {settings.base_url:<40} log {_display(logs / 'web.log')}")
        _say(f"  worker     {'up, metrics on ' + metrics_url:<40} log {_display(logs / 'worker.log')}")
        _say(f"  scheduler  {'up, leading':<40} log {_display(logs / 'scheduler.log')}")
        _say(f"  operator   python3 run.py moneyrail keys list -i {installation_id}")
        _say("             (or .venv/bin/moneyrail …, from this folder: no variables needed)")
        _say()
        _say("  Ctrl-C stops everything.")
        while not stopping:
            for role, process in processes.items():
                if process.poll() is not None:
                    _say(f"moneyrail dev: `moneyrail {role}` exited; see {_display(logs / f'{role}.log')}")
                    return 1
            time.sleep(0.2)
        return 0
    except (StartFailed, EmbeddedServersMissing) as error:
        _say(f"moneyrail dev: {error}")
        return 1
    except Exception as error:  # a clear line on screen; the traceback goes to the log
        logger.exception("dev_failed")
        _say(f"moneyrail dev: {type(error).__name__}: {error}".splitlines()[0])
        _say(f"  details in {_display(logs / 'dev.log')}")
        return 1
    finally:
        DevInstance.path(data_dir).unlink(missing_ok=True)
        _say("moneyrail dev: stopping")
        for process in processes.values():
            if process.poll() is None:
                process.terminate()
        for process in processes.values():
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
        if redis is not None:
            redis.stop()
        if postgres is not None:
            postgres.stop()
        _say("moneyrail dev: stopped")
        log_stream.flush()
