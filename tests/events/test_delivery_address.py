"""A webhook delivery connects to the address it checked: the host is resolved once, so a DNS answer that
changes between the check and the connection (rebinding) cannot send it into a private network.

The resolver is the one stand-in here (no DNS server to rebind on a test machine); the receiver is a real
HTTP server on loopback, the private address a rebinding attack would aim at."""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

import httpx
import pytest

from moneyrail.events.addresses import AddressRefused, post_pinned
from tests.events.receiver import receiver

PUBLIC = "93.184.216.34"  # a global address, never reached from the test machine


class RebindingResolver:
    """Answers `first` to the first lookup and `later` to every other one, counting them."""

    def __init__(self, first: list[str], later: list[str]) -> None:
        self.first, self.later, self.lookups = first, later, 0

    async def __call__(self, host: str, port: int) -> list[str]:
        self.lookups += 1
        return self.first if self.lookups == 1 else self.later


def post(url: str, resolver: RebindingResolver, *, public_only: bool) -> httpx.Response:
    async def go() -> httpx.Response:
        _target, response = await post_pinned(
            url,
            content='{"id": "evt_1"}',
            headers={"content-type": "application/json"},
            public_only=public_only,
            timeout_seconds=1.0,
            resolver=resolver,
        )
        return response

    return asyncio.run(go())


def test_the_request_goes_to_the_address_resolved_once_with_the_url_s_host_name():
    with receiver() as hooks:
        port = urlsplit(hooks.url).port
        resolver = RebindingResolver(first=["127.0.0.1"], later=["192.0.2.1"])
        response = post(f"http://hooks.example.test:{port}/hooks?x=1", resolver, public_only=False)
    assert response.status_code == 200
    assert resolver.lookups == 1
    (delivery,) = hooks.deliveries
    assert delivery.headers["host"] == f"hooks.example.test:{port}" and delivery.path == "/hooks?x=1"


def test_a_name_that_rebinds_to_loopback_after_the_check_never_reaches_it():
    """Checked public, then answering 127.0.0.1: the connection still goes to the checked address."""
    with receiver() as hooks:
        port = urlsplit(hooks.url).port
        resolver = RebindingResolver(first=[PUBLIC], later=["127.0.0.1"])
        with pytest.raises(httpx.HTTPError):  # the public address is not reachable from here
            post(f"http://rebind.example.test:{port}/hooks", resolver, public_only=True)
    assert hooks.deliveries == [] and resolver.lookups == 1


@pytest.mark.parametrize("answer", [["10.0.0.5"], [PUBLIC, "127.0.0.1"], ["169.254.169.254"], ["::1"]])
def test_a_live_host_with_any_private_address_is_refused_before_connecting(answer):
    with receiver() as hooks:
        port = urlsplit(hooks.url).port
        with pytest.raises(AddressRefused, match="non-public"):
            post(
                f"https://mixed.example.test:{port}/hooks",
                RebindingResolver(answer, answer),
                public_only=True,
            )
    assert hooks.deliveries == []
