"""The scheduler process: APScheduler 3 running the periodic jobs of every domain."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import structlog
from apscheduler.schedulers.blocking import BlockingScheduler

from moneyrail.api.idempotency import purge_expired
from moneyrail.config import get_settings
from moneyrail.db.engine import create_engine, create_sessionmaker
from moneyrail.db.uow import UnitOfWork
from moneyrail.logging import configure_logging

logger = structlog.get_logger("moneyrail.scheduler")


async def purge_idempotency_records() -> None:
    settings = get_settings()
    engine = create_engine(settings)
    try:
        async with UnitOfWork(create_sessionmaker(engine)) as uow:
            purged = await purge_expired(uow.session, timedelta(hours=settings.idempotency_retention_hours))
            await uow.commit()
        logger.info("idempotency_records_purged", count=purged)
    finally:
        await engine.dispose()


def main() -> None:
    settings = get_settings()
    configure_logging(settings.log_level, json=settings.log_json)
    # coalesce: after downtime run a missed job once, not once per missed slot;
    # misfire_grace_time: still run a job that is late (APScheduler 3 skips one >1 s late by default).
    scheduler = BlockingScheduler(
        timezone="UTC", job_defaults={"coalesce": True, "misfire_grace_time": 300, "max_instances": 1}
    )
    scheduler.add_job(
        lambda: asyncio.run(purge_idempotency_records()), "interval", minutes=10, id="idempotency.purge"
    )
    logger.info("scheduler_started", jobs=[job.id for job in scheduler.get_jobs()])
    try:
        scheduler.start()
    except (KeyboardInterrupt, SystemExit):
        logger.info("scheduler_stopped")


if __name__ == "__main__":
    main()
