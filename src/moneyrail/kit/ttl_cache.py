"""A small in-process cache whose entries live a fixed number of seconds.

For lookups on every request whose answer rarely changes (an API key, a publishable key): one
dictionary read instead of a round trip to PostgreSQL. The lifetime bounds how long a change made by
another process (a key revoked from the CLI) goes unseen here; a change made by this process
discards its entry at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class TtlCache(Generic[K, V]):
    def __init__(self, lifetime_seconds: Callable[[], float], *, max_entries: int = 10_000) -> None:
        self._lifetime_seconds = lifetime_seconds  # read at each put: a setting, not frozen at import
        self._max_entries = max_entries
        self._entries: dict[K, tuple[float, V]] = {}

    def get(self, key: K) -> V | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        expires_at, value = entry
        if time.monotonic() >= expires_at:
            self._entries.pop(key, None)
            return None
        return value

    def put(self, key: K, value: V) -> None:
        lifetime = self._lifetime_seconds()
        if lifetime <= 0:
            return
        if len(self._entries) >= self._max_entries:
            self._entries.clear()  # rare (that many keys in a few seconds): start again, never grow
        self._entries[key] = (time.monotonic() + lifetime, value)

    def discard(self, key: K) -> None:
        self._entries.pop(key, None)

    def clear(self) -> None:
        self._entries.clear()
