"""Queries over the processor's webhook events."""

from __future__ import annotations

from typing import Any

import orjson
from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.kit.tenant import Tenant
from moneyrail.models import ProcessorEvent


async def insert_new(
    session: AsyncSession,
    tenant: Tenant,
    *,
    processor: str,
    event_id: str,
    event_type: str,
    account: str | None,
    found: dict[str, Any],
) -> bool:
    """Keep the event unless it is kept already: False for a replay. A replay sent while the first
    delivery's transaction is open waits for it on the primary key, then finds it."""
    inserted = await session.execute(
        text(
            "INSERT INTO processor_events "
            "(installation_id, livemode, event_id, processor, type, account, object) "
            "VALUES (:installation, :livemode, :event, :processor, :type, :account, CAST(:object AS jsonb)) "
            "ON CONFLICT DO NOTHING RETURNING event_id"
        ),
        {
            "installation": tenant.installation_id,
            "livemode": tenant.livemode,
            "event": event_id,
            "processor": processor,
            "type": event_type,
            "account": account,
            "object": orjson.dumps(found).decode(),
        },
    )
    return inserted.first() is not None


async def get(session: AsyncSession, tenant: Tenant, event_id: str) -> ProcessorEvent | None:
    """The event, locked."""
    return await session.scalar(
        select(ProcessorEvent)
        .where(
            ProcessorEvent.installation_id == tenant.installation_id,
            ProcessorEvent.livemode == tenant.livemode,
            ProcessorEvent.event_id == event_id,
        )
        .with_for_update()
        .execution_options(populate_existing=True)
    )
