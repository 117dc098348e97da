"""Fixtures the payment tests share."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.engine.conftest import assert_ledger_verifies


@pytest.fixture(scope="module")
def ledger_verified_afterwards(servers: Any) -> Iterator[None]:
    """`moneyrail ledger verify` once the module's tests ran (the ones that move money through fees)."""
    yield
    assert_ledger_verifies(servers)
