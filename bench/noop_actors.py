"""The reference for bench/engine.py: dramatiq draining no-op messages on the same Redis."""

from __future__ import annotations

import os

import dramatiq
from dramatiq.brokers.redis import RedisBroker

broker = RedisBroker(url=os.environ["REDIS_URL"])
dramatiq.set_broker(broker)


@dramatiq.actor(actor_name="bench.noop", queue_name="bench_noop", max_retries=0)
def noop(number: int) -> None:
    del number
