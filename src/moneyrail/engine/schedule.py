"""Periodic work that domains register and the leading scheduler runs.

Work due per row (renewals, expiries) is found by querying the database inside one job, never stored
as one scheduler job per row: a job is a sweep, safe to run late, twice, or after downtime.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

Sweep = Callable[[AsyncSession], Awaitable[int]]  # returns how many things it did, for the log
# The caller's commit, offered to work large enough to be done in chunks (100,000 renewals due at one
# instant): called after each whole chunk, so what is done is published at once and a crash loses only
# the chunk in hand, which stays due for the next run. The caller still commits at its end.
CommitChunk = Callable[[], Awaitable[None]]
ChunkedSweep = Callable[[AsyncSession, CommitChunk], Awaitable[int]]
# A sweep that calls the processor (an outside system): it opens its own units of work, so that none is
# open while a call is on the network (ARCHITECTURE.md, "The processor is an outside system").
OutsideSweep = Callable[[async_sessionmaker[AsyncSession]], Awaitable[int]]


@dataclass(frozen=True)
class PeriodicJob:
    name: str
    every: timedelta
    sweep: Sweep | None
    in_chunks: ChunkedSweep | None = None  # when set, the scheduler runs this one with its commit
    outside: OutsideSweep | None = None  # when set, the scheduler gives it the sessionmaker alone


_jobs: dict[str, PeriodicJob] = {}


def register_periodic(name: str, every: timedelta, sweep: Sweep) -> None:
    _jobs[name] = PeriodicJob(name, every, sweep)


async def commit_at_the_end() -> None:
    """The `CommitChunk` of a caller that commits everything once, at its end."""


def register_periodic_in_chunks(name: str, every: timedelta, sweep: ChunkedSweep) -> None:
    """A sweep that commits each whole chunk through the scheduler's `CommitChunk`. Its `sweep` (for
    callers without one) does the same work in their one transaction."""

    async def in_one_transaction(session: AsyncSession) -> int:
        return await sweep(session, commit_at_the_end)

    _jobs[name] = PeriodicJob(name, every, in_one_transaction, in_chunks=sweep)


def register_periodic_outside(name: str, every: timedelta, sweep: OutsideSweep) -> None:
    """A sweep that calls the processor: run with no unit of work of the caller's (`OutsideSweep`)."""
    _jobs[name] = PeriodicJob(name, every, None, outside=sweep)


def periodic_jobs() -> list[PeriodicJob]:
    return sorted(_jobs.values(), key=lambda job: job.name)
