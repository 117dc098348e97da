"""The Stripe double's state and the shapes of its answers (double.py serves them)."""

from __future__ import annotations

import copy
import json
import secrets
import string
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

FIXTURES: dict[str, dict[str, Any]] = json.loads(
    (Path(__file__).with_name("stripe_fixtures.json")).read_text()
)["resources"]
ALPHABET = string.ascii_letters + string.digits


def new_id(prefix: str) -> str:
    return prefix + "".join(secrets.choice(ALPHABET) for _ in range(24))


def now() -> int:
    return int(time.time())


def fixture(name: str, **values: Any) -> dict[str, Any]:
    """Stripe's published example of `name`, with these values."""
    made = copy.deepcopy(FIXTURES[name])
    made.update(values)
    return made


def charge_fee(amount: int) -> int:
    return (amount * 29 + 500) // 1000 + 30  # 2.9% rounded half up, plus 30


def stripe_error(status: int, message: str, *, kind: str = "invalid_request_error", **more: Any) -> Answer:
    return Answer(status, {"error": {"type": kind, "message": message, **more}})


@dataclass
class Answer:
    status: int
    body: dict[str, Any] | bytes
    content_type: str = "application/json"
    # localstripe's CORS headers, passed on for what a payer's browser calls (Stripe.js)
    headers: dict[str, str] = field(default_factory=dict)

    def encoded(self) -> bytes:
        return self.body if isinstance(self.body, bytes) else json.dumps(self.body).encode()


@dataclass
class Fault:
    """The next `count` calls matching `method` and `path` (a prefix) wait `delay_seconds`, then answer
    `status` (None: their own answer) before or after doing what they ask; a 402 is a card decline."""

    count: int
    status: int | None
    when: str  # before | after
    method: str | None
    path: str | None
    delay_seconds: float = 0.0
    decline_code: str | None = None

    def failure(self, message: str) -> Answer:
        assert self.status is not None
        if self.status == 402:
            return stripe_error(
                402,
                "Your card was declined.",
                kind="card_error",
                code="card_declined",
                decline_code=self.decline_code,
            )
        return stripe_error(self.status, message, kind="api_error")

    def matches(self, method: str, path: str) -> bool:
        return (self.method is None or self.method == method) and (
            self.path is None or path.startswith(self.path)
        )


@dataclass
class Stored:
    fingerprint: str
    answer: Answer


@dataclass
class State:
    upstream: httpx.AsyncClient
    objects: dict[str, dict[str, Any]] = field(default_factory=dict)
    owners: dict[str, str] = field(default_factory=dict)  # payout id -> account ("" the platform's)
    replies: dict[tuple[str, str], Stored] = field(default_factory=dict)
    in_flight: set[tuple[str, str]] = field(default_factory=set)
    faults: list[Fault] = field(default_factory=list)
    log: list[dict[str, Any]] = field(default_factory=list)

    def keep(self, made: dict[str, Any]) -> dict[str, Any]:
        self.objects[made["id"]] = made
        return made

    def of(self, object_id: str, kind: str) -> dict[str, Any] | None:
        found = self.objects.get(object_id)
        return found if found is not None and found.get("object") == kind else None

    def book(self, source: str, amount: int, kind: str, fee: int = 0, currency: str = "usd") -> str:
        """A balance transaction of the double's own (transfers, payouts, disputes)."""
        booked = fixture(
            "balance_transaction",
            id=new_id("txn_"),
            amount=amount,
            fee=fee,
            net=amount - fee,
            currency=currency,
            source=source,
            type=kind,
            reporting_category=kind,
            created=now(),
            available_on=now(),
            description=None,
            fee_details=[{"amount": fee, "currency": currency, "type": "stripe_fee"}] if fee else [],
        )
        return self.keep(booked)["id"]

    def take_fault(self, method: str, path: str) -> Fault | None:
        for fault in self.faults:
            if fault.count > 0 and fault.matches(method, path):
                fault.count -= 1
                return fault
        return None
