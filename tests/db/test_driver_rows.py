"""Rows read and written on the driver inside a unit of work (db/raw.py `loaded_row`, `pending_update`),
and pooled connections given back without SQLAlchemy's greenlet where that does no I/O.

A row read on the driver and written with another statement (a payment step's UPDATE rides in its
event's statement) must leave the ORM nothing to flush and nothing to commit, yet a change made after
that is still flushed; a connection past the pool's size must still be closed when it is given back.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from moneyrail.db import uow as uow_module
from moneyrail.db.engine import async_database_url, create_sessionmaker
from moneyrail.db.raw import PooledConnection, driver_connection, loaded_row, pending_update, select_list
from moneyrail.db.uow import UnitOfWork
from moneyrail.kit.ids import new_id
from moneyrail.models import Customer

_READ = f"SELECT {select_list(Customer, 'c')} FROM customers AS c WHERE c.id = $1"


def _customer_in_db(bridge: Any, tenant: Any) -> str:
    customer_id = new_id("cus")

    async def add(session: Any) -> None:
        session.add(
            Customer(
                id=customer_id,
                installation_id=tenant.installation_id,
                livemode=tenant.livemode,
                name="before",
                email="kept@example.com",
                metadata_={"was": 1},
            )
        )
        await session.flush()

    bridge.in_unit_of_work(add)
    return customer_id


def test_a_change_after_the_driver_wrote_the_row_is_still_flushed_at_commit(bridge, db, tenant):
    customer_id = _customer_in_db(bridge, tenant)

    async def work() -> bool:
        async with UnitOfWork(bridge.sessionmaker) as uow:
            session = uow.session
            connection = await driver_connection(session)
            customer = loaded_row(session, Customer, await connection.fetchrow(_READ, customer_id))
            customer.name = "by the driver"
            write = pending_update(customer, first_parameter=1)
            assert write is not None
            await connection.execute(write.sql, *write.parameters)
            customer.email = "by-the-orm@example.com"
            pending = uow_module._orm_has_work(session)
            await uow.commit()
            return pending

    assert bridge.run(work()) is True
    assert db.execute("SELECT name, email FROM customers WHERE id = %s", (customer_id,)).fetchone() == (
        "by the driver",
        "by-the-orm@example.com",
    )


def _small_engine(servers: Any) -> AsyncEngine:
    return create_async_engine(async_database_url(servers.database_url), pool_size=1, max_overflow=2)


def test_lone_statement_connections_past_the_pool_size_are_closed_when_given_back(bridge, servers):
    async def work() -> tuple[list[bool], int]:
        engine = _small_engine(servers)
        try:
            async with AsyncExitStack() as stack:
                held = [
                    await stack.enter_async_context(PooledConnection(engine, yield_before_sending=False))
                    for _ in range(3)
                ]
                for connection in held:
                    assert await connection.fetchval("SELECT 1") == 1
            return [connection.is_closed() for connection in held], engine.sync_engine.pool.checkedin()
        finally:
            await engine.dispose()

    closed, checked_in = bridge.run(work())
    # given back in reverse: the last one takes the pool's one place, the two overflow ones are closed
    assert closed == [True, True, False] and checked_in == 1


def test_unit_of_work_connections_past_the_pool_size_are_closed_when_given_back(bridge, servers):
    async def work() -> tuple[list[bool], int]:
        engine = _small_engine(servers)
        sessionmaker = create_sessionmaker(engine)
        try:
            async with AsyncExitStack() as stack:
                held = []
                for _ in range(3):  # three transactions open at once, each holding its connection
                    uow = await stack.enter_async_context(UnitOfWork(sessionmaker))
                    connection = await driver_connection(uow.session)
                    assert await connection.fetchval("SELECT 1") == 1
                    held.append(connection)
            # the one kept by the pool went back with its transaction rolled back
            kept = [connection for connection in held if not connection.is_closed()]
            assert [connection.is_in_transaction() for connection in kept] == [False]
            return [connection.is_closed() for connection in held], engine.sync_engine.pool.checkedin()
        finally:
            await engine.dispose()

    closed, checked_in = bridge.run(work())
    assert closed == [True, True, False] and checked_in == 1
