"""The idempotency store (CONVENTIONS.md §4, after the IETF Idempotency-Key draft).

A key is claimed inside the request's own transaction: a transaction-scoped advisory lock marks it
in flight, the stored record (if any) is replayed or refused, and the new record is written by
`routing.py` in the same transaction as the effect, so a response is stored exactly when its
effect commits.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import orjson
from fastapi import Request
from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.api.context import Principal, request_session
from moneyrail.config import get_settings
from moneyrail.db.raw import driver_connection
from moneyrail.engine.schedule import register_periodic
from moneyrail.errors import (
    IdempotencyKeyInUse,
    IdempotencyKeyInvalid,
    IdempotencyKeyRequired,
    IdempotencyKeyReused,
)
from moneyrail.kit.clock import utcnow
from moneyrail.kit.tenant import Tenant
from moneyrail.models import IdempotencyRecord

HEADER = "Idempotency-Key"
MAX_KEY_LENGTH = 255
# POSTs under these prefixes must carry a key (spec 4: "required on every POST of the products group").
KEY_REQUIRED_PREFIXES = ("/v1/products", "/v1/prices", "/v1/subscriptions")
IDEMPOTENT_METHODS = frozenset({"POST", "DELETE"})
EFFECT_SAVEPOINT = "idempotent_effect"


@dataclass
class ClaimedKey:
    key: str
    fingerprint: str
    principal: Principal

    async def undo_effect(self, session: AsyncSession) -> None:
        """A business refusal: undo what the request wrote since the claim, keep the key's lock."""
        session.expunge_all()  # nothing the refused effect left in the session may be flushed later
        connection = await driver_connection(session)
        await connection.execute(f"ROLLBACK TO SAVEPOINT {EFFECT_SAVEPOINT}")


class IdempotentReplay(Exception):
    def __init__(self, status_code: int, body: bytes) -> None:
        super().__init__(status_code)
        self.status_code = status_code
        self.body = body


def _is_valid_key(key: str) -> bool:
    return 1 <= len(key) <= MAX_KEY_LENGTH and all(" " <= char <= "~" for char in key)


def _without_card_secrets(body: Any) -> Any:
    """A card number has few enough possibilities that its plain hash could be reversed: the stored
    fingerprint keeps only its last four digits, and never the CVC."""
    if isinstance(body, dict):
        card = body.get("card")
        if isinstance(card, dict):
            number = card.get("number")
            masked = {key: value for key, value in card.items() if key not in {"number", "cvc"}}
            if isinstance(number, str):
                masked["last4"] = number[-4:]
            return {**body, "card": masked}
    return body


def _canonical_body(raw: bytes) -> bytes:
    try:
        body = orjson.loads(raw) if raw.strip() else None
    except orjson.JSONDecodeError:
        return hashlib.sha256(raw).digest()
    return b"" if body is None else orjson.dumps(_without_card_secrets(body), option=orjson.OPT_SORT_KEYS)


def _without_boundary(raw: bytes, content_type: str | None) -> bytes:
    """A multipart body as its parts: the boundary is a client's random choice, new on each retry."""
    kind, _, parameters = (content_type or "").partition(";")
    if kind.strip().lower() != "multipart/form-data":
        return raw
    for parameter in parameters.split(";"):
        name, _, value = parameter.strip().partition("=")
        if name.lower() == "boundary" and value.strip('"'):
            return raw.replace(value.strip('"').encode("latin-1"), b"")
    return raw


async def fingerprint(request: Request) -> str:
    digest = hashlib.sha256()
    digest.update(request.method.encode())
    digest.update(b"\0" + request.url.path.encode() + b"\0")
    body = _without_boundary(await request.body(), request.headers.get("content-type"))
    digest.update(_canonical_body(body))
    return digest.hexdigest()


def advisory_lock_id(tenant: Tenant, key: str) -> int:
    """The 64-bit lock that marks (tenant, key) in flight."""
    scope = f"{tenant.installation_id}|{tenant.livemode}|{key}".encode()
    return int.from_bytes(hashlib.sha256(scope).digest()[:8], "big", signed=True)


