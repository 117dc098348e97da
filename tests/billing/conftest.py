"""A sandbox installation with subscriptions and hosted checkout enabled."""

from __future__ import annotations

import pytest

from tests.billing.support import enable_billing


@pytest.fixture
def biller(api, bridge):
    enable_billing(bridge, api.keys)
    return api
