"""The async engine. Every process builds one from Settings.database_url."""

from __future__ import annotations

import os
import socket
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

from moneyrail.config import Settings


class DatabaseNotConfigured(RuntimeError):
    pass


def async_database_url(url: str) -> str:
    """Accept the usual `postgresql://` / `postgres://` forms and pick the asyncpg driver."""
    parsed = make_url(url.replace("postgres://", "postgresql://", 1))
    if parsed.get_backend_name() != "postgresql":
        raise DatabaseNotConfigured(f"moneyrail runs on PostgreSQL only, not {parsed.get_backend_name()}")
    return parsed.set(drivername="postgresql+asyncpg").render_as_string(hide_password=False)


def create_engine(settings: Settings) -> AsyncEngine:
    if not settings.database_url:
        raise DatabaseNotConfigured(
            "DATABASE_URL is not set: set it, or start `moneyrail dev` (embedded servers) and run the "
            "operator commands from the folder it runs in"
        )
    engine = create_async_engine(
        async_database_url(settings.database_url),
        pool_size=settings.db_pool_size,
        max_overflow=settings.db_max_overflow,
        pool_pre_ping=False,
    )
    event.listen(engine.sync_engine, "do_connect", _name_the_connection)
    return engine


def _name_the_connection(dialect: Any, record: Any, cargs: Any, cparams: dict[str, Any]) -> None:
    """pg_stat_activity's application_name says which process holds a connection: an SRE looking at a
    slow query or a lock finds the web, worker or scheduler process behind it (the pid at connect time,
    so a forked process names its own)."""
    settings = cparams.setdefault("server_settings", {})
    # PostgreSQL keeps 63 bytes: the pid first, the host after it
    settings.setdefault("application_name", f"moneyrail pid {os.getpid()} on {socket.gethostname()}"[:63])


def create_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    # expire_on_commit=False: objects stay readable after the unit of work commits (STYLE.md habit 2)
    return async_sessionmaker(engine, expire_on_commit=False, autoflush=False)
