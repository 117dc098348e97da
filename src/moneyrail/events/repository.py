from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import and_, select
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.db.pagination import newest_first_page
from moneyrail.kit.pagination import Position
from moneyrail.kit.tenant import Tenant
from moneyrail.models import Event, WebhookEndpoint


def _event_owned_by(tenant: Tenant) -> Any:
    return and_(Event.installation_id == tenant.installation_id, Event.livemode == tenant.livemode)


def _endpoint_owned_by(tenant: Tenant) -> Any:
    return and_(
        WebhookEndpoint.installation_id == tenant.installation_id,
        WebhookEndpoint.livemode == tenant.livemode,
        WebhookEndpoint.deleted_at.is_(None),
    )


async def get_event(session: AsyncSession, tenant: Tenant, event_id: str) -> Event | None:
    return await session.scalar(select(Event).where(_event_owned_by(tenant), Event.id == event_id))


async def list_events(
    session: AsyncSession, tenant: Tenant, *, event_type: str | None, limit: int, after: Position | None
) -> Sequence[Event]:
    statement = select(Event).where(_event_owned_by(tenant))
    if event_type:
        statement = statement.where(Event.type == event_type)
    return (await session.scalars(newest_first_page(statement, Event, limit=limit, after=after))).all()


async def endpoints_listening(
    session: AsyncSession, tenant: Tenant, event_type: str
) -> Sequence[WebhookEndpoint]:
    return (
        await session.scalars(
            select(WebhookEndpoint).where(
                _endpoint_owned_by(tenant),
                WebhookEndpoint.enabled_events.overlap([event_type, "*"]),
            )
        )
    ).all()


async def get_endpoint(session: AsyncSession, tenant: Tenant, endpoint_id: str) -> WebhookEndpoint | None:
    return await session.scalar(
        select(WebhookEndpoint).where(_endpoint_owned_by(tenant), WebhookEndpoint.id == endpoint_id)
    )


async def get_endpoint_any_state(session: AsyncSession, endpoint_id: str) -> WebhookEndpoint | None:
    return await session.get(WebhookEndpoint, endpoint_id)


async def list_endpoints(
    session: AsyncSession, tenant: Tenant, *, limit: int, after: Position | None
) -> Sequence[WebhookEndpoint]:
    statement = select(WebhookEndpoint).where(_endpoint_owned_by(tenant))
    return (
        await session.scalars(newest_first_page(statement, WebhookEndpoint, limit=limit, after=after))
    ).all()
