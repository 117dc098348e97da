"""The Stripe adapter's tests: a card made as Stripe.js makes it, calls on one loop, the double's books."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx

from moneyrail.kit.tenant import Tenant
from moneyrail.processor.interface import Authorization, CardToken, TokenizedCard
from moneyrail.processor.stripe import StripeProcessor
from tests.harness import TLS
from tests.processor.stripe.servers import PUBLISHABLE_KEY, SECRET_KEY, StripeServers

T = TypeVar("T")

SUCCEEDS = "4242424242424242"
DECLINED_WHEN_SAVED = "4000000000000002"  # localstripe (and Stripe) decline attaching it
DECLINED_WHEN_CHARGED = "4000000000000341"  # saved fine, every charge declined
AUTHENTICATION = "4000002500003155"  # 3-D Secure asked for on-session


@dataclass
class StripeWorld:
    servers: StripeServers
    processor: StripeProcessor
    runner: asyncio.Runner
    tenant: Tenant = field(default_factory=lambda: Tenant(f"inst_{secrets.token_hex(6)}", False))

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return self.runner.run(coroutine)

    # the payer's browser: Stripe.js makes a token from the typed card, at the API base
    def token(self, number: str = SUCCEEDS) -> CardToken:
        answer = httpx.post(
            f"{self.servers.double}/v1/tokens",
            data={
                "key": PUBLISHABLE_KEY,
                "card[number]": number,
                "card[exp_month]": "12",
                "card[exp_year]": "2031",
                "card[cvc]": "123",
            },
            verify=TLS,
        )
        assert answer.status_code == 200, answer.text
        return CardToken(answer.json()["id"])

    def card(self, number: str = SUCCEEDS) -> TokenizedCard:
        return self.run(self.processor.tokenize_card(self.tenant, self.token(number)))

    def authorize(
        self,
        card: TokenizedCard,
        amount: int = 5000,
        *,
        key: str | None = None,
        off_session: bool = False,
        **more: Any,
    ) -> Authorization:
        return self.run(
            self.processor.authorize(
                self.tenant,
                idempotency_key=key or fresh_key("authorize"),
                card_token=card.token,
                card_fingerprint=card.fingerprint,
                amount=amount,
                currency=more.get("currency", "eur"),
                off_session=off_session,
                reference=more.get("reference", f"pi_{secrets.token_hex(8)}"),
            )
        )

    # what localstripe and the double hold, read as an operator would -----------------------------------
    def stripe_get(self, path: str, **params: Any) -> dict[str, Any]:
        answer = httpx.get(f"{self.servers.double}{path}", params=params, auth=(SECRET_KEY, ""), verify=TLS)
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    def objects(self, kind: str) -> list[dict[str, Any]]:
        return list(
            httpx.get(f"{self.servers.double}/_double/objects", params={"object": kind}, verify=TLS).json()[
                "data"
            ]
        )

    def requests(self) -> list[dict[str, Any]]:
        return list(httpx.get(f"{self.servers.double}/_double/requests", verify=TLS).json()["data"])

    def fail_next(
        self,
        path: str,
        *,
        when: str,
        count: int = 1,
        status: int | None = 500,
        method: str = "POST",
        **more: Any,
    ) -> None:
        """The double's next calls on `path` fail (`more`: `delay_seconds`, `decline_code`)."""
        answer = httpx.post(
            f"{self.servers.double}/_double/faults",
            json={"path": path, "method": method, "when": when, "count": count, "status": status, **more},
            verify=TLS,
        )
        assert answer.status_code == 200, answer.text

    def intents_for(self, reference: str) -> list[dict[str, Any]]:
        """Every payment intent localstripe holds for a payment (its metadata), however many calls made it."""
        found: list[dict[str, Any]] = []
        after: str | None = None
        while True:
            params: dict[str, Any] = {"limit": 100, **({"starting_after": after} if after else {})}
            page = httpx.get(
                f"{self.servers.localstripe}/v1/payment_intents",
                params=params,
                auth=(SECRET_KEY, ""),
                verify=TLS,
            ).json()
            found += [each for each in page["data"] if each["metadata"].get("reference") == reference]
            if not page["has_more"]:
                return found
            after = page["data"][-1]["id"]


def fresh_key(step: str) -> str:
    return f"op_{secrets.token_hex(8)}:{step}"
