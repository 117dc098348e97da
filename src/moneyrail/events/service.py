"""Events are written in the same transaction as the change they describe; each endpoint that listens
gets a `webhook_delivery` operation in that same transaction, delivered by a worker and signed as the
Standard Webhooks specification says, retried with backoff for up to 3 days, then dead-lettered."""

from __future__ import annotations

import base64
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import orjson
import structlog
from sqlalchemy.ext.asyncio import AsyncSession
from standardwebhooks import Webhook

from moneyrail.config import API_VERSIONS, get_settings
from moneyrail.db.raw import WriteAt, engine_of
from moneyrail.engine.clock import clock_offset
from moneyrail.engine.outcomes import AttemptError, PermanentFailure, TransientFailure
from moneyrail.engine.policy import RetryPolicy, policy_for, register_policy
from moneyrail.engine.repository import NewOperations
from moneyrail.engine.schemas import render_operation
from moneyrail.engine.service import (
    Call,
    Recording,
    create_operation,
    register_attempt_failure_listener,
    register_outcome_listener,
)
from moneyrail.errors import Conflict, ParameterInvalid, ResourceMissing
from moneyrail.kit import crypto
from moneyrail.kit.clock import to_unix, utcnow
from moneyrail.kit.ids import new_id
from moneyrail.kit.pagination import Position
from moneyrail.kit.tenant import Tenant
from moneyrail.models import Operation, WebhookDeliveryAttempt, WebhookEndpoint
from moneyrail.models.base import Base

from . import repository
from .addresses import (
    AddressRefused,
    Resolver,
    check_resolves_publicly,
    check_shape,
    post_pinned,
    system_resolver,
)
from .repository import DeliveryRecord as DeliveryRecord  # the records its callers get
from .repository import EventRecord as EventRecord
from .types import is_known

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


def event_object(event: EventRecord) -> dict[str, Any]:
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
    session: AsyncSession,
    tenant: Tenant,
    event_type: str,
    data_object: dict[str, Any],
    *,
    changed: Base | None = None,
    also: Sequence[WriteAt] = (),
) -> EventRecord:
    """Write the event and one delivery per listening endpoint, in the caller's transaction.

    `changed`: the row the event describes, if its changes are not flushed yet: they are written in
    the event's own round trip instead of a flush of their own. `also`: the caller's other writes
    for the same round trip (repository.insert_event).
    """
    event = _new_event(tenant, event_type, data_object)
    listening = await repository.insert_event(session, event, changed, also)
    await _schedule_deliveries(session, tenant, [(endpoint_id, event) for endpoint_id in listening])
    return event


async def record_events(
    session: AsyncSession, tenant: Tenant, events: Sequence[tuple[str, dict[str, Any]]]
) -> list[repository.NewEvent]:
    """`record_event` for several `(type, object)` events of one transaction, in that order: one
    statement writes them all (an allocation commit announces each transfer and its group, a batch of
    renewals its payments and invoices). Plain records, not ORM rows: a batch builds thousands."""
    api_version = API_VERSIONS["payments"][0]
    written: list[repository.NewEvent] = []
    for event_type, data_object in events:
        if not is_known(event_type):
            raise ValueError(f"event type {event_type!r} is not in events/types.py's registry")
        created_at = utcnow()
        if written and created_at <= written[-1].created_at:  # built within one microsecond: keep the order
            created_at = written[-1].created_at + timedelta(microseconds=1)
        written.append(
            repository.NewEvent(new_id("evt"), event_type, api_version, {"object": data_object}, created_at)
        )
    if not written:
        return []
    by_id = {event.id: event for event in written}
    listening = await repository.insert_events(session, tenant, written)
    await _schedule_deliveries(
        session, tenant, [(endpoint_id, by_id[event_id]) for event_id, endpoint_id in listening]
    )
    return written


