"""The dramatiq broker from a URL: Redis (`redis://`, `unix://`) or RabbitMQ (`amqp://`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import dramatiq
from dramatiq.brokers.redis import RedisBroker
from dramatiq.middleware import AsyncIO, Retries

QUEUES = ("money", "webhooks", "default")


def build_broker(url: str) -> dramatiq.Broker:
    broker: dramatiq.Broker
    if url.startswith(("amqp://", "amqps://")):
        from dramatiq.brokers.rabbitmq import RabbitmqBroker

        broker = RabbitmqBroker(url=url)
    else:
        broker = RedisBroker(url=url)  # type: ignore[no-untyped-call]
    broker.add_middleware(AsyncIO())
    for middleware in broker.middleware:
        if isinstance(middleware, Retries):
            # PostgreSQL holds the retry state; a message is delivered, never retried by the broker.
            middleware.max_retries = 0
    for queue_name in QUEUES:
        broker.declare_queue(queue_name)
    return broker


def message_for(actor_name: str, queue_name: str, operation_ids: Sequence[str]) -> Any:
    """The message that runs operations of one actor: actors take ids, never objects."""
    return dramatiq.Message(
        queue_name=queue_name, actor_name=actor_name, args=tuple(operation_ids), kwargs={}, options={}
    )
