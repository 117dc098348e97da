"""Real worker and scheduler processes for the money that moves after a request answers."""

from __future__ import annotations

import pytest


@pytest.fixture
def platform(make_api):
    """A platform installation's sandbox: it distributes payments to connected accounts."""
    return make_api(kind="platform")
