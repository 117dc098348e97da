"""Straight to asyncpg, for the few statements on every request's and every operation's path.

SQLAlchemy's statement building costs more CPU than the round trip itself for one-row lookups run on
every request (authentication, the idempotency claim) and every operation (its claim, its outcome).
Those use the unit of work's own connection and transaction, so they commit or roll back with it; an
operation's claim, which must commit alone, takes a pooled connection outside any transaction.

A unit of work whose first statement goes to the driver never runs SQLAlchemy's connection and
transaction machinery for it (a greenlet hop and several objects each for checkout, begin, commit and
close): `driver_connection` checks a connection out of the engine's pool itself, sends BEGIN on the
driver, and binds the session to that connection, set to SQLAlchemy's AUTOCOMMIT so that the ORM never
begins or ends a transaction of its own there: an ORM statement made later in the same unit of work
runs in the driver's transaction. `UnitOfWork` (db/uow.py) commits, rolls back and releases it. Only
public APIs: asyncpg's `is_in_transaction()` tells whether a transaction is open on a connection.

A lone statement needs no session at all when the unit of work has begun no transaction: it takes the
unit of work itself (`SessionOnDemand`), whose session may never be made.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from types import TracebackType
from typing import Any, Protocol, TypeVar

import asyncpg
import orjson
from sqlalchemy import JSON, Table, event, inspect
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DisconnectionError, MissingGreenlet
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession, async_sessionmaker
from sqlalchemy.orm import Mapper, Session, SessionTransaction, configure_mappers, make_transient_to_detached
from sqlalchemy.orm.attributes import instance_state, set_committed_value
from sqlalchemy.orm.base import NO_VALUE
from sqlalchemy.pool import ConnectionPoolEntry, Pool, PoolProxiedConnection, QueuePool
from sqlalchemy.util import greenlet_spawn

from moneyrail.models.base import Base

_KEY = "moneyrail.driver_connection"
_OWNED = "moneyrail.owned_connection"  # the pooled connection driver_connection checked out and bound
# Set on the sessions a UnitOfWork makes: only it commits, rolls back and releases a connection bound by
# `driver_connection`. A session used on its own (tests holding two transactions open) keeps SQLAlchemy's
# connection, so its own commit() and close() still cover the driver's statements.
UNIT_OF_WORK_SESSION = "moneyrail.unit_of_work_session"
Model = TypeVar("Model", bound=Base)


async def driver_connection(session: AsyncSession) -> Any:
    """The asyncpg connection under the session's current transaction (one is begun if needed)."""
    cached = session.info.get(_KEY)
    if cached is not None:
        return cached
    owned: AsyncConnection | None = session.info.get(_OWNED)
    if owned is not None:
        pooled = await owned.get_raw_connection()
        await _begin_on_driver(pooled.driver_connection, owned)
    elif UNIT_OF_WORK_SESSION in session.info and not orm_connection_begun(session):
        pooled = await _bind_pooled_connection(session)
    else:
        # the ORM holds a connection in this transaction already, or the session is not a unit of
        # work's: the driver joins SQLAlchemy's connection
        connection = await session.connection()
        pooled = await connection.get_raw_connection()
        joined: Any = pooled.driver_connection
        if not joined.is_in_transaction():
            # SQLAlchemy's asyncpg adapter sends BEGIN with its first statement: one through it, so
            # that what is sent straight to the driver does not run outside the transaction
            await connection.exec_driver_sql("SELECT 1")
    cached = pooled.driver_connection
    session.info[_KEY] = cached
    return cached


async def _bind_pooled_connection(session: AsyncSession) -> Any:
    """A connection from the engine's pool with a transaction begun on the driver, the session bound to it.

    The transaction is the driver's, not SQLAlchemy's: the connection is set to SQLAlchemy's AUTOCOMMIT,
    so that the ORM's statements and flushes on it join the transaction begun here instead of beginning
    their own (`end_driver_transaction` ends it).
    """
    engine = engine_of(session)
    pool = engine.sync_engine.pool
    # an idle connection without the greenlet hop of `AsyncEngine.raw_connection` (the same checkout)
    pooled = _idle_connection(pool) or await greenlet_spawn(pool.connect)
    assert pooled is not None
    connection = Connection(engine.sync_engine, connection=pooled)
    # no I/O: the adapter only notes it (and resets it when the connection goes back to the pool)
    connection.execution_options(isolation_level="AUTOCOMMIT")
    bound = AsyncConnection(engine, connection)
    session.info[_OWNED] = bound  # released by the unit of work, whatever happens below
    driver: Any = pooled.driver_connection
    await _begin_on_driver(driver, bound)
    # Not begun yet, so the session may still change its bind: its ORM statements join this transaction
    session.bind = bound
    return pooled


