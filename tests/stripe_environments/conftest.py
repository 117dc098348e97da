"""moneyrail's processes pointed at Stripe (the double in front of localstripe: MONEYRAIL_STRIPE_API_BASE,
and localstripe's fake Stripe.js through it: MONEYRAIL_STRIPE_JS_URL): a web process once per module,
and a worker with the scheduler (the relay) shared by the files on Stripe."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from tests.conftest import Api, WebServer
from tests.engine.conftest import assert_ledger_verifies
from tests.harness import (
    OUTPUT_DIR,
    AsyncBridge,
    Process,
    Servers,
    TenantKeys,
    create_tenant,
    free_port,
    use_stripe,
    wait_until_ready,
)
from tests.processor.stripe.servers import StripeServers
from tests.stacks import shared_stack


@dataclass
class StripeEnvironments:
    web: WebServer
    stripe: StripeServers
    bridge: AsyncBridge
    clients: list[Api] = field(default_factory=list)  # closed with the module

    def api(
        self,
        *,
        livemode: bool,
        kind: str = "direct",
        webhook_secret: str | None = None,
        connect_webhook_secret: str | None = None,
        with_publishable_key: bool = True,
    ) -> Api:
        """A new installation's environment on Stripe, and a client of it with an all-scopes key."""
        keys = create_tenant(self.bridge, livemode=livemode, kind=kind)
        use_stripe(
            self.bridge,
            keys.tenant,
            publishable_key=(
                f"pk_{'live' if livemode else 'test'}_moneyrail_tests" if with_publishable_key else None
            ),
            webhook_secret=webhook_secret,
            connect_webhook_secret=connect_webhook_secret,
        )
        return self._client(keys)

    def without_processor(self) -> Api:
        """A new installation's live environment, no processor set."""
        return self._client(create_tenant(self.bridge, livemode=True))

    def _client(self, keys: TenantKeys) -> Api:
        client = Api(self.web.base_url, keys)
        self.clients.append(client)
        return client


def stripe_js_url(stripe_stack: StripeServers) -> str:
    return f"{stripe_stack.double}/js.stripe.com/v3/"


@pytest.fixture(scope="module")
def on_stripe(
    servers: Servers, stripe_stack: StripeServers, bridge: AsyncBridge
) -> Iterator[StripeEnvironments]:
    env = {
        "MONEYRAIL_STRIPE_API_BASE": stripe_stack.double,
        # localstripe's fake Stripe.js, through the double: it sends cards to the API base it came from
        "MONEYRAIL_STRIPE_JS_URL": stripe_js_url(stripe_stack),
    }
    port = free_port()
    web = Process.start("web", servers, OUTPUT_DIR / "web-stripe.log", MONEYRAIL_PORT=str(port), **env)
    # the worker and scheduler, kept for the next file on Stripe (tests/stacks.py)
    shared_stack(servers, "stripe", **env)
    try:
        base_url = f"http://127.0.0.1:{port}"
        wait_until_ready(base_url, web)
        environments = StripeEnvironments(WebServer(base_url, web), stripe_stack, bridge)
        yield environments
        for client in environments.clients:
            client.close()
    finally:
        web.stop()
    assert_ledger_verifies(servers)
