"""Group commit for standalone postings: concurrent callers share one statement and one commit.

A posting that commits alone pays for a round trip, a statement and a commit (a WAL flush) of its own,
and most of that does not grow with the number of journal transactions the statement carries. So the
writer queues each caller's transaction and sends what is queued as one statement, outside any
transaction, where PostgreSQL commits it by itself, each transaction's commit-time balance check
included; every caller returns once that commit is durable. A caller alone is a batch of one: nothing
waits for company. At most `max_in_flight` statements run at once, on that many pooled connections;
what arrives meanwhile makes the next batch.

A batch fails or succeeds whole, so one transaction the database refuses must not sink the others:
after a refusal each is sent again on its own, and each caller gets its own answer. Those a batch
did not write (an account used for the first time, an idempotency key already used) take the single
path too, which creates accounts and replays keys. An error that leaves the outcome unknown (the
connection lost) is not retried: each caller gets it, as with a statement of its own.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import asyncpg
import structlog
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from moneyrail.db.raw import autocommit_connection

from . import repository

logger = structlog.get_logger("moneyrail.ledger")

MAX_BATCH = 64
MAX_IN_FLIGHT = 2  # statements at once: enough to keep the database's cores busy while one returns

PostAlone = Callable[
    [async_sessionmaker[AsyncSession], repository.NewJournalTransaction],
    Awaitable[repository.JournalRecord],
]


@dataclass(slots=True)
class _Queued:
    entry: repository.NewJournalTransaction
    written: asyncio.Future[repository.JournalRecord] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class JournalWriter:
    """The group committer of one sessionmaker (so of one event loop and one pool)."""

    def __init__(
        self, post_alone: PostAlone, *, max_batch: int = MAX_BATCH, max_in_flight: int = MAX_IN_FLIGHT
    ) -> None:
        self._post_alone = post_alone
        self._max_batch = max_batch
        self._max_in_flight = max_in_flight
        self._queue: list[_Queued] = []
        self._in_flight = 0
        self._senders: set[asyncio.Task[None]] = set()  # held: the loop keeps only weak references

    async def post(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        entry: repository.NewJournalTransaction,
    ) -> repository.JournalRecord:
        queued = _Queued(entry)
        self._queue.append(queued)
        if self._in_flight < self._max_in_flight:
            self._in_flight += 1
            sender = asyncio.create_task(self._send_queued(sessionmaker))
            self._senders.add(sender)
            sender.add_done_callback(self._senders.discard)
        return await queued.written

    async def _send_queued(self, sessionmaker: async_sessionmaker[AsyncSession]) -> None:
        try:
            while self._queue:
                batch = self._queue[: self._max_batch]
                del self._queue[: self._max_batch]
                await self._send(sessionmaker, batch)
        finally:
            self._in_flight -= 1

    async def _send(self, sessionmaker: async_sessionmaker[AsyncSession], batch: list[_Queued]) -> None:
        try:
            written = await _write(sessionmaker, batch)
            for queued in batch:
                journal = written.get(queued.entry.id)
                if journal is not None:
                    _settle(queued, journal)
                    continue
                try:  # refused with the others, a new account, a repeated key: on its own
                    alone = await self._post_alone(sessionmaker, queued.entry)
                except Exception as error:
                    _settle(queued, error)
                else:
                    _settle(queued, alone)
        except BaseException as error:  # the outcome is unknown: every caller still waiting is told
            for queued in batch:
                _settle(queued, error)
            if not isinstance(error, Exception):
                raise


async def _write(
    sessionmaker: async_sessionmaker[AsyncSession], batch: list[_Queued]
) -> dict[str, repository.JournalRecord]:
    async with autocommit_connection(sessionmaker) as connection:
        try:
            return await repository.insert_transactions(connection, [queued.entry for queued in batch])
        except asyncpg.PostgresError as refusal:  # the server refused it: nothing was committed
            if len(batch) == 1:
                raise
            logger.warning("ledger_batch_refused", transactions=len(batch), error=str(refusal))
            return {}


def _settle(queued: _Queued, outcome: repository.JournalRecord | BaseException) -> None:
    if queued.written.done():  # the caller was cancelled
        return
    if isinstance(outcome, asyncio.CancelledError):
        queued.written.cancel()
    elif isinstance(outcome, BaseException):
        queued.written.set_exception(outcome)
    else:
        queued.written.set_result(outcome)


_writers: weakref.WeakKeyDictionary[async_sessionmaker[AsyncSession], JournalWriter] = (
    weakref.WeakKeyDictionary()
)


def writer_for(sessionmaker: async_sessionmaker[AsyncSession], post_alone: PostAlone) -> JournalWriter:
    writer = _writers.get(sessionmaker)
    if writer is None:
        writer = _writers[sessionmaker] = JournalWriter(post_alone)
    return writer