def _new_event(tenant: Tenant, event_type: str, data_object: dict[str, Any]) -> EventRecord:
    if not is_known(event_type):
        raise ValueError(f"event type {event_type!r} is not in events/types.py's registry")
    return EventRecord(
        id=new_id("evt"),
        installation_id=tenant.installation_id,
        livemode=tenant.livemode,
        created_at=utcnow(),
        type=event_type,
        api_version=API_VERSIONS["payments"][0],
        data={"object": data_object},
    )


async def get_event(session: AsyncSession, tenant: Tenant, event_id: str) -> EventRecord:
    event = await repository.get_event(session, tenant, event_id)
    if event is None:
        raise ResourceMissing(f"No such event: {event_id!r}", param="event")
    return event


async def list_events(
    session: AsyncSession, tenant: Tenant, *, event_type: str | None, limit: int, after: Position | None
) -> list[EventRecord]:
    return await repository.list_events(session, tenant, event_type=event_type, limit=limit, after=after)


# --- endpoints ---------------------------------------------------------------------------------
def _new_secret() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


async def _check_url(tenant: Tenant, url: str) -> None:
    try:
        check_shape(url, livemode=tenant.livemode)
        if tenant.livemode:  # sandbox endpoints may be loopback, for local development
            await check_resolves_publicly(url)
    except AddressRefused as refused:
        raise ParameterInvalid(f"The webhook URL {refused}.", param="url") from refused


@dataclass(frozen=True)
class IssuedEndpoint:
    endpoint: WebhookEndpoint
    secret: str  # shown once; the row holds it sealed


async def create_endpoint(
    session: AsyncSession, tenant: Tenant, *, url: str, enabled_events: Sequence[str], description: str | None
) -> IssuedEndpoint:
    await _check_url(tenant, url)
    secret = _new_secret()
    endpoint = WebhookEndpoint(
        id=new_id("we"),
        installation_id=tenant.installation_id,
        livemode=tenant.livemode,
        url=url,
        description=description,
        enabled_events=sorted(set(enabled_events)),
        secret=crypto.seal_text(secret),
    )
    session.add(endpoint)
    await session.flush()
    return IssuedEndpoint(endpoint, secret)


async def get_endpoint(session: AsyncSession, tenant: Tenant, endpoint_id: str) -> WebhookEndpoint:
    endpoint = await repository.get_endpoint(session, tenant, endpoint_id)
    if endpoint is None:
        raise ResourceMissing(f"No such webhook endpoint: {endpoint_id!r}", param="webhook_endpoint")
    return endpoint


async def list_endpoints(
    session: AsyncSession, tenant: Tenant, *, limit: int, after: Position | None
) -> Sequence[WebhookEndpoint]:
    return await repository.list_endpoints(session, tenant, limit=limit, after=after)


async def update_endpoint(
    session: AsyncSession,
    tenant: Tenant,
    endpoint_id: str,
    *,
    url: str | None,
    enabled_events: Sequence[str] | None,
    description: str | None,
    disabled: bool | None,
) -> WebhookEndpoint:
    """Only the fields given change. Disabling stops new deliveries; those pending fail when their turn
    comes (resend them once enabled again)."""
    endpoint = await get_endpoint(session, tenant, endpoint_id)
    if url is not None:
        await _check_url(tenant, url)
        endpoint.url = url
    if enabled_events is not None:
        endpoint.enabled_events = sorted(set(enabled_events))
    if description is not None:
        endpoint.description = description
    if disabled is True and endpoint.disabled_at is None:
        endpoint.disabled_at = utcnow()
    elif disabled is False:
        endpoint.disabled_at = None
    await session.flush()
    return endpoint


