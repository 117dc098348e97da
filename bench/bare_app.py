"""The baseline of the intake benchmark: a bare FastAPI + asyncpg `POST /v1/customers`.

One INSERT per request into its own table, nothing else: no authentication, no idempotency store,
no events, no ORM. It runs under uvicorn exactly like `moneyrail web` (one process, uvloop and
httptools, access log off), so the gap between the two is what moneyrail's intake path costs.

    DATABASE_URL=postgresql://... .venv/bin/python bench/bare_app.py --port 8001

The pool is sized like moneyrail's default SQLAlchemy pool (10 connections plus 20 overflow).
"""

from __future__ import annotations

import argparse
import os
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
import uvicorn
from fastapi import FastAPI, Request
from pydantic import BaseModel

POOL_MIN = 10
POOL_MAX = 30

CREATE_TABLE = """
CREATE TABLE IF NOT EXISTS bare_customers (
    id text PRIMARY KEY,
    email text,
    name text,
    created_at timestamptz NOT NULL DEFAULT now()
)
"""
INSERT = """
INSERT INTO bare_customers (id, email, name) VALUES ($1, $2, $3)
RETURNING id, email, name, extract(epoch FROM created_at)::bigint AS created
"""


class CustomerIn(BaseModel):
    email: str | None = None
    name: str | None = None


def create_app(database_url: str) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        pool = await asyncpg.create_pool(database_url, min_size=POOL_MIN, max_size=POOL_MAX)
        await pool.execute(CREATE_TABLE)
        app.state.pool = pool
        try:
            yield
        finally:
            await pool.close()

    app = FastAPI(title="bare intake baseline", lifespan=lifespan)

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/v1/customers")
    async def create_customer(request: Request, body: CustomerIn) -> dict[str, Any]:
        pool: asyncpg.Pool = request.app.state.pool
        row = await pool.fetchrow(INSERT, "cus_" + secrets.token_hex(12), body.email, body.name)
        return {"object": "customer", **dict(row)}

    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    args = parser.parse_args()
    database_url = os.environ.get("DATABASE_URL")
    if not database_url:
        raise SystemExit("DATABASE_URL is not set")
    uvicorn.run(
        create_app(database_url),
        host=args.host,
        port=args.port,
        access_log=False,
        log_level="warning",
    )


if __name__ == "__main__":
    main()
