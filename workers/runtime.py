"""What every actor shares in a worker process: one async engine on dramatiq's event-loop thread."""

from __future__ import annotations

import os
import socket
from collections.abc import Sequence
from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from moneyrail.config import get_settings
from moneyrail.db.engine import create_engine, create_sessionmaker
from moneyrail.engine.service import (
    BatchHandler,
    Handler,
    PhasedHandler,
    RunResult,
    run_operations,
    run_phased_operations,
)
from moneyrail.processor import provider
from moneyrail.processor.interface import Processor

WORKER_ID = f"{socket.gethostname()}:{os.getpid()}"
_sessionmaker: async_sessionmaker[AsyncSession] | None = None


def sessionmaker() -> async_sessionmaker[AsyncSession]:
    # Created lazily on the event-loop thread that runs async actors, so its connections belong to that loop.
    global _sessionmaker
    if _sessionmaker is None:
        _sessionmaker = create_sessionmaker(create_engine(get_settings()))
    return _sessionmaker


async def run(
    operation_ids: Sequence[str], handler: Handler, batch_handler: BatchHandler | None = None
) -> list[RunResult]:
    """The body of every operation actor: claim, call the domain's service function, record. A message
    carries one operation's id, or several of one type whose policy runs them together (through
    `batch_handler` at once, when the domain has a set-based one)."""
    settings = get_settings()
    return await run_operations(
        sessionmaker(),
        operation_ids,
        handler,
        worker=WORKER_ID,
        lease=timedelta(seconds=settings.operation_lease_seconds),
        batch_handler=batch_handler,
    )


async def run_phased(operation_ids: Sequence[str], handler: PhasedHandler) -> list[RunResult]:
    """`run` for a handler that calls the processor: its call is made between two units of work, with
    no transaction, row lock or pooled connection held (engine/service.py, `PhasedHandler`)."""
    settings = get_settings()
    return await run_phased_operations(
        sessionmaker(),
        operation_ids,
        handler,
        worker=WORKER_ID,
        lease=timedelta(seconds=settings.operation_lease_seconds),
    )


def processor() -> Processor:
    """The processor behind every actor: each call made on the processor of its tenant's environment
    (the simulator on its own connection pool, or Stripe; see processor/provider.py)."""
    return provider.routed()
