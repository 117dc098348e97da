"""What `moneyrail worker` loads: the broker, then every domain's actor module, then any plug-ins."""

from __future__ import annotations

import importlib

from moneyrail.config import get_settings
from moneyrail.logging import configure_logging
from workers.broker import broker

settings = get_settings()
configure_logging(settings.log_level, json=settings.log_json)

# Domain actor modules are imported here as domains land (one module per domain).
for module_name in filter(None, (name.strip() for name in settings.worker_modules.split(","))):
    importlib.import_module(module_name)

__all__ = ["broker"]
