"""The async engine. Every process builds one from Settings.database_url."""

from __future__ import annotations

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
    return create_async_engine(
        async_database_url(settings.database_url),
        pool_size=settings.db_pool_size,
        max_overflow=settings.db_max_overflow,
        pool_pre_ping=False,
    )


def create_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    # expire_on_commit=False: objects stay readable after the unit of work commits (STYLE.md habit 2)
    return async_sessionmaker(engine, expire_on_commit=False, autoflush=False)
