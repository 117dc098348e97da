"""The web process's garbage collector settings (runtime.py): applied for the app's lifetime, undone after."""

from __future__ import annotations

import asyncio
import gc
import weakref

from cryptography.fernet import Fernet

from moneyrail.app import create_app
from moneyrail.config import Settings
from moneyrail.runtime import tuned_garbage_collector

UNUSED_DATABASE = "postgresql://unused@127.0.0.1/unused"


def settings(**fields: object) -> Settings:
    return Settings(database_url=UNUSED_DATABASE, secret_keys=Fernet.generate_key().decode(), **fields)


def test_the_started_app_freezes_what_is_loaded_and_raises_the_gen0_threshold_until_it_stops():
    before = gc.get_threshold()
    app = create_app(settings(gc_gen0_threshold=12345))

    async def started() -> tuple[tuple[int, int, int], int]:
        async with app.router.lifespan_context(app):  # no connection is opened at start-up
            return gc.get_threshold(), gc.get_freeze_count()

    threshold, frozen = asyncio.run(started())
    assert threshold == (12345, *before[1:])
    assert frozen > 10_000  # modules, routes, mappers: everything alive once the app has started
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_the_garbage_collector_is_left_as_python_has_it_when_the_settings_say_so():
    before = gc.get_threshold()
    with tuned_garbage_collector(settings(gc_freeze=False, gc_gen0_threshold=0)):
        assert gc.get_threshold() == before and gc.get_freeze_count() == 0
    assert gc.get_threshold() == before


def test_garbage_at_start_up_is_collected_not_frozen():
    class Cycle:
        def __init__(self) -> None:
            self.me = self

    garbage = weakref.ref(Cycle())  # unreachable, kept alive only by its own cycle until collected
    with tuned_garbage_collector(settings()):
        assert garbage() is None  # frozen, it would live as long as the process
