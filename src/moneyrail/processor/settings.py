"""Which processor serves an environment, as provider.py reads it on every call: the environment's
processor and its credentials (opened), remembered for `key_cache_seconds` (config.py).

Here, below every domain, so that the processor knows no domain; installations/processors.py checks
and stores the settings (the operator CLI) and tells this module when it changes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.config import get_settings
from moneyrail.db.raw import lone_statement_connection
from moneyrail.db.uow import UnitOfWork
from moneyrail.kit import crypto
from moneyrail.kit.tenant import Tenant
from moneyrail.kit.ttl_cache import TtlCache

SANDBOX = "sandbox"
STRIPE = "stripe"


@dataclass(frozen=True)
class ProcessorSettings:
    """An environment's processor as the service uses it: `processor` None for none (a live
    environment not set yet), the secrets opened."""

    processor: str | None
    api_key: str | None = field(default=None, repr=False)
    publishable_key: str | None = None
    webhook_secret: str | None = field(default=None, repr=False)
    # the Connect endpoint's: events that happened on connected accounts
    connect_webhook_secret: str | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True)
class StoredProcessor:
    """An environment's processor columns as stored (its secrets still sealed)."""

    processor: str | None
    sealed_key: str | None
    publishable_key: str | None
    sealed_webhook_secret: str | None
    sealed_connect_webhook_secret: str | None


async def get_processor(
    work: AsyncSession | UnitOfWork, installation_id: str, livemode: bool
) -> StoredProcessor:
    """The environment's processor: a lone statement, as the key lookups (every request that calls the
    processor asks, remembered for `key_cache_seconds`)."""
    async with lone_statement_connection(work) as connection:
        row = await connection.fetchrow(
            "SELECT processor, processor_key, processor_publishable_key, processor_webhook_secret, "
            "processor_connect_webhook_secret FROM environment_settings "
            "WHERE installation_id = $1 AND livemode = $2",
            installation_id,
            livemode,
        )
    if row is None:
        return StoredProcessor(None, None, None, None, None)
    return StoredProcessor(row[0], row[1], row[2], row[3], row[4])


def _key_cache_seconds() -> float:
    return get_settings().key_cache_seconds


_processors: TtlCache[Tenant, ProcessorSettings] = TtlCache(_key_cache_seconds)


def forget_cached_processors() -> None:
    _processors.clear()


def forget_processor(tenant: Tenant) -> None:
    """The environment's settings changed: this process reads them again at once (the others within
    the cache lifetime)."""
    _processors.discard(tenant)


def _opened(sealed: str | None) -> str | None:
    return crypto.open_text(sealed) if sealed else None


async def processor_settings(work: AsyncSession | UnitOfWork, tenant: Tenant) -> ProcessorSettings:
    """The environment's processor, remembered for `key_cache_seconds`; given the unit of work, a lone
    statement on a miss (no session). An unknown installation reads as one with none."""
    found = _processors.get(tenant)
    if found is None:
        stored = await get_processor(work, tenant.installation_id, tenant.livemode)
        found = ProcessorSettings(
            processor=stored.processor,
            api_key=crypto.open_text(stored.sealed_key) if stored.sealed_key else None,
            publishable_key=stored.publishable_key,
            webhook_secret=_opened(stored.sealed_webhook_secret),
            connect_webhook_secret=_opened(stored.sealed_connect_webhook_secret),
        )
        _processors.put(tenant, found)
    return found
