"""Queries over installations, their settings and keys."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.db.raw import lone_statement_connection
from moneyrail.db.uow import UnitOfWork
from moneyrail.models import ApiKey, EnvironmentSettings, Installation


async def get_installation(session: AsyncSession, installation_id: str) -> Installation | None:
    return await session.get(Installation, installation_id)


async def list_installations(session: AsyncSession) -> Sequence[Installation]:
    return (await session.scalars(select(Installation).order_by(Installation.created_at))).all()


async def get_settings(session: AsyncSession, installation_id: str, livemode: bool) -> EnvironmentSettings:
    settings = await session.get(EnvironmentSettings, (installation_id, livemode))
    if settings is None:  # every installation is created with both rows
        raise LookupError(f"no settings for {installation_id} livemode={livemode}")
    return settings


async def get_publishable_key(
    work: AsyncSession | UnitOfWork, installation_id: str, livemode: bool
) -> str | None:
    """The environment's newest active publishable key; every payment answer shows it. A lone statement
    on the driver (db/raw.py): given the unit of work, it makes no session."""
    async with lone_statement_connection(work) as connection:
        key: str | None = await connection.fetchval(
            "SELECT id FROM publishable_keys WHERE installation_id = $1 AND livemode = $2 "
            "AND revoked_at IS NULL ORDER BY created_at DESC LIMIT 1",
            installation_id,
            livemode,
        )
    return key


async def get_commission_terms(
    work: AsyncSession | UnitOfWork, installation_id: str, livemode: bool
) -> tuple[int, int]:
    """The environment's commission (basis points, fixed amount): a lone statement, as the key lookups."""
    async with lone_statement_connection(work) as connection:
        row = await connection.fetchrow(
            "SELECT commission_basis_points, commission_fixed_amount FROM environment_settings "
            "WHERE installation_id = $1 AND livemode = $2",
            installation_id,
            livemode,
        )
    if row is None:  # every installation is created with both rows
        raise LookupError(f"no settings for {installation_id} livemode={livemode}")
    return int(row[0]), int(row[1])


async def list_keys(session: AsyncSession, installation_id: str) -> Sequence[ApiKey]:
    return (
        await session.scalars(
            select(ApiKey).where(ApiKey.installation_id == installation_id).order_by(ApiKey.created_at)
        )
    ).all()


async def revoke_key(session: AsyncSession, key_id: str, revoked_at: datetime) -> ApiKey | None:
    key = await session.get(ApiKey, key_id, with_for_update=True)
    if key is None:
        return None
    if key.revoked_at is None:
        await session.execute(update(ApiKey).where(ApiKey.id == key_id).values(revoked_at=revoked_at))
        key.revoked_at = revoked_at
    return key
