"""Liveness and readiness (CONVENTIONS.md §1)."""

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


@router.get("/healthz", response_model=LivenessOut)
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


@router.get("/readyz", response_model=ReadinessOut, responses=NOT_READY)
async def readyz(request: Request) -> JSONResponse:
    """Readiness.

    Whether this process can serve: PostgreSQL and the broker reachable, each check's state named
    (503 otherwise).
    """
    checks: dict[str, Any] = {}
    for name, check in (("database", _database_ready), ("broker", _broker_ready)):
        try:
            checks[name] = (
                "ok" if await asyncio.wait_for(check(request), READINESS_TIMEOUT_SECONDS) else "down"
            )
        except Exception as exc:  # any failure means not ready; say which and why, without secrets
            checks[name] = f"down: {type(exc).__name__}"
    ready = all(value == "ok" for value in checks.values())
    return JSONResponse({"status": "ok" if ready else "unavailable", "checks": checks}, 200 if ready else 503)
