"""Liveness and readiness (CONVENTIONS.md §1).

Readiness follows PostgreSQL alone: a request's effect and its operations commit there, and the outbox
relay hands them to the broker when it is back, so a Redis outage delays work but must not take every web
pod out of its Service. `/readyz` still reports the broker in its detail (and `/metrics` as
`moneyrail_broker_up`), for people and alerts.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlsplit

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from redis.asyncio import Redis
from sqlalchemy import text

router = APIRouter(tags=["health"])
READINESS_TIMEOUT_SECONDS = 2.0


@router.get("/healthz")
async def healthz() -> dict[str, str]:
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


@router.get("/readyz")
async def readyz(request: Request) -> JSONResponse:
    checks = {
        "database": await _check(request, _database_ready),
        "broker": await _check(request, _broker_ready),
    }
    if checks["database"] != "ok":
        return JSONResponse({"status": "unavailable", "checks": checks}, 503)
    # ready: the broker's outage only delays asynchronous work (the outbox keeps it in PostgreSQL)
    status = "ok" if checks["broker"] == "ok" else "degraded"
    return JSONResponse({"status": status, "checks": checks}, 200)
