"""The unit of work: the only place in moneyrail that commits.

A request (see `api/routing.py`) and an actor run each open one, call service functions that
flush but never commit, and commit at the edge.
"""

from __future__ import annotations

from types import TracebackType

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from moneyrail.db.raw import forget_driver_connection


class UnitOfWork:
    def __init__(self, sessionmaker: async_sessionmaker[AsyncSession]) -> None:
        self._sessionmaker = sessionmaker
        self._session: AsyncSession | None = None

    @property
    def session(self) -> AsyncSession:
        if self._session is None:
            raise RuntimeError("the unit of work is not open")
        return self._session

    async def __aenter__(self) -> UnitOfWork:
        self._session = self._sessionmaker()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        session = self.session
        forget_driver_connection(session)
        try:
            if exc_type is not None:
                await session.rollback()
        finally:
            await session.close()
            self._session = None

    async def commit(self) -> None:
        forget_driver_connection(self.session)
        await self.session.commit()

    async def rollback(self) -> None:
        forget_driver_connection(self.session)
        await self.session.rollback()
