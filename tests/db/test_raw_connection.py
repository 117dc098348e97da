"""Statements sent straight to the driver belong to the unit of work's transaction, not to autocommit."""

from __future__ import annotations

import asyncio
import contextlib

from sqlalchemy import text

from moneyrail.db.raw import driver_connection, lone_statement_connection


def test_a_raw_statement_runs_in_the_sessions_transaction_and_rolls_back_with_it(bridge, db):
    async def work(session):
        driver = await driver_connection(session)  # first statement of the transaction goes raw
        raw_now = await driver.fetchval("SELECT now()")
        await driver.execute("CREATE TEMP TABLE raw_probe (v int) ON COMMIT DROP")
        await driver.execute("INSERT INTO raw_probe VALUES (1)")
        await asyncio.sleep(0.05)
        orm_now = await session.scalar(text("SELECT now()"))
        in_transaction = await driver.fetchval("SELECT count(*) FROM raw_probe")
        marker = await driver.fetchval("SELECT txid_current()")
        orm_marker = await session.scalar(text("SELECT txid_current()"))
        return raw_now, orm_now, in_transaction, marker, orm_marker

    async def rolled_back(session):
        driver = await driver_connection(session)
        await driver.execute("SELECT pg_advisory_xact_lock(424242)")
        await session.rollback()

    raw_now, orm_now, count, marker, orm_marker = bridge.run(_in_session(bridge, work))
    assert raw_now == orm_now  # now() is the transaction's start: one transaction
    assert marker == orm_marker
    assert count == 1
    bridge.run(_in_session(bridge, rolled_back))
    # the transaction-scoped lock went with the rollback
    assert db.execute("SELECT pg_try_advisory_lock(424242)").fetchone()[0] is True
    db.execute("SELECT pg_advisory_unlock(424242)")


async def _in_session(bridge, work):
    from moneyrail.db.uow import UnitOfWork

    async with UnitOfWork(bridge._sessionmaker) as uow:
        return await work(uow.session)


def _kill_the_pool_then_ask(bridge, db, backend_pid) -> tuple[set[int], int]:
    """As after a PostgreSQL restart: the pooled connections' backends are terminated, then six units
    of work ask `backend_pid`. Answers the killed backends' pids and how many of the six failed."""
    pooled = {bridge.run(_in_session(bridge, backend_pid)) for _ in range(3)}
    for pid in pooled:
        db.execute("SELECT pg_terminate_backend(%s)", (pid,))
    failures = 0
    for _ in range(6):
        try:
            bridge.run(_in_session(bridge, backend_pid))
        except Exception:
            failures += 1
    return pooled, failures


def test_a_dead_pooled_connection_fails_one_request_then_is_dropped_not_handed_out_again(bridge, db):
    """As after a PostgreSQL restart: every pooled connection is dead; each may fail one request only."""

    async def backend_pid(session):
        return await (await driver_connection(session)).fetchval("SELECT pg_backend_pid()")

    pooled, failures = _kill_the_pool_then_ask(bridge, db, backend_pid)
    assert failures <= len(pooled)
    assert bridge.run(_in_session(bridge, backend_pid)) not in pooled


def test_a_lone_statement_runs_outside_any_transaction_on_a_pooled_connection(bridge):
    """No BEGIN: PostgreSQL runs the statement in a transaction of its own (one round trip)."""

    async def outside(session):
        async with lone_statement_connection(session) as connection:
            first = await connection.fetchval("SELECT txid_current()")
            second = await connection.fetchval("SELECT txid_current()")
            return first != second, connection.is_in_transaction(), session.in_transaction()

    assert bridge.run(_in_session(bridge, outside)) == (True, False, False)


def test_a_dead_pooled_connection_fails_one_lone_statement_then_is_dropped(bridge, db):
    """The lone statement's connection is checked out without SQLAlchemy's Connection, which would
    otherwise notice the failure: a dead one must still leave the pool after failing once."""

    async def backend_pid(session):
        async with lone_statement_connection(session) as connection:
            return await connection.fetchval("SELECT pg_backend_pid()")

    pooled, failures = _kill_the_pool_then_ask(bridge, db, backend_pid)
    assert 1 <= failures <= len(pooled)
    assert bridge.run(_in_session(bridge, backend_pid)) not in pooled


def test_a_lone_statement_on_an_idle_connection_is_sent_after_one_pass_of_the_event_loop(bridge):
    """Requests that reach their statement in the same pass send them together (db/raw.py,
    `PooledConnection`): another ready task runs before the connection is handed over."""

    async def handed_over_after_another_task(session):
        ran: list[str] = []

        async def other() -> None:
            ran.append("other")

        async with lone_statement_connection(session):  # warms the pool: an idle connection next
            pass
        pool = session.bind.sync_engine.pool
        assert pool.checkedin() >= 1
        task = asyncio.get_running_loop().create_task(other())
        async with lone_statement_connection(session) as connection:
            ran.append("handed over")
            await connection.fetchval("SELECT 1")
        await task
        return ran

    assert bridge.run(_in_session(bridge, handed_over_after_another_task)) == ["other", "handed over"]


def test_a_lone_statement_cancelled_during_its_pass_of_the_event_loop_holds_no_connection(bridge):
    async def cancelled_during_the_pass(session):
        async with lone_statement_connection(session):  # warms the pool
            pass
        pool = session.bind.sync_engine.pool
        checked_out = pool.checkedout()
        sent: list[int] = []

        async def lone() -> None:
            async with lone_statement_connection(session) as connection:
                sent.append(await connection.fetchval("SELECT 1"))

        task = asyncio.get_running_loop().create_task(lone())
        await asyncio.sleep(0)  # the task started and yields once before taking its connection
        held_during_the_pass = pool.checkedout() - checked_out
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        return held_during_the_pass, pool.checkedout() - checked_out, task.cancelled(), sent

    assert bridge.run(_in_session(bridge, cancelled_during_the_pass)) == (0, 0, True, [])


def test_after_a_commit_the_next_orm_statement_begins_a_transaction_that_rolls_back(bridge, db):
    """The connection `driver_connection` binds is AUTOCOMMIT to SQLAlchemy (its transaction is the
    driver's): once committed, the unit of work must not run ORM statements there unprotected."""

    async def commit_then_roll_back(session):
        from moneyrail.db.uow import commit, rollback

        driver = await driver_connection(session)
        await driver.execute("SELECT 1")
        await commit(session)
        await session.execute(text("SELECT pg_advisory_xact_lock(434343)"))
        held = await session.scalar(
            text("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 434343")
        )
        await rollback(session)
        return held

    # in autocommit the lock would have gone with its statement
    assert bridge.run(_in_session(bridge, commit_then_roll_back)) == 1
    # a transaction-scoped lock outlives its statement only inside a transaction: gone with the rollback
    assert db.execute("SELECT pg_try_advisory_lock(434343)").fetchone()[0] is True
    db.execute("SELECT pg_advisory_unlock(434343)")


def test_a_pooled_connection_given_back_inside_a_transaction_is_never_handed_out_again(bridge):
    async def leave_one_in_a_transaction(session):
        pooled = await session.bind.raw_connection()
        await pooled.driver_connection.execute("BEGIN")
        pooled.close()  # as a release cut short would: back to the pool mid-transaction
        async with lone_statement_connection(session) as connection:
            return connection.is_in_transaction(), await connection.fetchval("SELECT 1")

    assert bridge.run(_in_session(bridge, leave_one_in_a_transaction)) == (False, 1)
