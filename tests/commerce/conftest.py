"""A sandbox installation with hosted checkout enabled (the order flow's checkout)."""

from __future__ import annotations

import pytest

from tests.checkout.support import enable_checkout


@pytest.fixture
def shop(api, bridge):
    enable_checkout(bridge, api.keys)
    return api
