from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any, NamedTuple

import orjson
from sqlalchemy import and_, select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from moneyrail.db.pagination import newest_first_page, newest_first_sql
from moneyrail.db.raw import Write, WriteAt, driver_connection, pending_update, read_connection
from moneyrail.engine.repository import NewOperations, operations_from, relay_wakeups
from moneyrail.kit.pagination import Position
from moneyrail.kit.tenant import Tenant
from moneyrail.models import Operation, WebhookDeliveryAttempt, WebhookEndpoint
from moneyrail.models.base import Base


@dataclass(frozen=True, slots=True)
class EventRecord:
    """An event (its row in `events`, models/event.py): written once by a driver statement, never
    changed, read back as it was written."""

    id: str
    installation_id: str
    livemode: bool
    created_at: datetime
    type: str
    api_version: str
    data: dict[str, Any]


_EVENT_COLUMNS = "id, installation_id, livemode, created_at, type, api_version, data"


def _endpoint_owned_by(tenant: Tenant) -> Any:
    return and_(
        WebhookEndpoint.installation_id == tenant.installation_id,
        WebhookEndpoint.livemode == tenant.livemode,
        WebhookEndpoint.deleted_at.is_(None),
    )


# The event, and in the same round trip the endpoints that listen for it (most often none).
_INSERT_EVENT = """
    WITH event AS (
        INSERT INTO events (id, installation_id, livemode, type, api_version, data, created_at)
        VALUES ($1, $2, $3, $4, $5, $6, $7)
    )
    SELECT id FROM webhook_endpoints
    WHERE installation_id = $2 AND livemode = $3 AND deleted_at IS NULL AND disabled_at IS NULL
      AND enabled_events && ARRAY[$4::text, '*']
    ORDER BY id
"""
# The same with a write of the caller's ahead of it: the row whose change the event describes.
_INSERT_EVENT_ALONGSIDE = _INSERT_EVENT.replace(
    "WITH event AS (", "WITH alongside AS (ALONGSIDE), event AS (", 1
)


@cache
def _event_alongside(write: str) -> str:
    return _INSERT_EVENT_ALONGSIDE.replace("ALONGSIDE", write, 1)


@cache
def _event_also(statement: str, write: str, position: int) -> str:
    name = "also" if position == 0 else f"also_{position + 1}"
    return statement.replace("WITH ", f"WITH {name} AS ({write}), ", 1)


async def insert_event(
    session: AsyncSession,
    event: EventRecord,
    changed: Base | None = None,
    also: Sequence[WriteAt] = (),
) -> list[str]:
    """Insert the event; return the ids of the tenant's endpoints listening for its type.

    Every operation's outcome and every payment step writes one: straight on the driver (db/raw.py).
    `changed`: the loaded row the event describes; its changes not flushed yet are written in the same
    round trip (db/raw.py's `pending_update`, its parameters after the event's seven).
    `also`: the caller's other writes for the same round trip, each a CTE of its own, their parameters
    after those (a payment step's Idempotency-Key answer, which commits with the change; a capture's
    postings).
    """
    connection = await driver_connection(session)
    update = pending_update(changed, first_parameter=8) if changed is not None else None
    statement, extra = _INSERT_EVENT, ()
    if update is not None:
        statement, extra = _event_alongside(update.sql), update.parameters
    for position, write_at in enumerate(also):
        write = write_at(8 + len(extra))
        statement, extra = _event_also(statement, write.sql, position), (*extra, *write.parameters)
    rows = await connection.fetch(
        statement,
        event.id,
        event.installation_id,
        event.livemode,
        event.type,
        event.api_version,
        orjson.dumps(event.data).decode(),
        event.created_at,
        *extra,
    )
    return [row["id"] for row in rows]


# Several events of one transaction in one statement, and the endpoints listening for each, in the
# events' order then the endpoints'.
_INSERT_EVENTS = """
    WITH event AS (
        INSERT INTO events (id, installation_id, livemode, type, api_version, data, created_at)
        SELECT id, $2, $3, type, api_version, data::jsonb, created_at
        FROM unnest($1::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[])
             AS e(id, type, api_version, data, created_at)
    )
    SELECT e.id AS event_id, endpoint.id AS endpoint_id
    FROM unnest($1::text[], $4::text[]) WITH ORDINALITY AS e(id, type, position)
    JOIN webhook_endpoints endpoint
      ON endpoint.installation_id = $2 AND endpoint.livemode = $3 AND endpoint.deleted_at IS NULL
     AND endpoint.disabled_at IS NULL AND endpoint.enabled_events && ARRAY[e.type, '*']
    ORDER BY e.position, endpoint.id
"""


