"""A platform's sandbox with its OAuth redirect URI and activation return URL registered."""

from __future__ import annotations

import pytest

from tests.merchants.support import register_redirect_uris


@pytest.fixture
def platform(api, bridge):
    register_redirect_uris(bridge, api.keys)
    return api
