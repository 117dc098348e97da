"""`moneyrail dev`: the whole service on one laptop, in one command."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import FrameType

from moneyrail.config import Settings
from moneyrail.db.engine import create_engine, create_sessionmaker
from moneyrail.db.migrate import upgrade
from moneyrail.db.uow import UnitOfWork
from moneyrail.embedded import EmbeddedPostgres, EmbeddedRedis
from moneyrail.installations import repository as keys_repository
from moneyrail.installations import service as installations
from moneyrail.kit.crypto import generate_key
from moneyrail.kit.tenant import Tenant

DEV_INSTALLATION_NAME = "Dev sandbox"
READY_TIMEOUT_SECONDS = 60


def _say(message: str) -> None:
    print(f"[moneyrail dev] {message}", flush=True)


async def ensure_dev_key(settings: Settings, remembered: str | None) -> str:
    """Create the sandbox installation and its all-scopes key once; reuse the key while it is active.

    The database keeps only a hash, so the caller remembers the secret in the git-ignored data folder.
    """
    engine = create_engine(settings)
    try:
        async with UnitOfWork(create_sessionmaker(engine)) as uow:
            if remembered and await keys_repository.find_active_secret_key(
                uow.session, installations.hash_secret(remembered)
            ):
                return remembered
            installation = await installations.create_installation(
                uow.session, name=DEV_INSTALLATION_NAME, kind="direct"
            )
            issued = await installations.create_api_key(
                uow.session, Tenant(installation.id, livemode=False), scopes=["*"], name="moneyrail dev"
            )
            await uow.commit()
            return issued.secret
    finally:
        await engine.dispose()


def dev_key(settings: Settings, key_file: Path) -> str:
    remembered = key_file.read_text().strip() if key_file.exists() else None
    secret = asyncio.run(ensure_dev_key(settings, remembered))
    if secret != remembered:
        key_file.parent.mkdir(parents=True, exist_ok=True)
        key_file.write_text(secret + "\n")
        key_file.chmod(0o600)
    return secret


def dev_secret_keys(settings: Settings, key_file: Path) -> str:
    """MONEYRAIL_SECRET_KEYS for the dev processes: the environment's, else one made once and kept."""
    if settings.secret_keys:
        return settings.secret_keys
    if not key_file.exists():
        key_file.parent.mkdir(parents=True, exist_ok=True)
        key_file.write_text(generate_key() + "\n")
        key_file.chmod(0o600)
    return key_file.read_text().strip()


def _wait_ready(base_url: str, processes: list[subprocess.Popen[bytes]]) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if any(process.poll() is not None for process in processes):
            raise RuntimeError("a moneyrail process exited during start-up; see its output above")
        try:
            with urllib.request.urlopen(f"{base_url}/readyz", timeout=2) as response:  # noqa: S310 - our own URL
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise TimeoutError(f"{base_url}/readyz did not answer within {READY_TIMEOUT_SECONDS} s")


def run_dev(settings: Settings) -> int:
    data_dir = settings.data_dir.resolve()
    postgres = EmbeddedPostgres(data_dir / "postgres") if not settings.database_url else None
    redis = EmbeddedRedis(data_dir / "redis") if not settings.redis_url else None
    processes: list[subprocess.Popen[bytes]] = []
    stopping = False

    def request_stop(signum: int, _frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)
    try:
        database_url = settings.database_url
        if postgres is not None:
            _say(f"starting embedded PostgreSQL in {postgres.data_dir}")
            database_url = postgres.start()
        redis_url = settings.redis_url
        if redis is not None:
            _say(f"starting embedded Redis in {redis.data_dir}")
            redis_url = redis.start()
        assert database_url is not None and redis_url is not None
        settings = settings.model_copy(update={"database_url": database_url, "redis_url": redis_url})

        _say("migrating the database")
        upgrade(database_url)
        secret = dev_key(settings, data_dir / "dev-key")

        environment = {
            **os.environ,
            "DATABASE_URL": database_url,
            "REDIS_URL": redis_url,
            "MONEYRAIL_SECRET_KEYS": dev_secret_keys(settings, data_dir / "secret-keys"),
        }
        executable = [sys.executable, "-m", "moneyrail"]
        for role in ("web", "worker", "scheduler"):
            # Own process groups: a terminal Ctrl-C reaches only us, and we stop the children in order.
            processes.append(subprocess.Popen([*executable, role], env=environment, start_new_session=True))
        _wait_ready(settings.base_url, processes)

        _say("ready: web, worker and scheduler are running (Ctrl-C stops everything)")
        print(f"\n  sandbox API key: {secret}\n", flush=True)
        print(f'  curl -s {settings.base_url}/v1/account -H "Authorization: Bearer {secret}"\n', flush=True)
        while not stopping:
            if any(process.poll() is not None for process in processes):
                _say("a process exited; stopping the others")
                return 1
            time.sleep(0.2)
        return 0
    finally:
        _say("stopping")
        for process in processes:
            if process.poll() is None:
                process.terminate()
        for process in processes:
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
        if redis is not None:
            redis.stop()
        if postgres is not None:
            postgres.stop()
        _say("stopped")
