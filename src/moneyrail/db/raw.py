"""The unit of work's own asyncpg connection, for the few statements on every request's path.

SQLAlchemy's statement building costs more CPU than the round trip itself for one-row lookups run on
every request (authentication, the idempotency claim). Those use the same connection and transaction
as the unit of work, so they commit or roll back with it.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

_KEY = "moneyrail.driver_connection"


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
                await start()
            else:  # another SQLAlchemy release: a statement through SQLAlchemy begins the transaction
                await connection.exec_driver_sql("SELECT 1")
        cached = pooled.driver_connection
        session.info[_KEY] = cached
    return cached


def forget_driver_connection(session: AsyncSession) -> None:
    """After commit or rollback the pool may hand the session another connection."""
    session.info.pop(_KEY, None)