async def rotate_secret(
    session: AsyncSession, tenant: Tenant, endpoint_id: str, *, expire_previous_in_seconds: int
) -> IssuedEndpoint:
    """A new signing secret. Until the previous one expires, deliveries carry both signatures (Standard
    Webhooks allows several in `webhook-signature`), so receivers switch secrets without losing any."""
    endpoint = await get_endpoint(session, tenant, endpoint_id)
    secret = _new_secret()
    if expire_previous_in_seconds > 0:
        endpoint.previous_secret = endpoint.secret
        endpoint.previous_secret_expires_at = utcnow() + timedelta(seconds=expire_previous_in_seconds)
    else:
        endpoint.previous_secret = None
        endpoint.previous_secret_expires_at = None
    endpoint.secret = crypto.seal_text(secret)
    await session.flush()
    return IssuedEndpoint(endpoint, secret)


def endpoint_status(endpoint: WebhookEndpoint) -> str:
    return "disabled" if endpoint.disabled_at is not None else "enabled"


def overlap_ends(endpoint: WebhookEndpoint, at: datetime) -> datetime | None:
    """When the previous secret stops signing, if it still signs at `at`."""
    expires = endpoint.previous_secret_expires_at
    return expires if endpoint.previous_secret is not None and expires is not None and expires > at else None


async def delete_endpoint(session: AsyncSession, tenant: Tenant, endpoint_id: str) -> WebhookEndpoint:
    endpoint = await get_endpoint(session, tenant, endpoint_id)
    endpoint.deleted_at = utcnow()  # pending deliveries see it gone and stop
    await session.flush()
    return endpoint


# --- deliveries (what an integrator sees) ---------------------------------------------------------
@dataclass(frozen=True)
class DeliveryView:
    delivery: DeliveryRecord
    status: str
    attempts: list[WebhookDeliveryAttempt]
    next_attempt_at: datetime | None = None  # while pending: when it is tried (again)

    @property
    def id(self) -> str:
        return self.delivery.id

    @property
    def created_at(self) -> datetime:
        return self.delivery.created_at


async def _views(session: AsyncSession, deliveries: Sequence[DeliveryRecord]) -> list[DeliveryView]:
    """One tenant's deliveries as it sees them: `created` and the attempts are stored on its clock;
    the next attempt, due on the wall clock the engine runs on, is shown on its clock as it is now."""
    if not deliveries:
        return []
    ids = [delivery.id for delivery in deliveries]
    states = await repository.delivery_states(session, ids)
    attempts = await repository.attempts_of(session, ids)
    tenant = Tenant(deliveries[0].installation_id, deliveries[0].livemode)
    offset = await clock_offset(session, tenant)
    views = []
    for delivery in deliveries:
        status, next_attempt_at = states[delivery.id]
        shown_next = next_attempt_at + offset if status == "pending" else None
        views.append(DeliveryView(delivery, status, attempts[delivery.id], shown_next))
    return views


async def list_deliveries(
    session: AsyncSession, tenant: Tenant, endpoint_id: str, *, limit: int, after: Position | None
) -> list[DeliveryView]:
    endpoint = await get_endpoint(session, tenant, endpoint_id)
    return await _views(
        session, await repository.list_deliveries(session, endpoint.id, limit=limit, after=after)
    )


async def get_delivery(
    session: AsyncSession, tenant: Tenant, endpoint_id: str, delivery_id: str
) -> DeliveryView:
    endpoint = await get_endpoint(session, tenant, endpoint_id)
    delivery = await repository.get_delivery(session, endpoint.id, delivery_id)
    if delivery is None:
        raise ResourceMissing(f"No such webhook delivery: {delivery_id!r}", param="delivery")
    return (await _views(session, [delivery]))[0]


async def _schedule_deliveries(
    session: AsyncSession,
    tenant: Tenant,
    sends: Sequence[tuple[str, EventRecord | repository.NewEvent]],
    resend_of: str | None = None,
) -> list[DeliveryRecord]:
    """Each (endpoint, event): a `webhook_delivery` operation, and the delivery an integrator lists
    (its id the operation's), all of them in one statement."""
    deliveries = []
    for endpoint_id, event in sends:
        operation = await create_operation(
            session,
            tenant,
            operation_type=DELIVERY_TYPE,
            actor_name=DELIVERY_ACTOR,
            resource=event.id,
            payload={"event": event.id, "endpoint": endpoint_id},
        )
        deliveries.append(
            DeliveryRecord(
                id=operation.id,
                installation_id=tenant.installation_id,
                livemode=tenant.livemode,
                created_at=operation.created_at,
                endpoint_id=endpoint_id,
                event_id=event.id,
                event_type=event.type,
                resend_of=resend_of,
            )
        )
    await repository.insert_deliveries(session, deliveries)
    return deliveries


