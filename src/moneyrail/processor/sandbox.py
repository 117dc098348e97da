"""The sandbox processor: a deterministic simulation of the card network and banks.

It keeps its own books in its own transactions, apart from moneyrail's unit of work, because it plays
an outside system: a call it answered stays answered even if moneyrail's transaction then rolls back
or its worker is killed. Repeating an idempotency key returns the stored answer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from moneyrail.db.raw import driver_connection
from moneyrail.db.uow import UnitOfWork
from moneyrail.kit.ids import random_base62
from moneyrail.kit.tenant import Tenant
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
            # the simulator answers every money operation: straight on the driver (db/raw.py)
            connection = await driver_connection(uow.session)
            key = (tenant.installation_id, tenant.livemode, idempotency_key)
            stored = await connection.fetchrow(_STORED_CALL, *key)
            if stored is not None:
                return _replay(stored, request)

            mode = await connection.fetchval(
                _TAKE_FAULT, tenant.installation_id, tenant.livemode, operation_type
            )
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
            inserted = await connection.fetchval(
                _RECORD_CALL,
                *key,
                operation_type,
                orjson.dumps(request).decode(),
                orjson.dumps(response).decode(),
                refusal is None,
            )
            if inserted is None:  # a concurrent call with this key answered first: use its answer
                await uow.rollback()
                return await self._call(tenant, operation_type, idempotency_key, request, answer)
            await uow.commit()
        if refusal is not None:
            raise refusal
        return response


_STORED_CALL = """
    SELECT request, response, succeeded FROM sandbox_processor_calls
    WHERE installation_id = $1 AND livemode = $2 AND idempotency_key = $3
    FOR UPDATE
"""
_TAKE_FAULT = """
    UPDATE sandbox_processor_faults SET remaining = remaining - 1, updated_at = now()
    WHERE installation_id = $1 AND livemode = $2 AND operation_type = $3 AND remaining > 0
    RETURNING mode
"""
_RECORD_CALL = """
    INSERT INTO sandbox_processor_calls
        (installation_id, livemode, idempotency_key, operation_type, request, response, succeeded)
    VALUES ($1, $2, $3, $4, $5, $6, $7)
    ON CONFLICT DO NOTHING
    RETURNING idempotency_key
"""


def _json(value: Any) -> Any:
    # SQLAlchemy's asyncpg adapter registers a JSON codec on its connections: jsonb arrives decoded
    return orjson.loads(value) if isinstance(value, str | bytes) else value


def _replay(stored: Any, request: dict[str, Any]) -> dict[str, Any]:
    if _json(stored["request"]) != request:
        # a real processor refuses a key reused with other parameters; so does the sandbox
        raise ProcessorRefused("idempotency_key_reused", "The key was used with different parameters.")
    response: dict[str, Any] = _json(stored["response"])
    if not stored["succeeded"]:
        error = response["error"]
        raise ProcessorRefused(error["code"], error["message"])
    return response
