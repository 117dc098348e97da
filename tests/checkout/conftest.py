"""A sandbox installation with hosted checkout enabled and the shop's return URLs registered."""

from __future__ import annotations

import pytest

from tests.checkout.support import enable_checkout


@pytest.fixture
def shop(api, bridge):
    enable_checkout(bridge, api.keys)
    return api
