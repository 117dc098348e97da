"""Fixtures of the ledger tests: a fresh installation per test isolates them (the ledger is never
rolled back or cleaned: it is append-only)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.harness import AsyncBridge, TenantKeys, create_tenant


@pytest.fixture
def make_tenant(bridge: AsyncBridge) -> Callable[[], TenantKeys]:
    return lambda: create_tenant(bridge)
