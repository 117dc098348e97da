"""Transfer work on the `money` queue: allocation commits and one-recipient transfers."""

from __future__ import annotations

from collections.abc import Sequence

import dramatiq
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.models import Operation
from moneyrail.transfers import commit as transfer_commit
from moneyrail.transfers import service as transfers
from workers import runtime
from workers.broker import broker


async def _commit(session: AsyncSession, operation: Operation) -> None:
    await transfer_commit.process_commit(session, operation, runtime.processor())


async def _commit_together(session: AsyncSession, operations: Sequence[Operation]) -> None:
    await transfer_commit.process_commits(session, operations, runtime.processor())


@dramatiq.actor(actor_name=transfers.COMMIT_ACTOR, queue_name="money", broker=broker)
async def commit(*operation_ids: str) -> None:
    await runtime.run(operation_ids, _commit, _commit_together)
