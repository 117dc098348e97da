"""The Python client (clients/python, installed into the project's environment by run.py) against the
session's real web process, with one worker and scheduler for the package: operations, transfers,
refunds and webhook deliveries run as they do in production."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import httpx
import pytest

from moneyrail_client import Moneyrail
from tests.conftest import WebServer
from tests.harness import TLS, AsyncBridge, Process, Servers, TenantKeys, create_tenant
from tests.stacks import FAST_RETRIES, shared_stack


@pytest.fixture
def client_stack(servers: Servers) -> Process:
    """A worker and a scheduler (webhooks retried quickly), shared with the tests before (tests/stacks.py)."""
    return shared_stack(servers, "fast-retries", **FAST_RETRIES).worker


@dataclass
class Recorder:
    """What went over the wire: each attempt's method, path and headers, and each answer's status."""

    requests: list[httpx.Request] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)
    replayed: list[bool] = field(default_factory=list)

    def on_request(self, request: httpx.Request) -> None:
        self.requests.append(request)

    def on_response(self, response: httpx.Response) -> None:
        self.statuses.append(response.status_code)
        self.replayed.append(response.headers.get("idempotent-replayed") == "true")

    def http_client(self, timeout: float = 30) -> httpx.Client:
        return httpx.Client(
            timeout=timeout,
            event_hooks={"request": [self.on_request], "response": [self.on_response]},
            verify=TLS,
        )


MakeClient = Callable[..., Moneyrail]


@pytest.fixture
def make_client(web: WebServer, bridge: AsyncBridge) -> Iterator[MakeClient]:
    """`make_client(kind=..., livemode=..., **client_options)`: a new tenant's all-scopes key in a client."""
    clients: list[Moneyrail] = []

    def make(
        *, kind: str = "direct", livemode: bool = False, keys: TenantKeys | None = None, **options
    ) -> Moneyrail:
        keys = keys or create_tenant(bridge, kind=kind, livemode=livemode)
        client = Moneyrail(api_key=keys.secret, base_url=web.base_url, **options)
        client.keys = keys  # type: ignore[attr-defined]  # the test's own bookkeeping
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


@pytest.fixture
def client(make_client: MakeClient) -> Moneyrail:
    return make_client()
