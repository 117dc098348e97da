"""The web process's runtime tuning: Python's cyclic garbage collector.

Reference counting frees almost everything a request allocates; the cyclic collector is only for
reference cycles (ORM objects and their states, exceptions with their tracebacks). With Python's default
threshold (700) it runs every few requests, and each full collection walks every object of the process,
almost all of them the modules, mappers and routes loaded at startup, which never become garbage.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.orm import configure_mappers

from moneyrail.config import Settings


@contextmanager
def tuned_garbage_collector(settings: Settings) -> Iterator[None]:
    """For the app's lifetime: the startup objects frozen (`gc.freeze`) and the gen0 threshold raised,
    as the settings ask; both undone on the way out (tests start many apps in one process)."""
    thresholds = gc.get_threshold()
    if settings.gc_gen0_threshold:
        gc.set_threshold(settings.gc_gen0_threshold, *thresholds[1:])
    if settings.gc_freeze:
        configure_mappers()  # else the mappers' configuration is built at the first request, unfrozen
        gc.collect()  # what is garbage now is freed, not frozen for good
        gc.freeze()
    try:
        yield
    finally:
        if settings.gc_freeze:
            gc.unfreeze()
        gc.set_threshold(*thresholds)