async def _begin_on_driver(driver: Any, connection: AsyncConnection) -> None:
    if driver.is_in_transaction():
        return
    try:
        await driver.execute("BEGIN")
    except Exception:
        # SQLAlchemy did not send this statement, so it cannot see a dead connection (as after a
        # PostgreSQL restart) and would hand it out again to every later request
        await connection.invalidate()
        raise


# Set while the session's transaction holds a connection it began (SQLAlchemy's public session events:
# `after_begin` when a connection joins the transaction, `after_transaction_end` when the outermost ends).
# Listened to on every Session: a unit of work may be given any sessionmaker, and a missed flag would
# leave an ORM transaction uncommitted.
_ORM_CONNECTION_BEGUN = "moneyrail.orm_connection_begun"


@event.listens_for(Session, "after_begin")
def _note_connection_begun(session: Session, transaction: SessionTransaction, connection: Connection) -> None:
    session.info[_ORM_CONNECTION_BEGUN] = True


@event.listens_for(Session, "after_transaction_end")
def _note_transaction_ended(session: Session, transaction: SessionTransaction) -> None:
    if transaction.parent is None:
        session.info.pop(_ORM_CONNECTION_BEGUN, None)


@event.listens_for(Pool, "checkout")
def _refuse_a_connection_left_in_a_transaction(
    dbapi_connection: Any, record: ConnectionPoolEntry, proxy: PoolProxiedConnection
) -> None:
    """A connection given back with the driver's transaction still open (a release cut short) would run
    the next user's statements in it: SQLAlchemy's pool drops it and hands out another instead."""
    driver = proxy.driver_connection
    if isinstance(driver, asyncpg.Connection) and driver.is_in_transaction():
        raise DisconnectionError("a pooled connection came back with a transaction open on its driver")


def orm_connection_begun(session: AsyncSession) -> bool:
    """Whether the ORM has a connection in the session's current transaction (a statement or a flush
    ran, or `session.connection()` was asked)."""
    return bool(session.info.get(_ORM_CONNECTION_BEGUN))


def engine_of(session: AsyncSession) -> AsyncEngine:
    """The engine behind a request's or an actor's session, bound to a connection of its pool or not."""
    bind = session.bind
    if isinstance(bind, AsyncConnection):
        return bind.engine
    assert isinstance(bind, AsyncEngine)
    return bind


def _owned_driver(session: AsyncSession) -> Any:
    """The driver connection `driver_connection` bound to the session, while it is open; else None."""
    owned: AsyncConnection | None = session.info.get(_OWNED)
    connection = owned.sync_connection if owned is not None else None
    if connection is None or connection.invalidated or connection.closed:
        return None
    return connection.connection.driver_connection


def driver_transaction_open(session: AsyncSession) -> bool:
    """Whether the connection bound by `driver_connection` has a transaction open (the driver's own)."""
    driver = _owned_driver(session)
    return driver is not None and bool(driver.is_in_transaction())


async def end_driver_transaction(session: AsyncSession, *, commit: bool) -> None:
    """Commit or roll back the transaction begun on the bound connection's driver.

    After the session's own commit or rollback, which flushed what the ORM held and sent nothing else:
    the bound connection is AUTOCOMMIT to SQLAlchemy.
    """
    session.info.pop(_KEY, None)
    driver = _owned_driver(session)
    if driver is None or not driver.is_in_transaction():
        return
    # PostgreSQL ends the transaction whether COMMIT succeeds or not (a deferred check may refuse it)
    await driver.execute("COMMIT" if commit else "ROLLBACK")


async def release_bound_connection(session: AsyncSession) -> None:
    """Back to the pool, after the session closed: a transaction still open on the driver is rolled
    back first (the pool's own reset would not see it). The session is bound to the engine again, so
    that its next use takes a connection of its own."""
    owned: AsyncConnection | None = session.info.pop(_OWNED, None)
    session.info.pop(_KEY, None)
    if owned is None:
        return
    if session.bind is owned:
        session.bind = owned.engine
    connection = owned.sync_connection
    if connection is None or connection.closed:
        return
    if connection.invalidated:
        await owned.close()
        return
    driver: Any = connection.connection.driver_connection
    if driver.is_closed():  # dead (as after a PostgreSQL restart): never handed out again
        await owned.invalidate()
        await owned.close()
        return
    if driver.is_in_transaction():
        try:
            await driver.execute("ROLLBACK")
        except Exception:
            await owned.invalidate()  # never handed out again with a transaction of its own
            raise
    if not connection.in_transaction() and _returns_without_io(owned.engine.sync_engine.pool):
        # nothing open on it, and a place in the pool: the checkin sends nothing, so it needs no
        # greenlet hop
        connection.close()
    else:
        await owned.close()


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

    def answer_write(self, status_code: int, template: bytes, first_parameter: int) -> Write:
        """The key's stored answer as a CTE of the same statement (no transaction of its own)."""
        ...


