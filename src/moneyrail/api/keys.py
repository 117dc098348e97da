"""The key lookup of authentication (api/auth.py): an active secret or publishable key by what the
request presents, remembered for `key_cache_seconds` (config.py).

Here, below every domain, so that the gate knows no domain; installations/ creates and revokes the
keys (the operator CLI) and tells this store when it revokes one. Only active keys are remembered, so a
new key works at once, and a revoked one stops within the cache lifetime (at once in this process).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.config import get_settings
from moneyrail.db.raw import lone_statement_connection
from moneyrail.db.uow import UnitOfWork
from moneyrail.kit.crypto import hash_secret
from moneyrail.kit.ttl_cache import TtlCache


@dataclass(frozen=True, slots=True)
class ActiveKey:
    id: str
    installation_id: str
    livemode: bool
    scopes: list[str]


@dataclass(frozen=True, slots=True)
class ActivePublishableKey:
    id: str
    installation_id: str
    livemode: bool


def _key_cache_seconds() -> float:
    return get_settings().key_cache_seconds


# Looked up on every request, changed almost never: remembered for `key_cache_seconds` (config.py).
# Only active keys are remembered, so a new key works at once; a revoked one within the lifetime.
_secret_keys: TtlCache[str, ActiveKey] = TtlCache(_key_cache_seconds)
_publishable_keys: TtlCache[str, ActivePublishableKey] = TtlCache(_key_cache_seconds)


def forget_cached_keys() -> None:
    """Every remembered key: the next request of each looks it up again."""
    _secret_keys.clear()
    _publishable_keys.clear()


def forget_secret_key(secret_hash: str) -> None:
    """A revoked key: this process refuses it at once (the others within the cache lifetime)."""
    _secret_keys.discard(secret_hash)


async def find_active_secret_key(work: AsyncSession | UnitOfWork, secret: str) -> ActiveKey | None:
    """The gate's lookup: given the unit of work, it makes no session (a lone statement on a miss)."""
    secret_hash = hash_secret(secret)
    key = _secret_keys.get(secret_hash)
    if key is None:
        key = await lookup_secret_key(work, secret_hash)
        if key is not None:
            _secret_keys.put(secret_hash, key)
    return key


async def find_active_publishable_key(
    work: AsyncSession | UnitOfWork, key_id: str
) -> ActivePublishableKey | None:
    key = _publishable_keys.get(key_id)
    if key is None:
        key = await lookup_publishable_key(work, key_id)
        if key is not None:
            _publishable_keys.put(key_id, key)
    return key


async def lookup_secret_key(work: AsyncSession | UnitOfWork, secret_hash: str) -> ActiveKey | None:
    """Run on every request whose key is not remembered, so straight on the driver (see db/raw.py), and
    outside the request's transaction when none has begun: a read of committed state needs no BEGIN
    (and, given the unit of work, no session)."""
    async with lone_statement_connection(work) as connection:
        row = await connection.fetchrow(
            "SELECT id, installation_id, livemode, scopes FROM api_keys "
            "WHERE secret_hash = $1 AND revoked_at IS NULL",
            secret_hash,
        )
    return ActiveKey(row[0], row[1], row[2], list(row[3])) if row is not None else None


async def lookup_publishable_key(work: AsyncSession | UnitOfWork, key_id: str) -> ActivePublishableKey | None:
    """Run on every client-side request whose key is not remembered: as the secret key's lookup."""
    async with lone_statement_connection(work) as connection:
        row = await connection.fetchrow(
            "SELECT id, installation_id, livemode FROM publishable_keys WHERE id = $1 AND revoked_at IS NULL",
            key_id,
        )
    return ActivePublishableKey(row[0], row[1], row[2]) if row is not None else None