@dataclass(frozen=True, slots=True)
class NewEvent:
    """An event to insert with others (`insert_events`): the columns an Event row gets."""

    id: str
    type: str
    api_version: str
    data: dict[str, Any]
    created_at: datetime


# An event, its listeners and their deliveries as CTEs of a statement whose CTE `effect` inserts the row
# the event describes (with that row's `created_at` in its RETURNING): the same INSERT, endpoint question
# and deliveries `insert_event` and the service's `_schedule_deliveries` write, for a route whose effect,
# event, deliveries and stored answer are one statement.
def listening_endpoints(tenant: Tenant, event_type: str, first_parameter: int) -> Write:
    """The tenant's endpoints listening for `event_type` as a CTE: their ids and their `position`, 1 up
    in the order of their ids (`insert_event`'s order, in which the transactional path schedules)."""
    n = first_parameter
    # only parameter numbers are formatted in
    sql = (
        "SELECT id, row_number() OVER (ORDER BY id) AS position FROM webhook_endpoints "  # noqa: S608
        f"WHERE installation_id = ${n}::text AND livemode = ${n + 1}::boolean AND deleted_at IS NULL "
        f"AND disabled_at IS NULL AND enabled_events && ARRAY[${n + 2}::text, '*']"
    )
    return Write(sql, (tenant.installation_id, tenant.livemode, event_type))


@dataclass(frozen=True, slots=True)
class PlannedDeliveries:
    """What a statement needs to schedule the deliveries of its event itself: an operation id made in
    Python for each endpoint that may listen (the `position`-th for the `position`-th endpoint), and the
    columns every delivery's operation shares (events/service.py, `planned_deliveries`)."""

    operation_ids: tuple[str, ...]
    operations: NewOperations


class DeliveriesOfEffect(NamedTuple):
    ctes: str  # `planned_deliveries`, `scheduled` (the operations), `delivered`: after `listening`, `effect`
    fit: str  # a condition for `effect`: no more endpoints listen than operation ids were made
    wakeups: str  # a scalar for the statement's SELECT: the relay woken for each operation; how many
    parameters: tuple[Any, ...]

    def without_parameters(self) -> DeliveriesOfEffect:
        """The text alone: a key for remembering the statement composed from it."""
        return self._replace(parameters=())


def deliveries_of_effect(
    tenant: Tenant, event: NewEvent, planned: PlannedDeliveries, first_parameter: int
) -> DeliveriesOfEffect:
    """One delivery of `event` per `listening` endpoint, written only where `effect` inserted its row:
    the operation (engine/repository.py, `operations_from`), the `webhook_deliveries` row (its id the
    operation's, its `created_at` the operation's) and the relay's wake-up, as `_schedule_deliveries`
    writes them. `effect` must write nothing unless `fit` holds, or an endpoint would go unserved."""
    n = first_parameter
    operations = operations_from("planned_deliveries", tenant, planned.operations, n + 3)
    # only parameter numbers and the engine's statement (its names and numbers) are formatted in;
    # the delivery's tenant is the operation's ($n+3, $n+4: `operations_from`'s first two)
    ctes = (
        f"planned_deliveries AS (SELECT (${n}::text[])[listening.position] AS id, "  # noqa: S608
        f"listening.id AS endpoint_id, ${n + 1}::text AS resource, "
        f"jsonb_build_object('event', ${n + 1}::text, 'endpoint', listening.id) AS payload "
        "FROM listening CROSS JOIN effect), "
        f"scheduled AS ({operations.sql}), "
        "delivered AS (INSERT INTO webhook_deliveries (id, installation_id, livemode, endpoint_id, event_id, "
        f"event_type, created_at) SELECT scheduled.id, ${n + 3}::text, ${n + 4}::boolean, "
        f"planned_deliveries.endpoint_id, ${n + 1}::text, ${n + 2}::text, scheduled.created_at "
        "FROM scheduled JOIN planned_deliveries ON planned_deliveries.id = scheduled.id)"
    )
    fit = f"NOT EXISTS (SELECT FROM listening WHERE listening.position > cardinality(${n}::text[]))"
    return DeliveriesOfEffect(
        ctes,
        fit,
        relay_wakeups("scheduled"),
        (list(planned.operation_ids), event.id, event.type, *operations.parameters),
    )