class AnsweringClaim(StatementClaim, Protocol):
    """A claim whose statement also deletes the record under the key past its retention
    (`stale_record_deletion`, a CTE after the claim's, named `claim`), for a route that writes its stored
    answer with its effect and without ON CONFLICT (api/idempotency.py `ClaimedKey.answer_with_effect`)."""

    @property
    def stale_record_deletion(self) -> str: ...


class SessionOnDemand(Protocol):
    """A unit of work (db/uow.py) as a lone statement sees it: its session only if one was made."""

    @property
    def made_session(self) -> AsyncSession | None: ...

    @property
    def engine(self) -> AsyncEngine: ...


def _made_session(work: AsyncSession | SessionOnDemand) -> AsyncSession | None:
    return work if isinstance(work, AsyncSession) else work.made_session


def transaction_open(work: AsyncSession | SessionOnDemand) -> bool:
    """Whether the unit of work has begun a transaction, through the ORM or on the driver (never
    without a session)."""
    session = _made_session(work)
    return session is not None and (session.in_transaction() or driver_transaction_open(session))


def lone_statement_connection(work: AsyncSession | SessionOnDemand) -> PooledConnection:
    """The connection for a statement that needs no transaction of the unit of work's: the whole of its
    writes, or a read of committed state (a key's lookup).

    Inside the transaction the unit of work has begun already (an Idempotency-Key's claim, whose
    stored answer commits with the effect), that transaction's connection. Otherwise a pooled
    connection outside any transaction: PostgreSQL runs the lone statement in a transaction of its
    own, one round trip instead of BEGIN, statement, COMMIT. A write's caller vouches that nothing else
    in the unit of work writes after it. Given the unit of work, this makes no session.
    """
    return PooledConnection(work, yield_before_sending=True)


def connection_begun(session: AsyncSession) -> bool:
    """Whether the session's transaction holds a connection (the ORM's or the driver's): it has sent
    something, a lock or a write, that a read should see."""
    return orm_connection_begun(session) or driver_transaction_open(session)


def read_connection(session: AsyncSession) -> PooledConnection:
    """The connection for a read: the session's transaction's once that holds one (the read sees what it
    wrote); before that, a pooled connection outside any transaction, even where the session has
    begun one that has sent nothing yet (it holds objects only): there is nothing written for the read
    to see, and no BEGIN is sent for it."""
    if connection_begun(session):
        return PooledConnection(session, yield_before_sending=False)
    return PooledConnection(engine_of(session), yield_before_sending=True)


def _idle_connection(pool: Pool) -> PoolProxiedConnection | None:
    """An open connection from the pool, or None when one must be opened first (I/O)."""
    if not isinstance(pool, QueuePool) or pool.checkedin() == 0:
        return None
    # An idle one invalidated after an outage reconnects on checkout: SQLAlchemy refuses that outside a
    # greenlet (MissingGreenlet, before any I/O, the slot given back) and drops the connect coroutine
    # it made, which Python would report as never awaited.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            return pool.connect()
        except MissingGreenlet:
            return None


def _returns_without_io(pool: Pool) -> bool:
    """Whether a connection given back now takes a place in the pool's queue (no I/O: nothing to roll
    back on it). Past the pool's size (an overflow connection) the pool closes it on return, which is
    the driver's close, I/O: that needs the greenlet, else SQLAlchemy logs a MissingGreenlet and the
    connection is left unclosed."""
    return isinstance(pool, QueuePool) and pool.checkedin() < pool.size()


