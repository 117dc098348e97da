"""The adapter pointed at the Stripe double (`stripe_stack`, tests/conftest.py: localstripe with the double
in front, once per session)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from moneyrail.processor.stripe import StripeProcessor
from tests.processor.stripe.servers import SECRET_KEY, StripeServers
from tests.processor.stripe.support import StripeWorld


@pytest.fixture(scope="module")
def runner() -> Iterator[asyncio.Runner]:
    """One event loop for a module: the adapter's httpx client lives on it."""
    with asyncio.Runner() as loop:
        yield loop


@pytest.fixture(scope="module")
def world(stripe_stack: StripeServers, runner: asyncio.Runner) -> Iterator[StripeWorld]:
    processor = StripeProcessor(SECRET_KEY, api_base=stripe_stack.double)
    yield StripeWorld(stripe_stack, processor, runner)
    runner.run(processor.aclose())