def planned_deliveries(endpoints: int) -> repository.PlannedDeliveries:
    """What `_schedule_deliveries` writes for each of up to `endpoints` listening endpoints, for a statement
    that schedules its event's deliveries itself (repository.deliveries_of_effect): fresh operation ids
    and the delivery type's columns from its policy, as `create_operation` takes them."""
    policy = policy_for(DELIVERY_TYPE)
    return repository.PlannedDeliveries(
        tuple(new_id("op") for _ in range(endpoints)),
        NewOperations(
            operation_type=DELIVERY_TYPE,
            actor_name=DELIVERY_ACTOR,
            queue_name=policy.queue_name,
            max_attempts=policy.max_attempts,
            batch_size=policy.batch_size,
        ),
    )


async def resend_delivery(
    session: AsyncSession, tenant: Tenant, endpoint_id: str, delivery_id: str
) -> DeliveryView:
    """The same event to the same endpoint again, as a new delivery (the first keeps its history)."""
    original = await get_delivery(session, tenant, endpoint_id, delivery_id)
    endpoint = await get_endpoint(session, tenant, endpoint_id)
    if endpoint.disabled_at is not None:
        raise Conflict("The webhook endpoint is disabled; enable it before resending.", param="delivery")
    event = await get_event(session, tenant, original.delivery.event_id)
    (delivery,) = await _schedule_deliveries(
        session, tenant, [(endpoint.id, event)], resend_of=original.delivery.id
    )
    await session.flush()
    return (await _views(session, [delivery]))[0]


# --- delivery ----------------------------------------------------------------------------------
def signed_headers(endpoint_secrets: Sequence[str], event_id: str, body: str, at: datetime) -> dict[str, str]:
    """One `v1,<signature>` per secret, space-separated (Standard Webhooks: receivers accept any)."""
    signatures = [
        Webhook(secret).sign(msg_id=event_id, timestamp=at, data=body) for secret in endpoint_secrets
    ]
    return {
        "webhook-id": event_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": " ".join(signatures),
        "content-type": "application/json",
        "user-agent": "moneyrail-webhooks/1",
    }


def signing_secrets(endpoint: WebhookEndpoint, at: datetime) -> list[str]:
    signing = [crypto.open_text(endpoint.secret)]
    if endpoint.previous_secret is not None and overlap_ends(endpoint, at) is not None:
        signing.append(crypto.open_text(endpoint.previous_secret))
    return signing


