"""The relay: publishes committed operations to the broker, in batches, off the request path.

Woken by PostgreSQL NOTIFY the moment a transaction commits an operation, and by a timer for
retries that fell due, for messages no worker took (re-sent after `redrive_after`) and for leases
that ran out. If the broker is down, nothing is marked published and the next pass tries again:
a lost or unsent message delays work, never loses it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol

import structlog
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from moneyrail.db.uow import UnitOfWork
from moneyrail.engine import repository
from moneyrail.engine.broker import message_for
from moneyrail.engine.service import expire_leases

logger = structlog.get_logger("moneyrail.relay")


class Broker(Protocol):
    # Any, not object: a dramatiq broker takes only its own Message, and a protocol's parameter must
    # accept no more than the implementation does
    def enqueue(self, message: Any, *, delay: int | None = None) -> object: ...


@dataclass(frozen=True)
class RelayPass:
    published: int
    leases_expired: int


def _publish(broker: Broker, due: list[repository.DueOperation]) -> None:
    """One message per operation, or per up to `batch_size` of one actor's (its type's policy)."""
    packed: dict[tuple[str, str, int], list[str]] = {}
    for operation in due:  # longest due first, and so within each message
        packed.setdefault((operation.actor_name, operation.queue_name, operation.batch_size), []).append(
            operation.id
        )
    for (actor_name, queue_name, batch_size), operation_ids in packed.items():
        for start in range(0, len(operation_ids), batch_size):
            broker.enqueue(message_for(actor_name, queue_name, operation_ids[start : start + batch_size]))


async def relay_once(
    sessionmaker: async_sessionmaker[AsyncSession],
    broker: Broker,
    *,
    redrive_after: timedelta,
    batch_size: int = 500,
) -> RelayPass:
    async with UnitOfWork(sessionmaker) as uow:
        expired = await expire_leases(uow.session, batch_size)
        await uow.commit()

    published = 0
    while True:
        async with UnitOfWork(sessionmaker) as uow:
            due = await repository.take_due_for_publishing(uow.session, redrive_after, batch_size)
            if not due:
                break
            # Rows stay locked while we send, so two relays never send the same batch. A crash between
            # sending and committing re-sends later: duplicates are harmless, the worker's claim lets
            # one delivery act. The broker's client blocks, so it sends from a thread: a slow or hung
            # broker delays only the relay, not the scheduler's jobs and leader check on this loop.
            await asyncio.to_thread(_publish, broker, due)
            await uow.commit()
        published += len(due)
        if len(due) < batch_size:
            break
    if published or expired:
        logger.info("relay_pass", published=published, leases_expired=expired)
    return RelayPass(published=published, leases_expired=expired)
