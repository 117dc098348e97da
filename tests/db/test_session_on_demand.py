"""A request's ORM work and its driver statements (the key's claim, the stored answer) are one
transaction: both commit, or neither does. Over HTTP, with the real app in this process."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

import httpx
from fastapi import APIRouter, Request

from moneyrail.api.context import Principal, request_session
from moneyrail.api.routing import MoneyrailRoute, scoped
from moneyrail.app import create_app
from moneyrail.config import Settings
from moneyrail.kit.ids import new_id
from moneyrail.models import Customer
from tests.helpers import count_rows

# Routes of this test only, on the real app: ORM work behind the real gate and route class
probes = APIRouter(route_class=MoneyrailRoute)


def _customer(principal: Principal, name: str) -> Customer:
    tenant = principal.tenant
    return Customer(
        id=new_id("cus"), installation_id=tenant.installation_id, livemode=tenant.livemode, name=name
    )


@probes.post("/v1/test-probes/orm-customers")
async def create_through_the_orm(
    request: Request, principal: Annotated[Principal, scoped("customers:write")]
) -> dict[str, str]:
    customer = _customer(principal, "through the ORM")
    session = request_session(request)
    session.add(customer)
    await session.flush()
    return {"id": customer.id}


@probes.post("/v1/test-probes/orm-customers-then-failure")
async def fail_after_the_orm(
    request: Request, principal: Annotated[Principal, scoped("customers:write")]
) -> dict[str, str]:
    session = request_session(request)
    session.add(_customer(principal, "never committed"))
    await session.flush()
    raise RuntimeError("after the ORM's flush")


@asynccontextmanager
async def in_process(servers: Any, secret: str) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(
        Settings(
            DATABASE_URL=servers.database_url,
            REDIS_URL=servers.redis_url,
            secret_keys=servers.secret_keys,
            log_json=False,
            db_pool_size=2,
            db_max_overflow=2,
        )
    )
    app.include_router(probes)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=transport, base_url="http://test", headers={"Authorization": f"Bearer {secret}"}
        ) as client,
    ):
        # the key and the rate limit's settings remembered, as on every request but a process's first
        assert (await client.post("/v1/customers", json={"name": "warm-up"})).status_code == 200
        yield client


def test_a_route_that_needs_the_orm_commits_it_with_its_driver_statements_in_one_transaction(
    servers, tenant, bridge, db
):
    """The gate's key claim and the stored answer go to the driver, the effect through the ORM."""

    async def through_the_orm() -> httpx.Response:
        async with in_process(servers, tenant.secret) as client:
            return await client.post("/v1/test-probes/orm-customers", headers={"Idempotency-Key": "k-3"})

    response = bridge.run(through_the_orm())
    assert response.status_code == 200, response.text
    (customer_xid,) = db.execute(
        "SELECT xmin::text FROM customers WHERE id = %s", (response.json()["id"],)
    ).fetchone()
    (answer_xid,) = db.execute(
        "SELECT xmin::text FROM idempotency_records WHERE installation_id = %s AND key = 'k-3'",
        (tenant.installation_id,),
    ).fetchone()
    assert customer_xid == answer_xid  # written by one transaction


def test_a_route_that_fails_after_its_orm_flush_keeps_neither_the_effect_nor_the_key(
    servers, tenant, bridge, db
):
    async def failing() -> httpx.Response:
        async with in_process(servers, tenant.secret) as client:
            return await client.post(
                "/v1/test-probes/orm-customers-then-failure", headers={"Idempotency-Key": "k-4"}
            )

    response = bridge.run(failing())
    assert response.status_code == 500
    assert db.execute(
        "SELECT count(*) FROM customers WHERE installation_id = %s AND name = 'never committed'",
        (tenant.installation_id,),
    ).fetchone() == (0,)
    assert count_rows(db, "idempotency_records", tenant.installation_id) == 0