async def claim(request: Request, principal: Principal, retention: timedelta) -> None:
    """Claim the request's Idempotency-Key, or raise the replay / refusal it calls for."""
    if request.method not in IDEMPOTENT_METHODS:
        return
    key = request.headers.get(HEADER)
    if key is None:
        if request.method == "POST" and request.url.path.startswith(KEY_REQUIRED_PREFIXES):
            raise IdempotencyKeyRequired(f"This request needs an {HEADER} header.")
        return
    if not _is_valid_key(key):
        raise IdempotencyKeyInvalid(f"{HEADER} must be 1 to {MAX_KEY_LENGTH} printable ASCII characters.")

    session = request_session(request)
    tenant = principal.tenant
    connection = await driver_connection(session)  # every POST passes here: straight on the driver
    if not await connection.fetchval("SELECT pg_try_advisory_xact_lock($1)", advisory_lock_id(tenant, key)):
        raise IdempotencyKeyInUse(
            "A request with this Idempotency-Key is still being processed; retry later."
        )

    request_fingerprint = await fingerprint(request)
    # a record past its retention window frees the key; the purge job deletes it later
    record = await connection.fetchrow(
        "SELECT fingerprint, status_code, response_body FROM idempotency_records "
        "WHERE installation_id = $1 AND livemode = $2 AND key = $3 AND created_at >= now() - $4::interval",
        tenant.installation_id,
        tenant.livemode,
        key,
        retention,
    )
    if record is not None:
        if record["fingerprint"] != request_fingerprint:
            raise IdempotencyKeyReused(
                "This Idempotency-Key was used with another request (method, path or body differ)."
            )
        raise IdempotentReplay(record["status_code"], bytes(record["response_body"]))
    # The effect runs after this savepoint, so a refusal can be undone and stored under the still-held
    # lock. Plain SQL: COMMIT releases it, no extra round trip.
    await connection.execute(f"SAVEPOINT {EFFECT_SAVEPOINT}")
    request.state.idempotency = ClaimedKey(key=key, fingerprint=request_fingerprint, principal=principal)


def claimed_key(request: Request) -> ClaimedKey | None:
    claimed: ClaimedKey | None = getattr(request.state, "idempotency", None)
    return claimed


async def store(session: AsyncSession, claimed: ClaimedKey, status_code: int, body: bytes) -> None:
    """Write the response in the request's transaction; an expired record under the key is replaced."""
    tenant = claimed.principal.tenant
    connection = await driver_connection(session)
    await connection.execute(
        """
        INSERT INTO idempotency_records
            (installation_id, livemode, key, fingerprint, status_code, response_body)
        VALUES ($1, $2, $3, $4, $5, $6)
        ON CONFLICT (installation_id, livemode, key) DO UPDATE
        SET fingerprint = EXCLUDED.fingerprint, status_code = EXCLUDED.status_code,
            response_body = EXCLUDED.response_body, created_at = now()
        """,
        tenant.installation_id,
        tenant.livemode,
        claimed.key,
        claimed.fingerprint,
        status_code,
        body,
    )


def is_storable(status_code: int) -> bool:
    """Stored: 2xx and business 4xx. Not stored: 401, 403, 429 and 5xx (the key stays free)."""
    return status_code < 500 and status_code not in {401, 403, 429}


async def purge_expired(session: AsyncSession, retention: timedelta) -> int:
    result = await session.execute(
        delete(IdempotencyRecord).where(IdempotencyRecord.created_at < utcnow() - retention)
    )
    return int(getattr(result, "rowcount", 0) or 0)


def _purge_with_configured_retention(session: AsyncSession) -> Awaitable[int]:
    return purge_expired(session, timedelta(hours=get_settings().idempotency_retention_hours))


register_periodic("idempotency.purge", timedelta(minutes=10), _purge_with_configured_retention)
