"""What every operator command shares: one unit of work on its own engine, errors as messages, times for
people, and the connection settings of a running `moneyrail dev`."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
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
    """The `moneyrail dev` running from `data_dir`, if any; without DATABASE_URL, the operator commands
    use its servers (DATABASE_URL and REDIS_URL are set from it)."""
    instance = DevInstance.read(data_dir)
    if instance is not None and not environ.get("DATABASE_URL"):
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


def human_time(unix_seconds: int | None, *, now: float | None = None, age: bool = True) -> str | None:
    """ISO 8601 in UTC and how long ago, for people: `2026-11-27T14:03:12Z (3 min ago)` (`--json` keeps
    Unix seconds). `age=False` for a time on another clock than the wall's (a sandbox's)."""
    if unix_seconds is None:
        return None
    moment = datetime.fromtimestamp(unix_seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if not age:
        return moment
    return f"{moment} ({_age(unix_seconds, time.time() if now is None else now)})"


def _age(unix_seconds: int, now: float) -> str:
    elapsed = round(now - unix_seconds)
    span = abs(elapsed)
    if span < 1:
        return "just now"
    if span < 60:
        amount = f"{span} s"
    elif span < 3600:
        amount = f"{span // 60} min"
    elif span < 86400:
        amount = f"{span // 3600} h"
    else:
        days = span // 86400
        amount = f"{days} day{'s' if days != 1 else ''}"
    return f"{amount} ago" if elapsed > 0 else f"in {amount}"


def human_value(value: Any, *, none: str = "none") -> str:
    """A value as a person writes it: yes/no, a comma-separated list, `none` (or what `none` says)."""
    if value is None:
        return none
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple):
        return ", ".join(str(item) for item in value) or none
    return str(value)


def labelled(rows: Sequence[tuple[str, Any]]) -> str:
    """`label: value` lines, the values in one column."""
    width = max((len(label) for label, _ in rows), default=0) + 1
    return "\n".join(f"{label + ':':<{width}} {human_value(value)}".rstrip() for label, value in rows)


def emit(as_json: bool, data: Any, human: str) -> None:
    typer.echo(json.dumps(data, indent=2) if as_json else human)


def in_unit_of_work(work: Callable[[UnitOfWork], Awaitable[T]]) -> T:
    """Run `work` in one committed unit of work; a refusal exits 1 with its message, no traceback.
    A command whose decision must reach every domain's outcome listener has the operator CLI load every
    domain first (cli.py, `dead-letters`): this module, below the engine, knows no domain."""

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
