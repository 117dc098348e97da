"""GET /metrics for Prometheus: the web process's request histogram and the engine's state.

Outside the versioned APIs. When MONEYRAIL_METRICS_TOKEN is set, scrapers must send it as a bearer
token (Prometheus' `authorization` setting); block the path at the ingress otherwise.
"""

from __future__ import annotations

import hmac

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Histogram, generate_latest
from redis.asyncio import Redis
from redis.exceptions import RedisError
from sqlalchemy import text

from moneyrail.api.health import broker_reachable
from moneyrail.engine.broker import QUEUES
from moneyrail.engine.leadership import LEADERS_HELD
from moneyrail.engine.metrics import EngineSnapshot
from moneyrail.engine.policy import operation_types
from moneyrail.errors import AuthenticationRequired

router = APIRouter(tags=["health"])

http_latency = Histogram(
    "moneyrail_http_request_duration_seconds",
    "Request latency by route template and status.",
    ["method", "route", "status"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)

# The statuses of GAUGED_STATUSES (engine/metrics.py), each counted per type
OPERATION_STATE = text(
    """
    SELECT type, status, count(*) FROM operations
    WHERE status IN ('pending', 'running', 'dead_letter')
    GROUP BY type, status
    """
)
OLDEST_DUE = text(
    "SELECT coalesce(extract(epoch FROM now() - min(next_attempt_at)), 0) FROM operations "
    "WHERE status = 'pending' AND next_attempt_at <= now()"
)
# Due and not yet handed to the broker: what the relay still owes (the partial index on due rows serves it).
# Charges the processor made that no payment recorded, released by the orphan sweep (payments/orphans.py)
PROCESSOR_ORPHANS = text("SELECT action, count(*) FROM processor_orphans GROUP BY action")
RELAY_LAG = text(
    "SELECT coalesce(extract(epoch FROM now() - min(next_attempt_at)), 0) FROM operations "
    "WHERE status = 'pending' AND next_attempt_at <= now() AND published_at IS NULL"
)


async def queue_depths(redis: Redis | None) -> dict[str, int]:
    if redis is None:
        return {}
    # dramatiq's Redis broker keeps each queue as a list named "dramatiq:<queue>"
    return {queue: int(await redis.llen(f"dramatiq:{queue}")) for queue in QUEUES}


@router.get("/metrics", include_in_schema=False)
async def metrics(request: Request) -> Response:
    token = request.app.state.settings.metrics_token
    if token:
        given = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        if not hmac.compare_digest(given.encode(), token.encode()):
            raise AuthenticationRequired("Metrics need the configured bearer token.")
    async with request.app.state.engine.connect() as connection:
        rows = [(str(r[0]), str(r[1]), int(r[2])) for r in await connection.execute(OPERATION_STATE)]
        oldest_due = float(await connection.scalar(OLDEST_DUE) or 0)
        relay_lag = float(await connection.scalar(RELAY_LAG) or 0)
        leaders = int(await connection.scalar(LEADERS_HELD) or 0)
        orphans = {str(r[0]): int(r[1]) for r in await connection.execute(PROCESSOR_ORPHANS)}
    broker_up = await broker_reachable(request)
    try:
        depths = await queue_depths(request.app.state.redis) if broker_up else {}
    except (OSError, RedisError):  # Redis down: the rest of the metrics still matter (and say so)
        depths = {}
    registry = CollectorRegistry()
    registry.register(
        EngineSnapshot(
            rows,
            oldest_due,
            depths,
            relay_lag_seconds=relay_lag,
            scheduler_leaders=leaders,
            broker_up=broker_up,
            processor_orphans=orphans,
            known_types=operation_types(),
        )
    )
    body = generate_latest(registry) + generate_latest()  # engine state, then this process's own metrics
    return Response(body, media_type=CONTENT_TYPE_LATEST)
