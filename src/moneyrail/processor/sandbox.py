"""The sandbox processor: a deterministic simulation of the card network and banks.

It keeps its own books in its own transactions, apart from moneyrail's unit of work, because it plays
an outside system: a call it answered stays answered even if moneyrail's transaction then rolls back
or its worker is killed. Repeating an idempotency key returns the stored answer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from moneyrail.db.uow import UnitOfWork
from moneyrail.kit.ids import random_base62
from moneyrail.kit.tenant import Tenant
from moneyrail.models import SandboxProcessorCall, SandboxProcessorFault
from moneyrail.processor.interface import PayoutResult, ProcessorRefused, ProcessorUnavailable, TransferResult

# Sandbox bank accounts with a scripted outcome (CONVENTIONS.md §13).
CLOSED_BANK_ACCOUNT = "000111111116"


class SandboxProcessor:
    def __init__(self, sessionmaker: async_sessionmaker[AsyncSession]) -> None:
        self._sessionmaker = sessionmaker

    async def create_transfer(
        self, tenant: Tenant, *, idempotency_key: str, amount: int, currency: str, destination: str
    ) -> TransferResult:
        request = {"amount": amount, "currency": currency, "destination": destination}
        answer = await self._call(
            tenant,
            "transfer",
            idempotency_key,
            request,
            lambda: {"id": f"sbx_tr_{random_base62(20)}", **request},
        )
        return TransferResult(answer["id"], answer["amount"], answer["currency"], answer["destination"])

    async def create_payout(
        self, tenant: Tenant, *, idempotency_key: str, amount: int, currency: str, bank_account: str
    ) -> PayoutResult:
        request = {"amount": amount, "currency": currency, "bank_account": bank_account}

        def answer_payout() -> dict[str, Any]:
            if bank_account == CLOSED_BANK_ACCOUNT:
                raise ProcessorRefused("account_closed", "The destination bank account is closed.")
            return {"id": f"sbx_po_{random_base62(20)}", "status": "in_transit", **request}

        answer = await self._call(tenant, "payout", idempotency_key, request, answer_payout)
        return PayoutResult(answer["id"], answer["amount"], answer["currency"], answer["status"])

    async def _call(
        self,
        tenant: Tenant,
        operation_type: str,
        idempotency_key: str,
        request: dict[str, Any],
        answer: Callable[[], dict[str, Any]],
    ) -> dict[str, Any]:
        async with UnitOfWork(self._sessionmaker) as uow:
            session = uow.session
            stored = await session.scalar(
                select(SandboxProcessorCall)
                .where(
                    SandboxProcessorCall.installation_id == tenant.installation_id,
                    SandboxProcessorCall.livemode == tenant.livemode,
                    SandboxProcessorCall.idempotency_key == idempotency_key,
                )
                .with_for_update()
            )
            if stored is not None:
                return _replay(stored, request)

            mode = await self._take_fault(session, tenant, operation_type)
            if mode == "transient":
                await uow.commit()  # the fault is used up even though the call "failed"
                raise ProcessorUnavailable(f"sandbox processor: injected transient fault on {operation_type}")
            refusal: ProcessorRefused | None = None
            if mode == "permanent":
                refusal = ProcessorRefused("processor_error", f"injected permanent fault on {operation_type}")
            else:
                try:
                    response = answer()
                except ProcessorRefused as refused:
                    refusal = refused
            if refusal is not None:
                response = {"error": {"code": refusal.code, "message": refusal.message}}
            inserted = await session.execute(
                insert(SandboxProcessorCall)
                .values(
                    installation_id=tenant.installation_id,
                    livemode=tenant.livemode,
                    idempotency_key=idempotency_key,
                    operation_type=operation_type,
                    request=request,
                    response=response,
                    succeeded=refusal is None,
                )
                .on_conflict_do_nothing()
                .returning(SandboxProcessorCall.idempotency_key)
            )
            if inserted.scalar() is None:  # a concurrent call with this key answered first: use its answer
                await uow.rollback()
                return await self._call(tenant, operation_type, idempotency_key, request, answer)
            await uow.commit()
        if refusal is not None:
            raise refusal
        return response

    @staticmethod
    async def _take_fault(session: AsyncSession, tenant: Tenant, operation_type: str) -> str | None:
        mode = await session.scalar(
            update(SandboxProcessorFault)
            .where(
                SandboxProcessorFault.installation_id == tenant.installation_id,
                SandboxProcessorFault.livemode == tenant.livemode,
                SandboxProcessorFault.operation_type == operation_type,
                SandboxProcessorFault.remaining > 0,
            )
            .values(remaining=SandboxProcessorFault.remaining - 1)
            .returning(SandboxProcessorFault.mode)
        )
        return str(mode) if mode is not None else None


def _replay(stored: SandboxProcessorCall, request: dict[str, Any]) -> dict[str, Any]:
    if stored.request != request:
        # a real processor refuses a key reused with other parameters; so does the sandbox
        raise ProcessorRefused("idempotency_key_reused", "The key was used with different parameters.")
    if not stored.succeeded:
        error = stored.response["error"]
        raise ProcessorRefused(error["code"], error["message"])
    return stored.response
