"""The unit of work makes its SQLAlchemy session on first use (db/uow.py).

The intake (`POST /v1/customers`, keyed or not, replayed) and a plain payment's create
(`POST /v1/payment-intents`) run driver statements only, so over HTTP,
with the real app in this process, it must make no `AsyncSession` at all; a request that needs the
ORM still gets one, and its ORM work commits, or rolls back, with its driver statements in one
transaction.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

import httpx
import pytest
from fastapi import APIRouter, Request
from sqlalchemy.ext.asyncio import AsyncSession

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


@pytest.fixture
def sessions_made(monkeypatch: pytest.MonkeyPatch) -> list[AsyncSession]:
    """Every AsyncSession constructed in this process from now on."""
    made: list[AsyncSession] = []
    construct = AsyncSession.__init__

    def counted(self: AsyncSession, *args: Any, **kwargs: Any) -> None:
        made.append(self)
        construct(self, *args, **kwargs)

    monkeypatch.setattr(AsyncSession, "__init__", counted)
    return made


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


def test_the_intake_makes_no_session_keyed_keyless_or_replayed(servers, tenant, sessions_made, bridge, db):
    async def intake() -> list[httpx.Response]:
        async with in_process(servers, tenant.secret) as client:
            sessions_made.clear()
            keyed = {"json": {"name": "Keyed"}, "headers": {"Idempotency-Key": "k-1"}}
            return [
                await client.post("/v1/customers", json={"email": "keyless@example.com"}),
                await client.post("/v1/customers", json={"external_reference": "ref-1", "name": "Ref"}),
                await client.post("/v1/customers", **keyed),
                await client.post("/v1/customers", **keyed),
            ]

    keyless, referenced, keyed, replayed = bridge.run(intake())
    assert [r.status_code for r in (keyless, referenced, keyed, replayed)] == [200] * 4
    assert sessions_made == []
    # the lone statements committed by themselves: the customers and the key's answer are there
    assert replayed.headers["Idempotent-Replayed"] == "true" and replayed.content == keyed.content
    assert count_rows(db, "customers", tenant.installation_id) == 4  # the warm-up's included
    assert count_rows(db, "idempotency_records", tenant.installation_id) == 1


def test_a_plain_payment_create_makes_no_session_keyed_keyless_replayed_or_listened_for(
    servers, tenant, sessions_made, bridge, db
):
    """The create's one statement, and the publishable key and commission terms it looks up first (lone
    statements on a miss: this process has not read them yet), need no session; nor where an endpoint
    listens for the event (its delivery is scheduled in the same statement)."""

    async def creates() -> list[httpx.Response]:
        async with in_process(servers, tenant.secret) as client:
            body = {"amount": 2500, "currency": "eur"}
            sessions_made.clear()
            keyless = await client.post("/v1/payment-intents", json=body)
            keyed = {"json": body, "headers": {"Idempotency-Key": "pay-1"}}
            first, replayed = [await client.post("/v1/payment-intents", **keyed) for _ in range(2)]
            assert sessions_made == []
            endpoint = {"url": "http://127.0.0.1:9/hook", "enabled_events": ["payment_intent.created"]}
            assert (await client.post("/v1/webhook-endpoints", json=endpoint)).status_code == 200
            sessions_made.clear()
            listened = await client.post("/v1/payment-intents", json=body)
            return [keyless, first, replayed, listened]

    keyless, first, replayed, listened = bridge.run(creates())
    assert [r.status_code for r in (keyless, first, replayed, listened)] == [200] * 4
    assert sessions_made == []
    assert replayed.headers["Idempotent-Replayed"] == "true" and replayed.content == first.content
    assert count_rows(db, "payment_intents", tenant.installation_id) == 3
    assert count_rows(db, "webhook_deliveries", tenant.installation_id) == 1


def test_a_keyed_create_reusing_a_reference_makes_its_session_then_and_commits_the_key(
    servers, tenant, sessions_made, bridge, db
):
    """The one statement cannot settle it (nothing inserted, so no answer stored): the transactional
    path makes the session, claims the key again, reads the first customer through the ORM, and the
    key's answer commits with it."""

    async def reuse() -> tuple[httpx.Response, httpx.Response, httpx.Response]:
        async with in_process(servers, tenant.secret) as client:
            first = await client.post("/v1/customers", json={"external_reference": "shared"})
            sessions_made.clear()
            body = {"external_reference": "shared", "name": "again"}
            reused = await client.post("/v1/customers", json=body, headers={"Idempotency-Key": "k-2"})
            made_by_the_reuse = len(sessions_made)
            replayed = await client.post("/v1/customers", json=body, headers={"Idempotency-Key": "k-2"})
            assert made_by_the_reuse == 1 and len(sessions_made) == 1  # the replay makes none
            return first, reused, replayed

    first, reused, replayed = bridge.run(reuse())
    assert reused.status_code == 200 and reused.json() == first.json()
    assert replayed.headers["Idempotent-Replayed"] == "true" and replayed.content == reused.content


