"""The dramatiq broker, from REDIS_URL. Imported first by every worker and by the scheduler."""

from __future__ import annotations

import dramatiq
from dramatiq.brokers.redis import RedisBroker

from moneyrail.config import get_settings


def build_broker(url: str) -> dramatiq.Broker:
    return RedisBroker(url=url)


def configure_broker() -> dramatiq.Broker:
    settings = get_settings()
    if not settings.redis_url:
        raise SystemExit("REDIS_URL is not set (use `moneyrail dev` for an embedded Redis)")
    broker = build_broker(settings.redis_url)
    dramatiq.set_broker(broker)
    return broker


broker = configure_broker()