def event_of_effect(tenant: Tenant, event: NewEvent, first_parameter: int) -> Write:
    """The event's INSERT, written only where `effect` inserted its row. Its object was rendered before
    the database stamped the row's `created_at` (a sandbox row's is its tenant's clock): the object's
    `created` becomes that moment in Unix seconds (kit/clock.py's `to_unix`), as the object rendered
    from the stored row says. The event's own `created_at` is stamped as any event's."""
    n = first_parameter
    # only parameter numbers are formatted in
    sql = (
        "INSERT INTO events (id, installation_id, livemode, type, api_version, data, created_at) "  # noqa: S608
        f"SELECT ${n}::text, ${n + 1}::text, ${n + 2}::boolean, ${n + 3}::text, ${n + 4}::text, "
        f"jsonb_set(${n + 5}::jsonb, '{{object,created}}', "
        "to_jsonb(floor(extract(epoch FROM effect.created_at))::bigint)), "
        f"${n + 6}::timestamptz FROM effect"
    )
    parameters = (
        event.id,
        tenant.installation_id,
        tenant.livemode,
        event.type,
        event.api_version,
        orjson.dumps(event.data).decode(),
        event.created_at,
    )
    return Write(sql, parameters)


async def insert_events(
    session: AsyncSession, tenant: Tenant, events: Sequence[NewEvent]
) -> list[tuple[str, str]]:
    """Insert one tenant's events; return (event id, listening endpoint id) pairs."""
    connection = await driver_connection(session)
    rows = await connection.fetch(
        _INSERT_EVENTS,
        [event.id for event in events],
        tenant.installation_id,
        tenant.livemode,
        [event.type for event in events],
        [event.api_version for event in events],
        [orjson.dumps(event.data).decode() for event in events],
        [event.created_at for event in events],
    )
    return [(row["event_id"], row["endpoint_id"]) for row in rows]


async def get_event(session: AsyncSession, tenant: Tenant, event_id: str) -> EventRecord | None:
    async with read_connection(session) as connection:
        row = await connection.fetchrow(
            f"SELECT {_EVENT_COLUMNS} FROM events "  # noqa: S608 - the columns are ours
            "WHERE installation_id = $1 AND livemode = $2 AND id = $3",
            tenant.installation_id,
            tenant.livemode,
            event_id,
        )
    return EventRecord(*row.values()) if row is not None else None


async def list_events(
    session: AsyncSession, tenant: Tenant, *, event_type: str | None, limit: int, after: Position | None
) -> list[EventRecord]:
    """Newest first (CONVENTIONS.md §5), on `ix_events_list`."""
    page, page_parameters = newest_first_sql(4, limit=limit, after=after)
    async with read_connection(session) as connection:
        rows = await connection.fetch(
            f"SELECT {_EVENT_COLUMNS} FROM events "  # noqa: S608 - the columns are ours
            f"WHERE installation_id = $1 AND livemode = $2 AND ($3::text IS NULL OR type = $3) {page}",
            tenant.installation_id,
            tenant.livemode,
            event_type or None,
            *page_parameters,
        )
    return [EventRecord(*row.values()) for row in rows]


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


# --- deliveries --------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class DeliveryRecord:
    """A webhook delivery (its row in `webhook_deliveries`, models/event.py): written once when its
    event is, never changed (its `webhook_delivery` operation carries its status and retries)."""

    id: str
    installation_id: str
    livemode: bool
    created_at: datetime
    endpoint_id: str
    event_id: str
    event_type: str
    resend_of: str | None


_DELIVERY_COLUMNS = "id, installation_id, livemode, created_at, endpoint_id, event_id, event_type, resend_of"


