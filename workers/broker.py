"""The dramatiq broker, from REDIS_URL (Redis, or RabbitMQ for amqp://). Imported first by every worker."""

from __future__ import annotations

import dramatiq

from moneyrail.config import get_settings
from moneyrail.engine.broker import build_broker


def configure_broker() -> dramatiq.Broker:
    settings = get_settings()
    if not settings.redis_url:
        raise SystemExit("REDIS_URL is not set (use `moneyrail dev` for an embedded Redis)")
    from dramatiq.middleware.prometheus import Prometheus

    broker = build_broker(settings.redis_url)
    broker.add_middleware(Prometheus())  # dramatiq's message metrics, and the exposition of ours
    dramatiq.set_broker(broker)
    return broker


broker = configure_broker()