def test_a_route_that_needs_the_orm_commits_it_with_its_driver_statements_in_one_transaction(
    servers, tenant, sessions_made, bridge, db
):
    """The gate's key claim and the stored answer go to the driver, the effect through the ORM."""

    async def through_the_orm() -> httpx.Response:
        async with in_process(servers, tenant.secret) as client:
            sessions_made.clear()
            return await client.post("/v1/test-probes/orm-customers", headers={"Idempotency-Key": "k-3"})

    response = bridge.run(through_the_orm())
    assert response.status_code == 200, response.text
    assert len(sessions_made) == 1
    (customer_xid,) = db.execute(
        "SELECT xmin::text FROM customers WHERE id = %s", (response.json()["id"],)
    ).fetchone()
    (answer_xid,) = db.execute(
        "SELECT xmin::text FROM idempotency_records WHERE installation_id = %s AND key = 'k-3'",
        (tenant.installation_id,),
    ).fetchone()
    assert customer_xid == answer_xid  # written by one transaction


def test_a_route_that_fails_after_its_orm_flush_keeps_neither_the_effect_nor_the_key(
    servers, tenant, sessions_made, bridge, db
):
    async def failing() -> httpx.Response:
        async with in_process(servers, tenant.secret) as client:
            sessions_made.clear()
            return await client.post(
                "/v1/test-probes/orm-customers-then-failure", headers={"Idempotency-Key": "k-4"}
            )

    response = bridge.run(failing())
    assert response.status_code == 500
    assert len(sessions_made) == 1
    assert db.execute(
        "SELECT count(*) FROM customers WHERE installation_id = %s AND name = 'never committed'",
        (tenant.installation_id,),
    ).fetchone() == (0,)
    assert count_rows(db, "idempotency_records", tenant.installation_id) == 0


def test_a_plain_confirm_and_capture_commit_on_the_driver_without_the_orms_flush_or_commit(
    servers, tenant, monkeypatch, bridge, db
):
    """The payment row is read on the driver and written with its event (db/raw.py `pending_update`):
    the session then has nothing to flush and no connection in its own transaction, so the unit of
    work commits on the driver alone; the payment, its events and the keys' answers are committed."""
    from sqlalchemy.orm import Session

    from moneyrail.processor import provider
    from moneyrail.processor.sandbox import SandboxProcessor

    monkeypatch.setattr(provider, "_processor", SandboxProcessor(bridge.sessionmaker))
    orm_calls: list[str] = []
    flush, commit = Session.flush, Session.commit

    def counted_flush(self: Session, *args: Any, **kwargs: Any) -> None:
        orm_calls.append("flush")
        flush(self, *args, **kwargs)

    def counted_commit(self: Session) -> None:
        orm_calls.append("commit")
        commit(self)

    async def pay(client: httpx.AsyncClient, key: str) -> tuple[httpx.Response, httpx.Response]:
        body = {"amount": 2500, "currency": "eur", "capture_method": "manual"}
        created = (await client.post("/v1/payment-intents", json=body)).json()
        card = {"number": "4242424242424242", "exp_month": 12, "exp_year": 2034, "cvc": "123"}
        confirmed = await client.post(
            f"/v1/payment-intents/{created['id']}/confirm",
            json={"client_secret": created["client_secret"], "card": card},
            headers={"Authorization": f"Bearer {tenant.publishable_key}", "Idempotency-Key": f"{key}-1"},
        )
        captured = await client.post(
            f"/v1/payment-intents/{created['id']}/capture", headers={"Idempotency-Key": f"{key}-2"}
        )
        return confirmed, captured

    async def steps() -> tuple[httpx.Response, httpx.Response]:
        async with in_process(servers, tenant.secret) as client:
            # the first payment reads the risk lists (remembered) and makes the tenant's ledger accounts
            # through the ORM: the usual one, measured, is the next
            await pay(client, "first")
            monkeypatch.setattr(Session, "flush", counted_flush)
            monkeypatch.setattr(Session, "commit", counted_commit)
            return await pay(client, "next")

    confirmed, captured = bridge.run(steps())
    assert confirmed.status_code == 200, confirmed.text
    assert captured.status_code == 200, captured.text
    assert orm_calls == []
    payment_id = captured.json()["id"]
    assert db.execute(
        "SELECT status, amount_received FROM payment_intents WHERE id = %s", (payment_id,)
    ).fetchone() == ("succeeded", 2500)
    assert db.execute(
        "SELECT count(*) FROM events WHERE installation_id = %s AND type IN "
        "('payment_intent.amount_capturable_updated', 'payment_intent.succeeded') "
        "AND data -> 'object' ->> 'id' = %s",
        (tenant.installation_id, payment_id),
    ).fetchone() == (2,)
    assert count_rows(db, "idempotency_records", tenant.installation_id) == 4
