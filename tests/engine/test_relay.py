"""The outbox relay against a real Redis that stops answering for a while."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from dramatiq import Message
from redis import Redis

from moneyrail.embedded import EmbeddedRedis
from moneyrail.engine.broker import build_broker
from moneyrail.engine.outbox import relay_once
from tests.engine.conftest import create_probe, create_probes
from tests.engine.probe import PROBE_BATCHED_TYPE

PAUSE_MS = 1500


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    """A Redis of the test's own, so its queues hold only what this test's relay sent."""
    redis = EmbeddedRedis(tmp_path / "redis")
    try:
        yield redis.start()
    finally:
        redis.stop()


def test_a_hung_broker_holds_up_the_relay_but_not_the_schedulers_loop(bridge, db, tenant, redis_url):
    broker = build_broker(redis_url)
    operation_id = create_probe(bridge, tenant.tenant)

    async def relay_while_the_broker_hangs() -> tuple[float, int]:
        # A real hang: Redis holds every write (the enqueue script included) for PAUSE_MS.
        Redis.from_url(redis_url).execute_command("CLIENT", "PAUSE", PAUSE_MS, "WRITE")
        ticks = 0

        async def other_work_on_the_loop() -> None:  # the scheduler's jobs and its leader check
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.05)

        ticker = asyncio.create_task(other_work_on_the_loop())
        started = time.monotonic()
        await relay_once(bridge.sessionmaker, broker, redrive_after=timedelta(seconds=30))
        elapsed = time.monotonic() - started
        ticker.cancel()
        return elapsed, ticks

    elapsed, ticks = bridge.run(relay_while_the_broker_hangs())
    assert elapsed >= PAUSE_MS / 1000 * 0.8  # the relay did wait for the broker
    assert ticks >= elapsed / 0.05 * 0.5  # and the loop went on with other work meanwhile
    (published_at,) = db.execute(
        "SELECT published_at FROM operations WHERE id = %s", (operation_id,)
    ).fetchone()
    assert published_at is not None
    queued = Redis.from_url(redis_url).hvals("dramatiq:money.msgs")
    assert any(operation_id.encode() in message for message in queued)


def _messages_for(redis_url: str, operation_ids: list[str]) -> dict[str, int]:
    queued = Redis.from_url(redis_url).hvals("dramatiq:money.msgs")
    return {
        operation_id: sum(operation_id.encode() in message for message in queued)
        for operation_id in operation_ids
    }


def test_two_relays_at_once_send_each_operation_once(bridge, tenant, redis_url):
    broker = build_broker(redis_url)
    operation_ids = [create_probe(bridge, tenant.tenant, amount=100 + n) for n in range(20)]

    async def two_relays() -> tuple[int, int, bool]:
        # The first relay takes the batch and waits on the broker, its rows locked meanwhile;
        # the second runs in that window and must skip them rather than send them too.
        Redis.from_url(redis_url).execute_command("CLIENT", "PAUSE", 1000, "WRITE")
        first = asyncio.create_task(
            relay_once(bridge.sessionmaker, broker, redrive_after=timedelta(seconds=30))
        )
        await asyncio.sleep(0.3)
        second = await relay_once(bridge.sessionmaker, broker, redrive_after=timedelta(seconds=30))
        second_waited_for_the_first = first.done()
        return (await first).published, second.published, second_waited_for_the_first

    first, _, second_waited_for_the_first = bridge.run(two_relays())
    # The database is shared with the whole suite: the second relay may rightly send an earlier
    # test's operation that fell due meanwhile, so what it must not send is counted per operation.
    assert first >= 20
    assert not second_waited_for_the_first  # it skipped the locked rows instead of queueing on them
    assert _messages_for(redis_url, operation_ids) == {operation_id: 1 for operation_id in operation_ids}


def test_a_published_operation_no_worker_took_is_sent_again_once_the_redrive_delay_passed(
    bridge, tenant, redis_url
):
    broker = build_broker(redis_url)
    operation_id = create_probe(bridge, tenant.tenant)

    def relay(redrive_after: timedelta) -> None:
        bridge.run(relay_once(bridge.sessionmaker, broker, redrive_after=redrive_after))

    relay(timedelta(seconds=30))
    relay(timedelta(seconds=30))  # published a moment ago: a worker may still take it
    assert _messages_for(redis_url, [operation_id]) == {operation_id: 1}
    time.sleep(0.2)
    relay(timedelta(seconds=0.1))  # no worker took it within the delay: sent again
    assert _messages_for(redis_url, [operation_id]) == {operation_id: 2}


def test_the_relay_packs_a_batched_types_operations_into_messages_of_at_most_its_batch_size(
    bridge, tenant, redis_url
):
    broker = build_broker(redis_url)
    batched = create_probes(bridge, tenant.tenant, [{}] * 40, PROBE_BATCHED_TYPE)  # 16 a message
    single = create_probes(bridge, tenant.tenant, [{}] * 3)  # the default: one a message
    bridge.run(relay_once(bridge.sessionmaker, broker, redrive_after=timedelta(seconds=30)))

    messages = [Message.decode(raw).args for raw in Redis.from_url(redis_url).hvals("dramatiq:money.msgs")]
    carrying_batched = [args for args in messages if set(args) & set(batched)]
    assert sorted(i for args in carrying_batched for i in args if i in batched) == sorted(batched)
    # 40 in messages of at most 16 (an earlier test's leftovers, due before them, may shift a cut)
    assert all(len(args) <= 16 for args in carrying_batched) and len(carrying_batched) <= 4
    assert sorted(args for args in messages if set(args) & set(single)) == sorted((i,) for i in single)
