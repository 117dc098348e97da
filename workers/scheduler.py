"""The scheduler process: one leader runs the periodic jobs and the outbox relay.

Several may run; the one holding a PostgreSQL advisory lock leads, the others wait and poll. The
lock lives on the leader's own connection, so when the leader dies its connection closes, the lock
is released, and a waiting scheduler takes over within `leader_poll_seconds`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
from datetime import timedelta

import asyncpg
import structlog
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from sqlalchemy.engine import make_url

import moneyrail.domains  # noqa: F401 - every sweep, policy and outcome listener
from moneyrail.config import Settings, get_settings
from moneyrail.db.engine import create_engine, create_sessionmaker
from moneyrail.db.uow import UnitOfWork
from moneyrail.engine.broker import build_broker
from moneyrail.engine.leadership import LEADER_LOCK_ID
from moneyrail.engine.outbox import relay_once
from moneyrail.engine.repository import NOTIFY_CHANNEL
from moneyrail.engine.schedule import PeriodicJob, periodic_jobs
from moneyrail.logging import configure_logging

LEADER_NAME = "moneyrail scheduler on {} (pid {})"

logger = structlog.get_logger("moneyrail.scheduler")


def _libpq_url(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


class Scheduler:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.engine = create_engine(settings)
        self.sessionmaker = create_sessionmaker(self.engine)
        assert settings.redis_url is not None
        self.broker = build_broker(settings.redis_url)
        self.stopping = asyncio.Event()
        self.wake_relay = asyncio.Event()

    async def run_job(self, job: PeriodicJob) -> None:
        try:
            if job.outside is not None:  # it opens its own units of work, none across a processor call
                done = await job.outside(self.sessionmaker)
            else:
                async with UnitOfWork(self.sessionmaker) as uow:
                    if job.in_chunks is not None:
                        done = await job.in_chunks(uow.session, uow.commit)
                    else:
                        assert job.sweep is not None
                        done = await job.sweep(uow.session)
                    await uow.commit()
        except Exception:  # one failing sweep must not stop the others; the next run tries again
            logger.exception("job_failed", job=job.name)
            return
        if done:
            logger.info("job_done", job=job.name, count=done)

    async def relay_forever(self) -> None:
        interval = self.settings.relay_interval_seconds
        while not self.stopping.is_set():
            try:
                await relay_once(
                    self.sessionmaker,
                    self.broker,
                    redrive_after=timedelta(seconds=self.settings.relay_redrive_seconds),
                    batch_size=self.settings.relay_batch_size,
                )
            except Exception:  # broker or database down: log, wait, try again; nothing is lost
                logger.exception("relay_pass_failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake_relay.wait(), timeout=interval)
            self.wake_relay.clear()

    async def lead(self, connection: asyncpg.Connection) -> None:
        """Run the jobs while this process holds the leader lock and its connection lives."""
        logger.info("scheduler_leading")
        await connection.add_listener(NOTIFY_CHANNEL, lambda *_: self.wake_relay.set())
        # coalesce: after downtime a missed job runs once, not once per missed slot;
        # misfire_grace_time: a late job still runs (APScheduler 3 skips one >1 s late by default).
        jobs = AsyncIOScheduler(
            timezone="UTC", job_defaults={"coalesce": True, "misfire_grace_time": 300, "max_instances": 1}
        )
        for job in periodic_jobs():
            jobs.add_job(self.run_job, "interval", args=[job], seconds=job.every.total_seconds(), id=job.name)
        jobs.start()
        relay = asyncio.create_task(self.relay_forever())
        try:
            while not self.stopping.is_set():
                # step down at once if the lock's connection is gone: another may lead by now
                await asyncio.wait_for(connection.fetchval("SELECT 1"), timeout=5)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.stopping.wait(), timeout=1)
        finally:
            relay.cancel()
            jobs.shutdown(wait=False)
            with contextlib.suppress(asyncio.CancelledError):
                await relay
            logger.info("scheduler_stepped_down")

    async def run(self) -> None:
        url = _libpq_url(self.settings.database_url or "")
        while not self.stopping.is_set():
            connection: asyncpg.Connection | None = None
            try:
                # named, so that the console can say which scheduler leads (pg_stat_activity)
                connection = await asyncpg.connect(
                    url,
                    server_settings={
                        "application_name": LEADER_NAME.format(socket.gethostname(), os.getpid())
                    },
                )
                if await connection.fetchval("SELECT pg_try_advisory_lock($1)", LEADER_LOCK_ID):
                    await self.lead(connection)
                else:
                    logger.debug("scheduler_waiting_for_leadership")
            # InterfaceError ("connection is closed"): the lock's connection died between two checks,
            # as when PostgreSQL restarts; it is no PostgresError, and must not end the process
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError) as error:
                logger.warning("scheduler_connection_lost", error=type(error).__name__)
            finally:
                if connection is not None:
                    with contextlib.suppress(Exception):
                        await connection.close(timeout=2)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), timeout=self.settings.leader_poll_seconds)
        await self.engine.dispose()


async def main_async() -> None:
    settings = get_settings()
    scheduler = Scheduler(settings)
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, scheduler.stopping.set)
    logger.info("scheduler_started")
    await scheduler.run()
    logger.info("scheduler_stopped")


def main() -> None:
    settings = get_settings()
    configure_logging(settings.log_level, json=settings.log_json)
    asyncio.run(main_async())


if __name__ == "__main__":
    main()
