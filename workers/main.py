"""What `moneyrail worker` loads: the broker, then every domain's actor module."""

from __future__ import annotations

from moneyrail.config import get_settings
from moneyrail.logging import configure_logging
from workers.broker import broker

settings = get_settings()
configure_logging(settings.log_level, json=settings.log_json)

__all__ = ["broker"]
