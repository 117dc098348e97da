"""What every operator command shares: one unit of work on its own engine, errors as messages, times for
people, and the connection settings of a running `moneyrail dev`."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import typer
from sqlalchemy.engine import make_url

from moneyrail.config import get_settings
from moneyrail.db.engine import DatabaseNotConfigured, create_engine, create_sessionmaker
from moneyrail.db.uow import UnitOfWork
from moneyrail.errors import MoneyrailError

T = TypeVar("T")

# Written by `moneyrail dev` into its data folder while it runs: how to reach its servers.
DEV_INSTANCE_FILE = "dev-instance.json"


@dataclass(frozen=True)
class DevInstance:
    pid: int
    database_url: str
    redis_url: str
    base_url: str

    @staticmethod
    def path(data_dir: Path) -> Path:
        return data_dir / DEV_INSTANCE_FILE

    def write(self, data_dir: Path) -> None:
        path = self.path(data_dir)
        path.parent.mkdir(parents=True, exist_ok=True)
        # private: the URLs carry credentials when the servers are not the embedded ones
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as file:
            json.dump(asdict(self), file, indent=2)

    @classmethod
    def read(cls, data_dir: Path) -> DevInstance | None:
        """The instance recorded in `data_dir` if its `moneyrail dev` still runs, else None."""
        try:
            recorded = json.loads(cls.path(data_dir).read_text())
            instance = cls(**recorded)
        except (OSError, ValueError, TypeError):
            return None
        return instance if _process_alive(instance.pid) else None


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def use_running_dev_instance(environ: MutableMapping[str, str], data_dir: Path) -> DevInstance | None:
    """Without DATABASE_URL, point the operator commands at the `moneyrail dev` running from `data_dir`."""
    if environ.get("DATABASE_URL"):
        return None
    instance = DevInstance.read(data_dir)
    if instance is not None:
        environ["DATABASE_URL"] = instance.database_url
        environ.setdefault("REDIS_URL", instance.redis_url)
    return instance


def no_database_message() -> str:
    data_dir = get_settings().data_dir
    return (
        f"DATABASE_URL is not set and no `moneyrail dev` is running from here "
        f"({DevInstance.path(data_dir)} not found): start `python3 run.py dev` in another terminal, "
        "or set DATABASE_URL"
    )


def safe_url(url: str) -> str:
    """A database URL for a message: no password."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # not even a URL: say so without echoing it
        return "(an unparsable URL)"


def human_time(unix_seconds: int | None) -> str | None:
    """ISO 8601 in UTC for people (`--json` keeps Unix seconds)."""
    if unix_seconds is None:
        return None
    return datetime.fromtimestamp(unix_seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# Fields of the views that hold Unix seconds: shown as ISO 8601 in human output.
TIME_FIELDS = frozenset(
    {"created", "accepted", "updated", "started", "finished", "dead_lettered", "discarded"}
)


def for_people(view: Mapping[str, Any]) -> dict[str, Any]:
    return {key: human_time(value) if key in TIME_FIELDS else value for key, value in view.items()}


def emit(as_json: bool, data: Any, human: str) -> None:
    typer.echo(json.dumps(data, indent=2) if as_json else human)


def in_unit_of_work(work: Callable[[UnitOfWork], Awaitable[T]]) -> T:
    """Run `work` in one committed unit of work; a refusal exits 1 with its message, no traceback."""

    async def run() -> T:
        engine = create_engine(get_settings())
        try:
            async with UnitOfWork(create_sessionmaker(engine)) as uow:
                result = await work(uow)
                await uow.commit()
                return result
        finally:
            await engine.dispose()

    try:
        return asyncio.run(run())
    except MoneyrailError as error:
        typer.echo(f"error: {error.message}", err=True)
        raise typer.Exit(1) from error
    except DatabaseNotConfigured as error:
        message = no_database_message() if not get_settings().database_url else str(error)
        typer.echo(f"error: {message}", err=True)
        raise typer.Exit(2) from error
