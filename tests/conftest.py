"""Session-wide real servers and a fresh installation per test (tenants isolate the tests)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import psycopg
import pytest

import moneyrail.domains  # noqa: F401 - service calls made from tests reach every registered listener
from moneyrail.config import get_settings
from moneyrail.db.migrate import upgrade
from tests.harness import (
    OUTPUT_DIR,
    TLS,
    AsyncBridge,
    Process,
    Servers,
    TenantKeys,
    create_tenant,
    free_port,
    libpq_url,
    verify_ledger,
    verify_ledger_as_an_operator_does,
    wait_until_ready,
)
from tests.processor.stripe.servers import StripeServers, stripe_servers
from tests.stacks import STACK_FIXTURES, shared_stack, stop_shared_stack


@pytest.fixture(scope="session")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    started = Servers.start(tmp_path_factory.mktemp("servers"))
    # Service functions the tests call in this process seal secrets too (stored idempotent answers)
    os.environ.setdefault("MONEYRAIL_SECRET_KEYS", started.secret_keys)
    # ... and keep their files (evidence) in the session's folder, as the processes do
    os.environ["MONEYRAIL_DATA_DIR"] = str(started.data_dir)
    get_settings.cache_clear()
    try:
        upgrade(started.database_url)  # the schema comes from the migrations, never create_all
        yield started
        stop_shared_stack()
        # Money invariants hold after everything the suite did: balance, immutability, the chain
        verify_ledger_as_an_operator_does(started)
    finally:
        started.stop()


@pytest.fixture(scope="module", autouse=True)
def only_where_asked(request: pytest.FixtureRequest) -> None:
    """A file whose first test asks for no worker and scheduler starts with none of those shared by the
    files before it (tests/stacks.py): its tests may start their own, and must meet no other consumer of
    their queues. Within a file a shared stack, once asked for, keeps running (as a file's own did)."""
    first = next(
        (item for item in request.session.items if getattr(item, "module", None) is request.module), None
    )
    if first is None or STACK_FIXTURES.isdisjoint(first.fixturenames):
        stop_shared_stack()


@pytest.fixture(scope="module")
def ledger_verified_after_the_file(servers: Servers) -> Iterator[None]:
    yield
    verify_ledger(servers)  # what `moneyrail ledger verify` checks, after every file that moves money


@pytest.fixture
def money_stack(servers: Servers, ledger_verified_after_the_file: None) -> Process:
    """A worker and a scheduler for the money that moves after a request answers (renewals, commits,
    syncs, disputes), shared with the tests before (tests/stacks.py)."""
    return shared_stack(servers).worker


@dataclass
class WebServer:
    base_url: str
    process: Process


@pytest.fixture(scope="session")
def web(servers: Servers) -> Iterator[WebServer]:
    port = free_port()
    log_path = OUTPUT_DIR / "web.log"
    log_path.unlink(missing_ok=True)
    # as behind a reverse proxy on this host: the tests name the payer's address in X-Forwarded-For
    process = Process.start(
        "web", servers, log_path, MONEYRAIL_PORT=str(port), MONEYRAIL_FORWARDED_ALLOW_IPS="127.0.0.1,::1"
    )
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_until_ready(base_url, process)
        yield WebServer(base_url, process)
    finally:
        process.stop()


@pytest.fixture(scope="session")
def stripe_stack() -> Iterator[StripeServers]:
    """localstripe with the Stripe double in front (tests/processor/stripe/servers.py), once per session."""
    with stripe_servers() as started:
        yield started


@pytest.fixture(scope="session")
def bridge(servers: Servers) -> Iterator[AsyncBridge]:
    running = AsyncBridge(servers.database_url)
    yield running
    running.close()


@pytest.fixture
def db(servers: Servers) -> Iterator[psycopg.Connection[Any]]:
    """A direct connection to check what a request did (or did not) write."""
    with psycopg.connect(libpq_url(servers.database_url), autocommit=True) as connection:
        yield connection


class Api(httpx.Client):
    """An HTTP client for one installation's sandbox, authenticated with an all-scopes key."""

    def __init__(self, base_url: str, keys: TenantKeys) -> None:
        super().__init__(
            base_url=base_url, headers={"Authorization": f"Bearer {keys.secret}"}, timeout=30, verify=TLS
        )
        self.keys = keys


@pytest.fixture
def tenant(bridge: AsyncBridge) -> TenantKeys:
    return create_tenant(bridge)


@pytest.fixture
def api(web: WebServer, tenant: TenantKeys) -> Iterator[Api]:
    with Api(web.base_url, tenant) as client:
        yield client


@pytest.fixture
def make_api(web: WebServer, bridge: AsyncBridge) -> Iterator[Any]:
    clients: list[Api] = []

    def make(**options: Any) -> Api:
        client = Api(web.base_url, create_tenant(bridge, **options))
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


# The parallel suite hands whole files to its workers in collection order (`--dist loadfile`): files
# that take minutes go first, so none of them starts last and runs alone at the end.
SLOW_FIRST = (
    "tests/api/test_schemathesis_fuzz",
    "tests/test_code_quality.py",
    "tests/test_dev_command.py",
    "tests/billing/test_contract_fuzz.py",
    "tests/test_operator_cli.py",
    "tests/test_guides.py",
    "tests/installations/test_cli.py",
    "tests/engine/",
    "tests/disputes/",
    "tests/transfers/",
    "tests/billing/",
)


def _start_rank(item: pytest.Item) -> int:
    path = item.nodeid.split("::")[0]
    return next((rank for rank, prefix in enumerate(SLOW_FIRST) if path.startswith(prefix)), len(SLOW_FIRST))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=_start_rank)  # stable: each file's own order is kept
