"""The unit of work: the only place in moneyrail that commits.

A request (see `api/routing.py`) and an actor run each open one, call service functions that
flush but never commit, and commit at the edge.

Its SQLAlchemy session is made on the first use of `session`, never before: making one costs more
than the intake's whole SQL statement (mostly SQLAlchemy's weak registry of sessions), and the intake
runs driver statements only. So service and repository functions take one of two things:

- the `AsyncSession`, when they run ORM statements or need the unit of work's transaction: the
  default, most of moneyrail;
- the `UnitOfWork` itself, when their usual path runs lone driver statements only (db/raw.py,
  `lone_statement_connection`: a read of committed state, or a write that commits by itself): the
  key lookups (`installations.service.find_active_*`), the environment's remembered settings
  (`installations.service.publishable_key` and `commission_terms`; all of these also take a session
  from callers that hold one), the customers intake (`customers.service.create_or_reuse_customer`)
  and the payment create (`payments.service.create_payment_intent_answered`). They ask for
  `uow.session` only on a branch that needs the ORM or the transaction; the session made there is
  this unit of work's, so what it does commits here, with the rest, in one transaction.

Endpoints pass `request_uow(request)` to the latter and `request_session(request)` to the former
(api/context.py). A unit of work that never made a session has nothing to commit or roll back: its
lone statements committed, or failed, by themselves.

Once made, the session's connection is not SQLAlchemy's until the ORM needs one: a unit of work
whose statements all go to the driver (db/raw.py) runs them on a pooled connection it checked out
itself, and commits or rolls that back here, with no greenlet hop. Either way one transaction,
committed here.
"""

from __future__ import annotations

from types import TracebackType

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
from sqlalchemy.orm.attributes import instance_state

from moneyrail.db.raw import (
    UNIT_OF_WORK_SESSION,
    end_driver_transaction,
    forget_driver_connection,
    orm_connection_begun,
    release_bound_connection,
)


class UnitOfWork:
    def __init__(self, sessionmaker: async_sessionmaker[AsyncSession]) -> None:
        self._sessionmaker = sessionmaker
        self._session: AsyncSession | None = None
        self._open = False

    @property
    def session(self) -> AsyncSession:
        """The unit of work's session, made on first use (see the module's docstring for who asks)."""
        self._require_open()
        if self._session is None:
            self._session = self._sessionmaker()
            self._session.info[UNIT_OF_WORK_SESSION] = True  # its driver statements may skip SQLAlchemy
        return self._session

    @property
    def made_session(self) -> AsyncSession | None:
        """The session if one was made, without making one: no session, no transaction begun."""
        return self._session

    @property
    def engine(self) -> AsyncEngine:
        """Where a lone statement takes its connection when no transaction has begun."""
        engine = self._sessionmaker.kw["bind"]
        assert isinstance(engine, AsyncEngine)
        return engine

    def _require_open(self) -> None:
        if not self._open:
            raise RuntimeError("the unit of work is not open")

    async def __aenter__(self) -> UnitOfWork:
        self._open = True
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        session = self._session
        self._open = False
        self._session = None
        if session is None:
            return
        forget_driver_connection(session)
        used_by_the_orm = _orm_has_work(session)
        try:
            if exc_type is not None and used_by_the_orm:
                await session.rollback()
        finally:
            try:
                if used_by_the_orm:
                    await session.close()
                else:
                    # nothing pending and no connection in its transaction: closing does no I/O, so
                    # needs no greenlet hop (it detaches the rows read on the driver)
                    session.sync_session.close()
            finally:
                await release_bound_connection(session)  # a transaction still open is rolled back there

    async def commit(self) -> None:
        self._require_open()
        if self._session is not None:  # else nothing began: lone statements committed by themselves
            await commit(self._session)

    async def rollback(self) -> None:
        self._require_open()
        if self._session is not None:
            await rollback(self._session)

    async def end_transaction(self, *, commit: bool) -> None:
        """Commit (or roll back) and give the connection back to the pool; the unit of work stays open.
        For a request that calls an outside system between two transactions (payments/phases.py):
        nothing of the database is held meanwhile, and what the session loaded is detached. The session
        stays the unit of work's (making one costs more than a statement): its next use begins a new
        transaction, on a connection of the pool's. No I/O when no transaction was begun."""
        self._require_open()
        session = self._session
        if session is None:
            return
        if commit:
            await self.commit()
        elif orm_connection_begun(session):
            await self.rollback()
        else:  # the ORM sent nothing (what it holds is dropped below): its rollback would be a greenlet hop
            forget_driver_connection(session)
            await end_driver_transaction(session, commit=False)
        forget_driver_connection(session)
        try:
            session.sync_session.close()  # its transaction ended above: no I/O
        finally:
            await release_bound_connection(session)  # and binds the session to the engine again


async def commit(session: AsyncSession) -> None:
    """Commit the unit of work's transaction, whether the ORM or only the driver ran in it."""
    forget_driver_connection(session)
    if _orm_has_work(session):
        await session.commit()
    else:
        _end_idle_orm_transaction(session)
    await end_driver_transaction(session, commit=True)
    # the bound connection is AUTOCOMMIT to SQLAlchemy: an ORM statement after this must not run there
    await release_bound_connection(session)


async def rollback(session: AsyncSession) -> None:
    """Undo the unit of work's transaction, whether the ORM or only the driver ran in it."""
    forget_driver_connection(session)
    await session.rollback()
    await end_driver_transaction(session, commit=False)
    await release_bound_connection(session)


def _orm_has_work(session: AsyncSession) -> bool:
    """Whether the session's commit has anything to do: objects to flush, or a transaction it began on
    a connection (an ORM statement or flush ran in it). The transaction SQLAlchemy opens when a row
    read on the driver is changed (its autobegin) holds no connection until then: committing it would
    flush nothing and end nothing, for a greenlet hop and its bookkeeping. A row whose changes
    `pending_update` took over stays among the session's dirty ones with no change left on record
    (cheaper to see than `Session.is_modified`, which builds every attribute's history)."""
    if session.new or session.deleted or orm_connection_begun(session):
        return True
    return any(instance_state(instance).committed_state for instance in session.dirty)


def _end_idle_orm_transaction(session: AsyncSession) -> None:
    """Close a session transaction that holds no connection (no I/O, so no greenlet): the next ORM
    use in this unit of work begins a new one, as after a commit."""
    transaction = session.sync_session.get_transaction()
    if transaction is not None:
        transaction.close()
