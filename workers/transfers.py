"""Transfer work on the `money` queue: allocation commits and one-recipient transfers."""

from __future__ import annotations

from collections.abc import Sequence

import dramatiq
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.engine.service import Call
from moneyrail.models import Operation
from moneyrail.transfers import commit as transfer_commit
from moneyrail.transfers import service as transfers
from workers import runtime
from workers.broker import broker


async def _commit(session: AsyncSession, operations: Sequence[Operation]) -> Call | None:
    return await transfer_commit.prepare_commits(session, operations, runtime.processor())


@dramatiq.actor(actor_name=transfers.COMMIT_ACTOR, queue_name="money", broker=broker)
async def commit(*operation_ids: str) -> None:
    await runtime.run_phased(operation_ids, _commit)