async def insert_deliveries(session: AsyncSession, deliveries: Sequence[DeliveryRecord]) -> None:
    """In the transaction of their events (and of their operations): one statement for them all (a
    batch of renewals announces thousands of events, each to every endpoint listening)."""
    if not deliveries:
        return
    connection = await driver_connection(session)
    await connection.execute(
        f"INSERT INTO webhook_deliveries ({_DELIVERY_COLUMNS}) "  # noqa: S608 - the columns are ours
        "SELECT * FROM unnest($1::text[], $2::text[], $3::boolean[], $4::timestamptz[], $5::text[], "
        "$6::text[], $7::text[], $8::text[])",
        [delivery.id for delivery in deliveries],
        [delivery.installation_id for delivery in deliveries],
        [delivery.livemode for delivery in deliveries],
        [delivery.created_at for delivery in deliveries],
        [delivery.endpoint_id for delivery in deliveries],
        [delivery.event_id for delivery in deliveries],
        [delivery.event_type for delivery in deliveries],
        [delivery.resend_of for delivery in deliveries],
    )


async def list_deliveries(
    session: AsyncSession, endpoint_id: str, *, limit: int, after: Position | None
) -> list[DeliveryRecord]:
    """Newest first (CONVENTIONS.md §5), on `ix_webhook_deliveries_endpoint`."""
    page, page_parameters = newest_first_sql(2, limit=limit, after=after)
    async with read_connection(session) as connection:
        rows = await connection.fetch(
            f"SELECT {_DELIVERY_COLUMNS} FROM webhook_deliveries WHERE endpoint_id = $1 {page}",  # noqa: S608
            endpoint_id,
            *page_parameters,
        )
    return [DeliveryRecord(*row.values()) for row in rows]


async def get_delivery(session: AsyncSession, endpoint_id: str, delivery_id: str) -> DeliveryRecord | None:
    async with read_connection(session) as connection:
        row = await connection.fetchrow(
            f"SELECT {_DELIVERY_COLUMNS} FROM webhook_deliveries "  # noqa: S608 - the columns are ours
            "WHERE endpoint_id = $1 AND id = $2",
            endpoint_id,
            delivery_id,
        )
    return DeliveryRecord(*row.values()) if row is not None else None


async def delivery_states(
    session: AsyncSession, delivery_ids: Sequence[str]
) -> dict[str, tuple[str, datetime]]:
    """Each delivery's operation: its status and when its next attempt is due."""
    rows = await session.execute(
        select(Operation.id, Operation.status, Operation.next_attempt_at).where(
            Operation.id.in_(delivery_ids)
        )
    )
    return {str(row[0]): (str(row[1]), row[2]) for row in rows}


async def attempts_of(
    session: AsyncSession, delivery_ids: Sequence[str]
) -> dict[str, list[WebhookDeliveryAttempt]]:
    rows = await session.scalars(
        select(WebhookDeliveryAttempt)
        .where(WebhookDeliveryAttempt.delivery_id.in_(delivery_ids))
        .order_by(
            WebhookDeliveryAttempt.delivery_id, WebhookDeliveryAttempt.number, WebhookDeliveryAttempt.id
        )
    )
    attempts: dict[str, list[WebhookDeliveryAttempt]] = {delivery_id: [] for delivery_id in delivery_ids}
    for attempt in rows:
        attempts[attempt.delivery_id].append(attempt)
    return attempts


_INSERT_ATTEMPT = """
    INSERT INTO webhook_delivery_attempts
        (delivery_id, number, outcome, response_status, latency_ms, error)
    VALUES ($1, $2, $3, $4, $5, $6)
"""


async def record_attempt_now(
    engine: AsyncEngine,
    *,
    delivery_id: str,
    number: int,
    outcome: str,
    response_status: int | None,
    latency_ms: float | None,
    error: str | None,
) -> None:
    """Written on a connection of its own that commits at once: a failed attempt's transaction is rolled
    back by the engine, and the integrator must still see what the receiver answered."""
    async with engine.connect() as connection:  # no statement through SQLAlchemy: nothing begins
        pooled = await connection.get_raw_connection()
        driver: Any = pooled.driver_connection
        await driver.execute(
            _INSERT_ATTEMPT, delivery_id, number, outcome, response_status, latency_ms, error
        )
