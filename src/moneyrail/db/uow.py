"""The unit of work: the only place in moneyrail that commits.

A request (see `api/routing.py`) and an actor run each open one, call service functions that
flush but never commit, and commit at the edge.

The session is made on first use, and its connection is not SQLAlchemy's until the ORM needs one: a
unit of work whose statements all go to the driver (db/raw.py) runs them on a pooled connection it
checked out itself, and commits or rolls that back here, with no greenlet hop. Either way one
transaction, committed here.
"""

from __future__ import annotations

from types import TracebackType

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from moneyrail.db.raw import (
    UNIT_OF_WORK_SESSION,
    end_driver_transaction,
    forget_driver_connection,
    release_bound_connection,
)


class UnitOfWork:
    def __init__(self, sessionmaker: async_sessionmaker[AsyncSession]) -> None:
        self._sessionmaker = sessionmaker
        self._session: AsyncSession | None = None
        self._open = False

    @property
    def session(self) -> AsyncSession:
        if not self._open:
            raise RuntimeError("the unit of work is not open")
        if self._session is None:
            self._session = self._sessionmaker()
            self._session.info[UNIT_OF_WORK_SESSION] = True  # its driver statements may skip SQLAlchemy
        return self._session

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
        used_by_the_orm = _orm_has_work(session) or len(session.identity_map) > 0
        try:
            if exc_type is not None and used_by_the_orm:
                await session.rollback()
        finally:
            try:
                if used_by_the_orm:  # else it holds nothing to close (and closing costs a greenlet hop)
                    await session.close()
            finally:
                await release_bound_connection(session)  # a transaction still open is rolled back there

    async def commit(self) -> None:
        await commit(self.session)

    async def rollback(self) -> None:
        await rollback(self.session)


async def commit(session: AsyncSession) -> None:
    """Commit the unit of work's transaction, whether the ORM or only the driver ran in it."""
    forget_driver_connection(session)
    if _orm_has_work(session):
        await session.commit()
    await end_driver_transaction(session, commit=True)


async def rollback(session: AsyncSession) -> None:
    """Undo the unit of work's transaction, whether the ORM or only the driver ran in it."""
    forget_driver_connection(session)
    await session.rollback()
    await end_driver_transaction(session, commit=False)


def _orm_has_work(session: AsyncSession) -> bool:
    """Whether the session's commit has anything to do: a transaction it began, or objects to flush."""
    return session.in_transaction() or bool(session.new or session.dirty or session.deleted)