class PooledConnection:
    """`async with`: an asyncpg connection of the engine's pool outside any transaction, checked out
    and back in without SQLAlchemy's Connection and its two greenlet hops (on the intake's path, every
    request); or, for a lone statement of a unit of work that has begun its transaction, that
    transaction's connection (nothing checked out here).

    A class rather than an `asynccontextmanager`: on every lone statement, a generator and its
    `__aenter__`/`__aexit__` steps cost more than this try/finally.

    Taking an idle connection from the pool and giving it back does no I/O: no pre-ping, and the reset
    on return sends nothing when the adapter began no transaction (nothing here goes through it). Only a
    connection still to be opened (a new one, or one invalidated after an outage) needs I/O, so needs
    the greenlet.

    `yield_before_sending` (a request's lone statement): the connection is taken after one pass of the
    event loop, so the statement is sent together with those of the other requests that reached theirs
    in the same pass, not between their Python work. The number of sends is the same, but a send
    costs the process less CPU in the kernel when PostgreSQL's backends on the other CPU are still
    busy with the previous ones than when each send wakes an idle one. Before the checkout, so nothing
    is held during the pass.
    """

    __slots__ = ("_connection", "_pool", "_pooled", "_work", "_yield_before_sending")

    def __init__(
        self, work: AsyncSession | SessionOnDemand | AsyncEngine, *, yield_before_sending: bool
    ) -> None:
        self._work = work
        self._yield_before_sending = yield_before_sending
        self._pooled: PoolProxiedConnection | None = None
        self._pool: Pool | None = None
        self._connection: Any = None

    async def __aenter__(self) -> Any:
        work = self._work
        if isinstance(work, AsyncEngine):
            engine = work
        else:
            session = _made_session(work)
            if session is not None and transaction_open(session):
                return await driver_connection(session)
            engine = engine_of(work) if isinstance(work, AsyncSession) else work.engine
        if self._yield_before_sending:
            await asyncio.sleep(0)
        pool = engine.sync_engine.pool
        pooled = _idle_connection(pool)
        if pooled is None:
            pooled = await greenlet_spawn(pool.connect)
        self._pooled = pooled
        self._pool = pool
        self._connection = pooled.driver_connection
        return self._connection

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        pooled = self._pooled
        if pooled is None:  # the unit of work's transaction's connection: it releases that
            return
        self._pooled = None
        try:
            if exc_type is not None and self._connection.is_closed():
                pooled.invalidate()  # dead (as after a PostgreSQL restart): never handed out again
        finally:
            assert self._pool is not None  # set with `_pooled`
            if _returns_without_io(self._pool):
                pooled.close()
            else:  # an overflow connection, closed on return
                await greenlet_spawn(pooled.close)


def forget_driver_connection(session: AsyncSession) -> None:
    """After commit or rollback the pool may hand the session another connection."""
    session.info.pop(_KEY, None)


def autocommit_connection(sessionmaker: async_sessionmaker[AsyncSession]) -> PooledConnection:
    """A pooled asyncpg connection outside any transaction: each statement commits by itself.

    For a single statement that must commit before anything else happens (an operation's claim):
    one round trip instead of BEGIN, statement, COMMIT.
    """
    engine: AsyncEngine = sessionmaker.kw["bind"]
    return PooledConnection(engine, yield_before_sending=False)


@dataclass(frozen=True, slots=True)
class Write:
    """A data-modifying statement to run inside another one's round trip (a CTE of it)."""

    sql: str
    parameters: tuple[Any, ...]


# A `Write` for a statement whose own parameters come first: given the number its first one takes.
WriteAt = Callable[[int], Write]


def pending_update(instance: Base, first_parameter: int) -> Write | None:
    """The UPDATE the ORM's next flush would send for this loaded row's changed columns, taken over.

    For a hot path that writes the row in the same statement as something else (its event): the
    instance is marked written at once, so no flush sends it again (nor finds it dirty: a session
    whose only change was this row then has nothing to flush at commit); the caller runs the UPDATE
    in the same transaction (if that fails, the transaction rolls back, as a failed flush would). None
    when nothing changed, or for a row not yet inserted (the ORM's flush inserts it). Values go as the
    ORM sends them: JSON columns as JSON text (None as JSON null, the JSON type's default), the rest
    as they are, typed by PostgreSQL from the target column.
    """
    state = instance_state(instance)
    if not state.persistent:
        return None
    columns = _update_columns(state.mapper)
    # Only attributes set since the load have a committed value recorded, and a column changed when
    # its value differs from that one by its type's comparison, as the ORM's history decides it (read
    # here without building the history of every attribute, as `InstanceState.attrs` would).
    touched = state.committed_state
    values = state.dict
    assignments: list[str] = []
    parameters: list[Any] = []
    written: list[str] = []
    for key, (name, is_json) in columns.items():  # the mapper's order: one SQL text per set of columns
        if key not in touched:
            continue
        value = values.get(key, NO_VALUE)
        impl = state.manager[key].impl
        if value is NO_VALUE:  # deleted, not set: as rare as it is odd, the ORM's own answer
            if not impl.get_history(state, values).has_changes():
                continue
            value = None
        elif impl.is_equal(value, touched[key]) is True:
            continue
        number = first_parameter + len(parameters)
        if is_json:
            assignments.append(f'"{name}" = ${number}::jsonb')
            parameters.append(orjson.dumps(value).decode())
        else:
            assignments.append(f'"{name}" = ${number}')
            parameters.append(value)
        written.append(key)
    if not assignments:
        return None
    table = state.mapper.local_table
    assert isinstance(table, Table)
    (key_column,) = state.mapper.primary_key
    identity = state.identity
    assert identity is not None  # persistent
    # marked written: every touched column here (written, or set to its committed value) is committed
    for key in touched.keys() & columns.keys():
        set_committed_value(instance, key, values.get(key))
    number = first_parameter + len(parameters)
    # names from the mapper, values as parameters
    sql = f'UPDATE "{table.name}" SET {", ".join(assignments)} WHERE "{key_column.name}" = ${number}'  # noqa: S608
    return Write(sql, (*parameters, identity[0]))


