"""The outbox relay against a real Redis that stops answering for a while."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

from redis import Redis

from moneyrail.embedded import EmbeddedRedis
from moneyrail.engine.broker import build_broker
from moneyrail.engine.outbox import relay_once
from tests.engine.conftest import create_probe

PAUSE_MS = 1500


def test_a_hung_broker_holds_up_the_relay_but_not_the_schedulers_loop(bridge, db, tenant, tmp_path):
    redis = EmbeddedRedis(tmp_path / "redis")
    redis_url = redis.start()
    try:
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
    finally:
        redis.stop()
