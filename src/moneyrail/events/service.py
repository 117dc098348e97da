"""Events are written in the same transaction as the change they describe; each endpoint that listens
gets a `webhook_delivery` operation in that same transaction, delivered by a worker and signed as the
Standard Webhooks specification says, retried with backoff for up to 3 days, then dead-lettered."""

from __future__ import annotations

import base64
import secrets
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import orjson
import structlog
from sqlalchemy.ext.asyncio import AsyncSession
from standardwebhooks import Webhook

from moneyrail.config import API_VERSIONS, get_settings
from moneyrail.engine.outcomes import PermanentFailure, TransientFailure
from moneyrail.engine.policy import RetryPolicy, register_policy
from moneyrail.engine.schemas import render_operation
from moneyrail.engine.service import create_operation, register_outcome_listener
from moneyrail.errors import ParameterInvalid, ResourceMissing
from moneyrail.kit.clock import to_unix, utcnow
from moneyrail.kit.ids import new_id
from moneyrail.kit.pagination import Position
from moneyrail.kit.tenant import Tenant
from moneyrail.models import Event, Operation, WebhookEndpoint

from . import repository
from .addresses import AddressRefused, check_resolves_publicly, check_shape

logger = structlog.get_logger("moneyrail.webhooks")

DELIVERY_TYPE = "webhook_delivery"
DELIVERY_ACTOR = "webhooks.deliver"
DELIVERY_TIMEOUT_SECONDS = 10.0
# 30 s doubling to a 6 h ceiling: about 20 attempts span the 3 days CONVENTIONS.md §10 promises.
register_policy(
    DELIVERY_TYPE,
    RetryPolicy(
        max_attempts=get_settings().webhook_max_attempts,
        base_delay=timedelta(seconds=get_settings().webhook_retry_base_seconds),
        max_delay=timedelta(hours=6),
        queue_name="webhooks",
    ),
)


def event_object(event: Event) -> dict[str, Any]:
    return {
        "id": event.id,
        "object": "event",
        "type": event.type,
        "created": to_unix(event.created_at),
        "livemode": event.livemode,
        "api_version": event.api_version,
        "data": event.data,
    }


async def record_event(
    session: AsyncSession, tenant: Tenant, event_type: str, data_object: dict[str, Any]
) -> Event:
    """Write the event and one delivery per listening endpoint, in the caller's transaction."""
    event = Event(
        id=new_id("evt"),
        installation_id=tenant.installation_id,
        livemode=tenant.livemode,
        type=event_type,
        api_version=API_VERSIONS["payments"][0],
        data={"object": data_object},
        created_at=utcnow(),
    )
    for endpoint_id in await repository.insert_event(session, event):
        await create_operation(
            session,
            tenant,
            operation_type=DELIVERY_TYPE,
            actor_name=DELIVERY_ACTOR,
            resource=event.id,
            payload={"event": event.id, "endpoint": endpoint_id},
        )
    return event


async def get_event(session: AsyncSession, tenant: Tenant, event_id: str) -> Event:
    event = await repository.get_event(session, tenant, event_id)
    if event is None:
        raise ResourceMissing(f"No such event: {event_id!r}", param="event")
    return event


async def list_events(
    session: AsyncSession, tenant: Tenant, *, event_type: str | None, limit: int, after: Position | None
) -> Sequence[Event]:
    return await repository.list_events(session, tenant, event_type=event_type, limit=limit, after=after)


# --- endpoints ---------------------------------------------------------------------------------
async def create_endpoint(
    session: AsyncSession, tenant: Tenant, *, url: str, enabled_events: Sequence[str], description: str | None
) -> WebhookEndpoint:
    try:
        check_shape(url, livemode=tenant.livemode)
        if tenant.livemode:  # sandbox endpoints may be loopback, for local development
            await check_resolves_publicly(url)
    except AddressRefused as refused:
        raise ParameterInvalid(f"The webhook URL {refused}.", param="url") from refused
    endpoint = WebhookEndpoint(
        id=new_id("we"),
        installation_id=tenant.installation_id,
        livemode=tenant.livemode,
        url=url,
        description=description,
        enabled_events=sorted(set(enabled_events)),
        secret="whsec_" + base64.b64encode(secrets.token_bytes(32)).decode(),
    )
    session.add(endpoint)
    await session.flush()
    return endpoint