@cache
def _update_columns(mapper: Mapper[Any]) -> dict[str, tuple[str, bool]]:
    """A mapper's column attributes by key: the column's name and whether it is JSON, in mapper order."""
    return {
        attribute.key: (attribute.columns[0].name, isinstance(attribute.columns[0].type, JSON))
        for attribute in mapper.column_attrs
    }


def from_row(model: type[Model], row: Mapping[str, Any]) -> Model:
    """An instance holding a row's values, attached to no session: a row read on the driver, or a new
    row a driver statement inserts (then `inserted_row`, or nothing: an event); never one for the ORM's
    flush to write.

    A statement on the driver returns plain rows; building the model through its constructor (every
    attribute through the ORM's instrumentation) costs more than the round trip on hot paths.
    """
    if not model.__mapper__.configured:
        configure_mappers()  # what the first query would do: the attributes need their mapper
    instance: Model = model.__mapper__.class_manager.new_instance()
    instance.__dict__.update(row)
    return instance


def select_list(model: type[Base], alias: str, prefix: str = "") -> str:
    """Every column of the model's table as `alias."column" AS "<prefix><attribute>"`, for a driver
    statement whose rows `loaded_row` (or `from_row`) turns into instances; `prefix` keeps them apart
    from other columns of the same row. Names from the mapper only."""
    return ", ".join(
        f'{alias}."{attribute.columns[0].name}" AS "{prefix}{attribute.key}"'
        for attribute in model.__mapper__.column_attrs
    )


def loaded_row(session: AsyncSession, model: type[Model], row: Mapping[str, Any], prefix: str = "") -> Model:
    """A row read on the driver (`select_list`), made the session's persistent instance as if the ORM
    had loaded it: its changes are tracked and written by a flush or taken over by `pending_update`,
    without the ORM's SELECT machinery (statement compilation, result processing, loading).

    An instance of the same row the session already holds is answered as it is, as the ORM's own
    query would (no `populate_existing`).
    """
    columns, key_columns = _row_shape(model, prefix)
    values = {key: row[name] for key, name in columns}
    identity = model.__mapper__.identity_key_from_primary_key(tuple(values[key] for key in key_columns))
    sync_session = session.sync_session
    identity_map = sync_session.identity_map
    held = identity_map.get(identity)
    if held is not None:
        return held  # type: ignore[no-any-return]
    instance = from_row(model, values)
    make_transient_to_detached(instance)  # its identity from the primary key, every column as committed
    session.add(instance)  # detached to persistent: no SQL (the models have no cascades to walk)
    return instance


@cache
def _row_shape(model: type[Base], prefix: str) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...]]:
    """A model's attributes with the names `select_list` gave their columns, and its primary key's
    attributes: worked out once, not on every row."""
    if not model.__mapper__.configured:
        configure_mappers()  # what the first query would do: the attributes need their mapper
    mapper = model.__mapper__
    columns = tuple((attribute.key, prefix + attribute.key) for attribute in mapper.column_attrs)
    return columns, tuple(mapper.get_property_by_column(column).key for column in mapper.primary_key)


def inserted_row(session: AsyncSession, instance: Base, **stamped: Any) -> None:
    """A new instance whose row a driver statement inserted, made the session's persistent row as if a
    flush had written it; `stamped`: the values the database chose (its RETURNING).

    Every column must then hold its value: one missing would be loaded on first read, which under
    asyncio fails (MissingGreenlet), so it is refused here instead.
    """
    state = inspect(instance)
    state.dict.update(stamped)
    missing = [attribute.key for attribute in state.mapper.column_attrs if attribute.key not in state.dict]
    if missing:
        raise ValueError(f"{type(instance).__name__} inserted without {missing}")
    make_transient_to_detached(instance)  # every column as committed
    session.add(instance)  # detached to persistent: no SQL
