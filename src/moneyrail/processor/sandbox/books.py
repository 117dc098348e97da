"""The simulator's books for one tenant, and the keyed call: a stored answer replayed, or a fresh one
recorded with its effects in the books' own transaction."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.db.raw import driver_connection
from moneyrail.db.uow import UnitOfWork
from moneyrail.engine.clock import tenant_now
from moneyrail.kit.ids import ID_RANDOM_LENGTH, random_base62
from moneyrail.kit.tenant import Tenant
from moneyrail.processor.interface import ProcessorRefused, ProcessorUnavailable

from . import statements as sql

# The authorization state machine: the statuses each change may start from, and the refusal otherwise.
ALLOWED_FROM: dict[str, tuple[frozenset[str], str]] = {
    "complete_authentication": (
        frozenset({"requires_action"}),
        "authorization_not_awaiting_authentication",
    ),
    "capture": (frozenset({"authorized"}), "authorization_not_capturable"),
    "cancel": (frozenset({"authorized", "requires_action"}), "authorization_not_cancelable"),
    "increment_authorization": (frozenset({"authorized"}), "authorization_not_incrementable"),
    "refund": (frozenset({"captured"}), "authorization_not_refundable"),
}


def sandbox_id(prefix: str) -> str:
    return f"{prefix}_{random_base62(ID_RANDOM_LENGTH)}"


@dataclass(frozen=True)
class Books:
    """The simulator's records for one tenant, inside one of its own transactions."""

    tenant: Tenant
    session: AsyncSession
    connection: Any  # the asyncpg connection under the session's transaction

    async def now(self) -> datetime:
        return await tenant_now(self.session, self.tenant)

    async def take_fault(self, operation_type: str) -> str | None:
        mode: str | None = await self.connection.fetchval(
            sql.TAKE_FAULT, self.tenant.installation_id, self.tenant.livemode, operation_type
        )
        return mode

    async def locked_authorization(self, authorization_id: str) -> Any:
        row = await self.connection.fetchrow(
            sql.LOCK_AUTHORIZATION, authorization_id, self.tenant.installation_id, self.tenant.livemode
        )
        if row is None:  # another tenant's authorization looks exactly like an unknown one
            raise ProcessorRefused("no_such_authorization", f"No such authorization: {authorization_id}.")
        return row

    async def locked_for(self, change: str, authorization_id: str) -> Any:
        """The authorization, locked until the answer is recorded, when `change` may start from its status."""
        row = await self.locked_authorization(authorization_id)
        allowed, refusal_code = ALLOWED_FROM[change]
        if row["status"] not in allowed:
            raise ProcessorRefused(refusal_code, f"The authorization is {row['status']}.")
        return row


Answer = Callable[[Books], Awaitable[dict[str, Any]]]


class AnsweredConcurrently(Exception):
    """A concurrent call with the same key recorded its answer first: roll back and ask again."""


async def keyed(
    books: Books, operation_type: str, idempotency_key: str, request: dict[str, Any], answer: Answer
) -> dict[str, Any]:
    """One keyed call in the caller's transaction: the stored answer, or a fresh one recorded with its
    effects. Raises the refusal (recorded with the call), ProcessorUnavailable for an injected transient
    fault (used up: the caller commits), AnsweredConcurrently (the caller rolls back)."""
    key = (books.tenant.installation_id, books.tenant.livemode, idempotency_key)
    # the stored answer, or else an injected fault used up: one round trip
    stored = await books.connection.fetchrow(sql.STORED_CALL_OR_FAULT, *key, operation_type)
    if stored["operation_type"] is not None:
        return replay(stored, operation_type, request)
    mode = stored["fault_mode"]
    if mode == "transient":
        raise injected_unavailable(operation_type)
    refusal: ProcessorRefused | None = None
    if mode == "permanent":
        refusal = injected_refusal(operation_type)
    else:
        try:
            response = await answer(books)
        except ProcessorRefused as refused:
            refusal = refused
    if refusal is not None:
        response = {"error": {"code": refusal.code, "message": refusal.message}}
    inserted = await books.connection.fetchval(
        sql.RECORD_CALL,
        *key,
        operation_type,
        orjson.dumps(request).decode(),
        orjson.dumps(response).decode(),
        refusal is None,
    )
    if inserted is None:
        raise AnsweredConcurrently
    if refusal is not None:
        raise refusal
    return response


def dumps(value: dict[str, Any]) -> str:
    return orjson.dumps(value).decode()


async def open_books(uow: UnitOfWork, tenant: Tenant) -> Books:
    # the simulator answers every money operation: straight on the driver (db/raw.py)
    return Books(tenant, uow.session, await driver_connection(uow.session))


async def fail_if_faulted(uow: UnitOfWork, books: Books, operation_type: str) -> None:
    """For calls without an idempotency key: an injected fault is used up and raised, nothing recorded."""
    mode = await books.take_fault(operation_type)
    if mode is None:
        return
    await uow.commit()
    if mode == "transient":
        raise injected_unavailable(operation_type)
    raise injected_refusal(operation_type)


def injected_unavailable(operation_type: str) -> ProcessorUnavailable:
    return ProcessorUnavailable(f"sandbox processor: injected transient fault on {operation_type}")


def injected_refusal(operation_type: str) -> ProcessorRefused:
    return ProcessorRefused("processor_error", f"injected permanent fault on {operation_type}")


def json_value(value: Any) -> Any:
    # SQLAlchemy's asyncpg adapter registers a JSON codec on its connections: jsonb arrives decoded
    return orjson.loads(value) if isinstance(value, str | bytes) else value


def replay(stored: Any, operation_type: str, request: dict[str, Any]) -> dict[str, Any]:
    if stored["operation_type"] != operation_type or json_value(stored["request"]) != request:
        # a real processor refuses a key reused with other parameters; so does the sandbox
        raise ProcessorRefused("idempotency_key_reused", "The key was used with different parameters.")
    response: dict[str, Any] = json_value(stored["response"])
    if not stored["succeeded"]:
        error = response["error"]
        raise ProcessorRefused(error["code"], error["message"])
    return response
