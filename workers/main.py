"""What `moneyrail worker` loads: the broker, then every domain's actor module, then any plug-ins."""

from __future__ import annotations

import os
import tempfile

# Before anything imports prometheus_client: every worker process writes its metrics to files in one
# folder, which dramatiq's exposition server adds up. `moneyrail worker` sets these; the defaults serve
# a bare `dramatiq workers.main`.
_metrics_dir = os.environ.setdefault(
    "dramatiq_prom_db", os.path.join(tempfile.gettempdir(), "dramatiq-prometheus")
)
os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", _metrics_dir)

import importlib  # noqa: E402

import moneyrail.domains  # noqa: E402, F401 - policies and outcome listeners of every domain
from moneyrail.config import get_settings  # noqa: E402
from moneyrail.logging import configure_logging  # noqa: E402
from workers import (  # noqa: E402, F401 - register the actors
    billing,
    connect,
    deliveries,
    disputes,
    invoices,
    payments,
    payouts,
    processor_events,
    reconciliation,
    transfers,
    webhooks,
)
from workers.broker import broker  # noqa: E402

settings = get_settings()
configure_logging(settings.log_level, json=settings.log_json)

# One actor module per domain, imported above; plug-ins named by MONEYRAIL_WORKER_MODULES below.
for module_name in filter(None, (name.strip() for name in settings.worker_modules.split(","))):
    importlib.import_module(module_name)

__all__ = ["broker"]
