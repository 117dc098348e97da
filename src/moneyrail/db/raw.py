"""Straight to asyncpg, for the few statements on every request's and every operation's path.

SQLAlchemy's statement building costs more CPU than the round trip itself for one-row lookups run on
every request (authentication, the idempotency claim) and every operation (its claim, its outcome).
Those use the unit of work's own connection and transaction, so they commit or roll back with it; an
operation's claim, which must commit alone, takes a pooled connection outside any transaction.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any, Protocol, TypeVar

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
from sqlalchemy.orm import configure_mappers

from moneyrail.models.base import Base

_KEY = "moneyrail.driver_connection"
Model = TypeVar("Model", bound=Base)


async def driver_connection(session: AsyncSession) -> Any:
    """The asyncpg connection under the session's current transaction (one is begun if needed)."""
    cached = session.info.get(_KEY)
    if cached is None:
        connection = await session.connection()
        pooled = await connection.get_raw_connection()
        adapted: Any = pooled.dbapi_connection
        # SQLAlchemy's asyncpg adapter sends BEGIN lazily, on its own first statement; a statement sent
        # straight to the driver before that would run outside the transaction (autocommit).
        if getattr(adapted, "_transaction", None) is None:
            start = getattr(adapted, "_start_transaction", None)
            if start is not None:
                try:
                    await start()
                except Exception:
                    # SQLAlchemy did not send this statement, so it cannot see a dead connection (as
                    # after a PostgreSQL restart) and would hand it out again to every later request
                    await connection.invalidate()
                    raise
            else:  # another SQLAlchemy release: a statement through SQLAlchemy begins the transaction
                await connection.exec_driver_sql("SELECT 1")
        cached = pooled.driver_connection
        session.info[_KEY] = cached
    return cached


class StatementClaim(Protocol):
    """An Idempotency-Key claim a unit of work's first statement carries (api/idempotency.py).

    `sql` is a SELECT of one row (locked, fingerprint, status_code, response_body) with `parameters`
    as $1 to $n; the statement does its effect only where that row grants the key, and hands the row
    to `settle`, which raises the replay or refusal it calls for.
    """

    @property
    def sql(self) -> str: ...

    @property
    def parameters(self) -> tuple[Any, ...]: ...

    def settle(self, claim_row: Mapping[str, Any]) -> None: ...


@asynccontextmanager
async def lone_statement_connection(session: AsyncSession) -> AsyncIterator[Any]:
    """The connection for a statement that is the whole of its unit of work's writes.

    Inside the transaction the unit of work has begun already (an Idempotency-Key's claim, whose
    stored answer commits with the effect), that transaction's connection. Otherwise a pooled
    connection outside any transaction: PostgreSQL runs the lone statement in a transaction of its
    own, one round trip instead of BEGIN, statement, COMMIT. The caller vouches that nothing else in the
    unit of work writes after it.
    """
    if session.in_transaction():
        yield await driver_connection(session)
        return
    engine = session.bind
    assert isinstance(engine, AsyncEngine)
    async with engine.connect() as connection:  # no statement through SQLAlchemy: nothing begins
        pooled = await connection.get_raw_connection()
        yield pooled.driver_connection


def forget_driver_connection(session: AsyncSession) -> None:
    """After commit or rollback the pool may hand the session another connection."""
    session.info.pop(_KEY, None)


@asynccontextmanager
async def autocommit_connection(sessionmaker: async_sessionmaker[AsyncSession]) -> AsyncIterator[Any]:
    """A pooled asyncpg connection outside any transaction: each statement commits by itself.

    For a single statement that must commit before anything else happens (an operation's claim):
    one round trip instead of BEGIN, statement, COMMIT.
    """
    engine: AsyncEngine = sessionmaker.kw["bind"]
    async with engine.connect() as connection:  # no statement through SQLAlchemy: nothing begins
        pooled = await connection.get_raw_connection()
        yield pooled.driver_connection


def from_row(model: type[Model], row: Mapping[str, Any]) -> Model:
    """An instance holding a row's values, attached to no session: for reading, never for writing.

    A statement on the driver returns plain rows; building the model through its constructor (every
    attribute through the ORM's instrumentation) costs more than the round trip on hot paths.
    """
    if not model.__mapper__.configured:
        configure_mappers()  # what the first query would do: the attributes need their mapper
    instance: Model = model.__mapper__.class_manager.new_instance()
    instance.__dict__.update(row)
    return instance
