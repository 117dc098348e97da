"""The tenant clock: the time as a tenant lives it. Real time in live; in a sandbox, real time plus the
offset its test clock was advanced by (sandbox/ moves the clock, CONVENTIONS.md §11).

Below every domain and the processor, so that the sandbox helpers, the domains and the sandbox
processor all read one clock.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.db.raw import driver_connection
from moneyrail.kit.clock import utcnow
from moneyrail.kit.tenant import Tenant


async def stored_clock_offset(session: AsyncSession, installation_id: str) -> int:
    """Read on every sandbox capture, by moneyrail and by the sandbox processor: on the driver (db/raw.py)."""
    connection = await driver_connection(session)
    offset = await connection.fetchval(
        "SELECT offset_seconds FROM sandbox_clocks WHERE installation_id = $1", installation_id
    )
    return int(offset or 0)


async def tenant_now(session: AsyncSession, tenant: Tenant) -> datetime:
    """The time as this tenant lives it: real time in live, real time plus the offset in the sandbox."""
    return utcnow() + await clock_offset(session, tenant)


async def clock_offset(session: AsyncSession, tenant: Tenant) -> timedelta:
    """How far this tenant's clock is ahead of the wall clock: zero in live."""
    if tenant.livemode:
        return timedelta(0)
    return timedelta(seconds=await stored_clock_offset(session, tenant.installation_id))
