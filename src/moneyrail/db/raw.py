"""Straight to asyncpg, for the few statements on every request's and every operation's path.

SQLAlchemy's statement building costs more CPU than the round trip itself for one-row lookups run on
every request (authentication, the idempotency claim) and every operation (its claim, its outcome).
Those use the unit of work's own connection and transaction, so they commit or roll back with it; an
operation's claim, which must commit alone, takes a pooled connection outside any transaction.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import orjson
from sqlalchemy import JSON, Table, inspect
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
from sqlalchemy.orm import configure_mappers
from sqlalchemy.orm.attributes import set_committed_value

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
    """The connection for a statement that needs no transaction of the unit of work's: the whole of its
    writes, or a read of committed state (a key's lookup).

    Inside the transaction the unit of work has begun already (an Idempotency-Key's claim, whose
    stored answer commits with the effect), that transaction's connection. Otherwise a pooled
    connection outside any transaction: PostgreSQL runs the lone statement in a transaction of its
    own, one round trip instead of BEGIN, statement, COMMIT. A write's caller vouches that nothing else
    in the unit of work writes after it.
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


@dataclass(frozen=True, slots=True)
class Write:
    """A data-modifying statement to run inside another one's round trip (a CTE of it)."""

    sql: str
    parameters: tuple[Any, ...]


def pending_update(instance: Base, first_parameter: int) -> Write | None:
    """The UPDATE the ORM's next flush would send for this loaded row's changed columns, taken over.

    For a hot path that writes the row in the same statement as something else (its event): the
    instance is marked written at once, so no flush sends it again; the caller runs the UPDATE in the
    same transaction (if that fails, the transaction rolls back, as a failed flush would). None when
    nothing changed, or for a row not yet inserted (the ORM's flush inserts it). Values go as the ORM
    sends them: JSON columns as JSON text (None as JSON null, the JSON type's default), the rest as
    they are, typed by PostgreSQL from the target column.
    """
    state = inspect(instance)
    if not state.persistent:
        return None
    assignments: list[str] = []
    parameters: list[Any] = []
    written: dict[str, Any] = {}
    for attribute in state.mapper.column_attrs:
        if not state.attrs[attribute.key].history.has_changes():
            continue
        column = attribute.columns[0]
        value = state.dict.get(attribute.key)
        number = first_parameter + len(parameters)
        if isinstance(column.type, JSON):
            assignments.append(f'"{column.name}" = ${number}::jsonb')
            parameters.append(orjson.dumps(value).decode())
        else:
            assignments.append(f'"{column.name}" = ${number}')
            parameters.append(value)
        written[attribute.key] = value
    if not assignments:
        return None
    table = state.mapper.local_table
    assert isinstance(table, Table)
    (key_column,) = state.mapper.primary_key
    identity = state.identity
    assert identity is not None  # persistent
    for key, value in written.items():
        set_committed_value(instance, key, value)
    number = first_parameter + len(parameters)
    # names from the mapper, values as parameters
    sql = f'UPDATE "{table.name}" SET {", ".join(assignments)} WHERE "{key_column.name}" = ${number}'  # noqa: S608
    return Write(sql, (*parameters, identity[0]))


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