async def prepare_delivery(
    session: AsyncSession, operation: Operation, resolver: Resolver = system_resolver
) -> Call:
    """One delivery attempt of one event to one endpoint (the `webhook_delivery` operation), in phases
    (engine `PhasedHandler`): the endpoint and event read and the request signed in a short unit of
    work; the POST made with no transaction or pooled connection held, so a slow receiver keeps none of
    the pool from the money's operations; each attempt's answer written at once on a connection of its
    own (a failed attempt must show what the receiver answered)."""
    tenant = Tenant(operation.installation_id, operation.livemode)
    endpoint = await repository.get_endpoint_any_state(session, operation.payload["endpoint"])
    if endpoint is None or endpoint.deleted_at is not None:
        raise PermanentFailure("endpoint_deleted", "The webhook endpoint was deleted before delivery.")
    if endpoint.disabled_at is not None:
        raise PermanentFailure("endpoint_disabled", "The webhook endpoint was disabled before delivery.")
    event = await get_event(session, tenant, operation.payload["event"])
    now = datetime.now(UTC)
    body = orjson.dumps(event_object(event)).decode()
    headers = signed_headers(signing_secrets(endpoint, now), event.id, body, now)
    engine, endpoint_id, url, event_id = engine_of(session), endpoint.id, endpoint.url, event.id
    delivery_id, number = operation.id, operation.attempts

    async def note(outcome: str, status: int | None, latency_ms: float | None, error: str | None) -> None:
        await repository.record_attempt_now(
            engine,
            delivery_id=delivery_id,
            number=number,
            outcome=outcome,
            response_status=status,
            latency_ms=latency_ms,
            error=error,
        )

    async def call() -> Recording:
        started = time.perf_counter()
        try:
            # resolved once, checked, and connected to that very address (no DNS rebinding in between)
            target, response = await post_pinned(
                url,
                content=body,
                headers=headers,
                public_only=tenant.livemode,
                timeout_seconds=DELIVERY_TIMEOUT_SECONDS,
                resolver=resolver,
            )
        except AddressRefused as refused:
            await note("failed", None, None, f"endpoint address refused: {refused}")
            raise TransientFailure(f"endpoint address refused: {refused}") from refused
        except httpx.HTTPError as error:
            latency_ms = round((time.perf_counter() - started) * 1000, 2)
            await note("failed", None, latency_ms, f"delivery failed: {type(error).__name__}")
            raise TransientFailure(f"delivery failed: {type(error).__name__}") from error
        latency_ms = round((time.perf_counter() - started) * 1000, 2)
        if not response.is_success:
            await note(
                "failed", response.status_code, latency_ms, f"endpoint answered HTTP {response.status_code}"
            )
            raise TransientFailure(f"endpoint answered HTTP {response.status_code}")
        await note("succeeded", response.status_code, latency_ms, None)
        logger.info(
            "webhook_delivered",
            event_id=event_id,
            endpoint=endpoint_id,
            status=response.status_code,
            address=target.address,
        )
        return nothing_to_record

    return call


async def nothing_to_record(session: AsyncSession) -> None:
    """A delivery's attempt is written as it ends; its success is the operation's own."""


OUTCOME_EVENTS = {
    "succeeded": "operation.succeeded",
    "failed": "operation.failed",
    "dead_letter": "operation.dead_lettered",
}


async def record_operation_outcome(session: AsyncSession, operation: Operation) -> None:
    """operation.succeeded / .failed (its end), and .dead_lettered (an attempt that left it waiting for
    an operator), for retry and diagnosis by the caller.

    Not for webhook deliveries themselves: an event about a failed delivery would be delivered too.
    """
    event_type = OUTCOME_EVENTS.get(operation.status)
    if event_type is None or operation.type == DELIVERY_TYPE:
        return
    tenant = Tenant(operation.installation_id, operation.livemode)
    await record_event(session, tenant, event_type, render_operation(operation).model_dump())


async def record_operation_outcomes(session: AsyncSession, operations: Sequence[Operation]) -> None:
    """`record_operation_outcome` for a batch that finished together: one statement per tenant."""
    by_tenant: dict[Tenant, list[tuple[str, dict[str, Any]]]] = {}
    for operation in operations:
        event_type = OUTCOME_EVENTS.get(operation.status)
        if event_type is None or operation.type == DELIVERY_TYPE:
            continue
        tenant = Tenant(operation.installation_id, operation.livemode)
        by_tenant.setdefault(tenant, []).append((event_type, render_operation(operation).model_dump()))
    for tenant, events in by_tenant.items():
        await record_events(session, tenant, events)


async def record_dead_letter(session: AsyncSession, operation: Operation, error: AttemptError) -> None:
    if operation.status == "dead_letter":
        await record_operation_outcome(session, operation)


register_outcome_listener(record_operation_outcome, together=record_operation_outcomes)
register_attempt_failure_listener(record_dead_letter)
