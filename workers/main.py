"""What `moneyrail worker` loads: the broker, then every domain's actor module, then any plug-ins."""

from __future__ import annotations

import importlib

from moneyrail.config import get_settings
from moneyrail.logging import configure_logging
from workers import webhooks  # noqa: F401 - registers the actor
from workers.broker import broker

settings = get_settings()
configure_logging(settings.log_level, json=settings.log_json)

# One actor module per domain, imported above; plug-ins named by MONEYRAIL_WORKER_MODULES below.
for module_name in filter(None, (name.strip() for name in settings.worker_modules.split(","))):
    importlib.import_module(module_name)

__all__ = ["broker"]
