"""The sandbox processor's keyed call, which every call of it makes (`KeyedCalls`, the base of the
`SandboxProcessor` and of the groups of its calls kept in modules of their own)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from moneyrail.db.uow import UnitOfWork
from moneyrail.kit.tenant import Tenant
from moneyrail.processor.interface import ProcessorRefused, ProcessorUnavailable

from .books import Answer, AnsweredConcurrently, keyed, open_books


class KeyedCalls:
    def __init__(self, sessionmaker: async_sessionmaker[AsyncSession]) -> None:
        self._sessionmaker = sessionmaker

    @property
    def sessionmaker(self) -> async_sessionmaker[AsyncSession]:
        """The simulator's own pool (processor/provider.py reads the tenants' settings on it too)."""
        return self._sessionmaker

    async def _call(
        self,
        tenant: Tenant,
        operation_type: str,
        idempotency_key: str,
        request: dict[str, Any],
        answer: Answer,
    ) -> dict[str, Any]:
        """One keyed call in one transaction: the stored answer, or a fresh one recorded with its effects.

        `answer` refuses (ProcessorRefused) before it changes anything, and locks what it changes, so a
        refusal is recorded alone and concurrent calls on one authorization take turns.
        """
        failure: ProcessorUnavailable | ProcessorRefused | None = None
        async with UnitOfWork(self._sessionmaker) as uow:
            books = await open_books(uow, tenant)
            try:
                response = await keyed(books, operation_type, idempotency_key, request, answer)
            except AnsweredConcurrently:
                await uow.rollback()
                return await self._call(tenant, operation_type, idempotency_key, request, answer)
            except (ProcessorUnavailable, ProcessorRefused) as refused:
                failure = refused  # recorded (or a fault used up, or a refusal replayed): commit first
            await uow.commit()
        if failure is not None:
            raise failure
        return response
