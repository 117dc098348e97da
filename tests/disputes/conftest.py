"""Real worker and scheduler processes: a dispute's money moves in a worker after it opens."""

from __future__ import annotations

import pytest


@pytest.fixture
def platform(make_api):
    return make_api(kind="platform")
