"""Periodic work that domains register and the leading scheduler runs.

Work due per row (renewals, expiries) is found by querying the database inside one job, never stored
as one scheduler job per row: a job is a sweep, safe to run late, twice, or after downtime.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession

Sweep = Callable[[AsyncSession], Awaitable[int]]  # returns how many things it did, for the log


@dataclass(frozen=True)
class PeriodicJob:
    name: str
    every: timedelta
    sweep: Sweep


_jobs: dict[str, PeriodicJob] = {}


def register_periodic(name: str, every: timedelta, sweep: Sweep) -> None:
    _jobs[name] = PeriodicJob(name, every, sweep)


def periodic_jobs() -> list[PeriodicJob]:
    return sorted(_jobs.values(), key=lambda job: job.name)
