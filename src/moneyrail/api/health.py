"""Liveness and readiness (CONVENTIONS.md §1).

Readiness follows PostgreSQL alone: a request's effect and its operations commit there, and the outbox
relay hands them to the broker when it is back, so a Redis outage delays work but must not take every web
pod out of its Service. `/readyz` still reports the broker in its detail (and `/metrics` as
`moneyrail_broker_up`), for people and alerts.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal
from urllib.parse import urlsplit

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from redis.asyncio import Redis
from sqlalchemy import text

router = APIRouter(tags=["health"])


class LivenessOut(BaseModel):
    status: Literal["ok"] = Field(description="Always `ok` while the process answers")


class ReadinessOut(BaseModel):
    status: Literal["ok", "unavailable"] = Field(description="`ok` when every check passed")
    checks: dict[str, str] = Field(description="Each dependency's state: `ok`, or `down: <reason>`")


NOT_READY: dict[int | str, dict[str, Any]] = {
    503: {"model": ReadinessOut, "description": "Not ready: a dependency is down."}
}
READINESS_TIMEOUT_SECONDS = 2.0


@router.get("/healthz", response_model=LivenessOut, operation_id="health_liveness")
async def healthz() -> dict[str, str]:
    """Liveness.

    The process is up; nothing else is checked.
    """
    return {"status": "ok"}


async def _database_ready(request: Request) -> bool:
    async with request.app.state.engine.connect() as connection:
        await connection.execute(text("SELECT 1"))
    return True


async def _broker_ready(request: Request) -> bool:
    url = request.app.state.settings.redis_url or ""
    if url.startswith(("amqp://", "amqps://")):
        # RabbitMQ: a TCP connection to the broker is the check (no AMQP client on the request path)
        parsed = urlsplit(url)
        _reader, writer = await asyncio.open_connection(parsed.hostname, parsed.port or 5672)
        writer.close()
        await writer.wait_closed()
        return True
    redis: Redis = request.app.state.redis
    return bool(await redis.ping())


async def _check(request: Request, check: Any) -> str:
    try:
        return "ok" if await asyncio.wait_for(check(request), READINESS_TIMEOUT_SECONDS) else "down"
    except Exception as exc:  # any failure means down; say which and why, without secrets
        return f"down: {type(exc).__name__}"


async def broker_reachable(request: Request) -> bool:
    return await _check(request, _broker_ready) == "ok"


@router.get("/readyz", response_model=ReadinessOut, responses=NOT_READY, operation_id="health_readiness")
async def readyz(request: Request) -> JSONResponse:
    """Readiness.

    Whether this process can serve: PostgreSQL reachable (503 otherwise). The broker's state is
    reported too, but its outage only delays asynchronous work (the outbox keeps it in PostgreSQL), so
    the process stays ready (`degraded`).
    """
    checks = {
        "database": await _check(request, _database_ready),
        "broker": await _check(request, _broker_ready),
    }
    if checks["database"] != "ok":
        return JSONResponse({"status": "unavailable", "checks": checks}, 503)
    status = "ok" if checks["broker"] == "ok" else "degraded"
    return JSONResponse({"status": status, "checks": checks}, 200)