async def get_endpoint(session: AsyncSession, tenant: Tenant, endpoint_id: str) -> WebhookEndpoint:
    endpoint = await repository.get_endpoint(session, tenant, endpoint_id)
    if endpoint is None:
        raise ResourceMissing(f"No such webhook endpoint: {endpoint_id!r}", param="webhook_endpoint")
    return endpoint


async def list_endpoints(
    session: AsyncSession, tenant: Tenant, *, limit: int, after: Position | None
) -> Sequence[WebhookEndpoint]:
    return await repository.list_endpoints(session, tenant, limit=limit, after=after)


async def delete_endpoint(session: AsyncSession, tenant: Tenant, endpoint_id: str) -> WebhookEndpoint:
    endpoint = await get_endpoint(session, tenant, endpoint_id)
    endpoint.deleted_at = utcnow()  # pending deliveries see it gone and stop
    await session.flush()
    return endpoint


# --- delivery ----------------------------------------------------------------------------------
def signed_headers(endpoint_secret: str, event_id: str, body: str, at: datetime) -> dict[str, str]:
    signature = Webhook(endpoint_secret).sign(msg_id=event_id, timestamp=at, data=body)
    return {
        "webhook-id": event_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": signature,
        "content-type": "application/json",
        "user-agent": "moneyrail-webhooks/1",
    }


async def deliver(session: AsyncSession, operation: Operation) -> None:
    """One delivery attempt of one event to one endpoint (the `webhook_delivery` operation handler)."""
    tenant = Tenant(operation.installation_id, operation.livemode)
    endpoint = await repository.get_endpoint_any_state(session, operation.payload["endpoint"])
    if endpoint is None or endpoint.deleted_at is not None:
        raise PermanentFailure("endpoint_deleted", "The webhook endpoint was deleted before delivery.")
    event = await get_event(session, tenant, operation.payload["event"])
    if tenant.livemode:
        try:
            await check_resolves_publicly(endpoint.url)
        except AddressRefused as refused:
            raise TransientFailure(f"endpoint address refused: {refused}") from refused
    body = orjson.dumps(event_object(event)).decode()
    headers = signed_headers(endpoint.secret, event.id, body, datetime.now(UTC))
    try:
        async with httpx.AsyncClient(timeout=DELIVERY_TIMEOUT_SECONDS, follow_redirects=False) as client:
            response = await client.post(endpoint.url, content=body, headers=headers)
    except httpx.HTTPError as error:
        raise TransientFailure(f"delivery failed: {type(error).__name__}") from error
    if not response.is_success:
        raise TransientFailure(f"endpoint answered HTTP {response.status_code}")
    logger.info("webhook_delivered", event_id=event.id, endpoint=endpoint.id, status=response.status_code)


OUTCOME_EVENTS = {
    "succeeded": "operation.succeeded",
    "failed": "operation.failed",
    "dead_letter": "operation.dead_lettered",
}


async def record_operation_outcome(session: AsyncSession, operation: Operation) -> None:
    """operation.succeeded / .failed / .dead_lettered, for retry and diagnosis by the caller.

    Not for webhook deliveries themselves: an event about a failed delivery would be delivered too.
    """
    event_type = OUTCOME_EVENTS.get(operation.status)
    if event_type is None or operation.type == DELIVERY_TYPE:
        return
    tenant = Tenant(operation.installation_id, operation.livemode)
    await record_event(session, tenant, event_type, render_operation(operation).model_dump())


register_outcome_listener(record_operation_outcome)
