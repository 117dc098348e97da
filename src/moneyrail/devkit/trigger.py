"""`moneyrail trigger EVENT_TYPE`: make an event happen in a sandbox, through the API with a sandbox key,
creating what it needs (a payment with a sandbox card, a connected account, a refund, ...).

Each scenario is the shortest walk of the public API that ends in the event; where the event comes
from a worker (a refund done, a transfer paid), the walk waits for its operation; where it comes from
the sandbox clock (fees final, a payout's arrival), it advances the installation's sandbox clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from moneyrail.devkit.api import ApiFailure, call

SUCCEEDS = "4242424242424242"
DECLINES = "4000000000000002"
AUTHENTICATES = "4000002500003155"
DAY = 86400
OPERATION_SECONDS = 60.0
FINAL_OPERATION_STATUSES = {"succeeded", "failed", "dead_letter", "canceled"}
SANDBOX_BANK_ACCOUNT = "DE89370400440532013000"  # any valid number but the failing 000111111116


class TriggerRefused(Exception):
    """The event cannot be made here (a live key, the wrong kind of installation, an unknown type)."""


@dataclass
class Walk:
    """One trigger's calls, and the objects they made, in order."""

    client: httpx.Client
    made: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def keep(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.made.append(obj)
        return obj

    def post(self, path: str, body: dict[str, Any] | None = None, *, key: str | None = None) -> Any:
        return call(self.client, "POST", path, body if body is not None else {}, key=key)

    def get(self, path: str) -> Any:
        return call(self.client, "GET", path)

    def wait(self, operation_id: str) -> dict[str, Any]:
        deadline = time.monotonic() + OPERATION_SECONDS
        while True:
            operation: dict[str, Any] = self.get(f"/v1/operations/{operation_id}")
            if operation["status"] in FINAL_OPERATION_STATUSES:
                return operation
            if time.monotonic() > deadline:
                status = operation["status"]
                raise ApiFailure(f"operation {operation_id} is still {status} in time: is a worker running?")
            time.sleep(0.2)

    def advance_clock(self, seconds: int, why: str) -> None:
        self.post("/v1/test-helpers/clock/advance", {"seconds": seconds})
        self.notes.append(f"advanced the sandbox clock by {seconds // 3600} h: {why}")

    def kind(self) -> str:
        return str(self.get("/v1/account")["kind"])


def _payment(walk: Walk, amount: int = 2000, **fields: Any) -> dict[str, Any]:
    created: dict[str, Any] = walk.post(
        "/v1/payment-intents",
        {"amount": amount, "currency": "eur", "description": "moneyrail trigger", **fields},
    )
    return created


def _confirm(walk: Walk, payment: dict[str, Any], card: str) -> dict[str, Any]:
    """Confirmed as the payer's side does: the publishable key, the client_secret, a sandbox card."""
    body = {
        "client_secret": payment["client_secret"],
        "card": {"number": card, "exp_month": 12, "exp_year": 2034, "cvc": "123"},
        "return_url": "https://example.com/return",
    }
    try:
        walk.post(f"/v1/payment-intents/{payment['id']}/confirm", body, key=payment["publishable_key"])
    except ApiFailure as failure:
        if failure.code != "card_declined":
            raise
    now: dict[str, Any] = walk.get(f"/v1/payment-intents/{payment['id']}")
    return now


def paid(walk: Walk, amount: int = 2000, **fields: Any) -> dict[str, Any]:
    return walk.keep(_confirm(walk, _payment(walk, amount, **fields), SUCCEEDS))


def payment_created(walk: Walk) -> None:
    walk.keep(_payment(walk))


def payment_succeeded(walk: Walk) -> None:
    paid(walk)


def payment_failed(walk: Walk) -> None:
    walk.keep(_confirm(walk, _payment(walk), DECLINES))


def payment_requires_action(walk: Walk) -> None:
    walk.keep(_confirm(walk, _payment(walk), AUTHENTICATES))


def payment_authorized(walk: Walk) -> None:
    walk.keep(_confirm(walk, _payment(walk, capture_method="manual"), SUCCEEDS))


def payment_canceled(walk: Walk) -> None:
    payment = _payment(walk)
    walk.keep(walk.post(f"/v1/payment-intents/{payment['id']}/cancel"))


def fees_finalized(walk: Walk) -> None:
    payment = paid(walk)
    walk.advance_clock(3 * DAY + 60, "the sandbox network reports the payment's cost")
    walk.made[-1] = walk.get(f"/v1/payment-intents/{payment['id']}")


def refund(walk: Walk) -> None:
    payment = paid(walk)
    created = walk.keep(
        walk.post("/v1/refunds", {"payment_intent": payment["id"], "amount": payment["amount"]})
    )
    walk.keep(walk.wait(created["operation"]))
    walk.made[-2] = walk.get(f"/v1/refunds/{created['id']}")


def _platform(walk: Walk) -> None:
    if walk.kind() != "platform":
        raise TriggerRefused(
            "this event needs a platform installation (an operator makes one with "
            "`moneyrail installations create --kind platform`)"
        )


def connected_account(walk: Walk) -> dict[str, Any]:
    _platform(walk)
    account: dict[str, Any] = walk.keep(
        walk.post(
            "/v1/connected-accounts",
            {
                "kind": "courier",
                "display_name": "Trigger courier",
                "external_account": {"account_number": SANDBOX_BANK_ACCOUNT},
            },
        )
    )
    return account


def transfer(walk: Walk) -> dict[str, Any]:
    """A payment distributed in full to a new connected account: its transfer, once paid."""
    account = connected_account(walk)
    distribution = {
        "merchant_of_record": account["id"],
        "allocations": [{"recipient": account["id"], "role": "merchant", "amount": 2000}],
    }
    payment = paid(walk, distribution=distribution)
    transfers: list[dict[str, Any]] = []
    deadline = time.monotonic() + OPERATION_SECONDS
    while True:
        transfers = walk.get(f"/v1/transfers?source_transaction={payment['id']}")["data"]
        if transfers:
            break
        if time.monotonic() > deadline:
            raise ApiFailure("the capture made no transfer in time: is a worker running?")
        time.sleep(0.2)
    made = transfers[0]
    if made.get("operation"):
        walk.wait(made["operation"])
    final: dict[str, Any] = walk.keep(walk.get(f"/v1/transfers/{made['id']}"))
    return final


def transfer_reversed(walk: Walk) -> None:
    made = transfer(walk)
    walk.keep(walk.post(f"/v1/transfers/{made['id']}/reversals", {"amount": 500}))


def payout(walk: Walk) -> None:
    """A direct installation's own payout, funded by a payment, handed to the bank and paid."""
    if walk.kind() != "direct":
        raise TriggerRefused(
            "payout events are triggered on a direct installation's own balance (a connected account "
            "pays out only once onboarded on its hosted page)"
        )
    payment = paid(walk, 2000)
    walk.advance_clock(3 * DAY + 60, f"{payment['id']}'s fees are final: its proceeds are available")
    created = walk.keep(walk.post("/v1/payouts", {"amount": 2000, "currency": "eur", "method": "standard"}))
    walk.wait(created["operation"])
    walk.advance_clock(4 * DAY + 60, "the payout arrives")
    walk.made[-1] = walk.get(f"/v1/payouts/{created['id']}")


SCENARIOS: dict[str, Callable[[Walk], Any]] = {
    "payment_intent.created": payment_created,
    "payment_intent.succeeded": payment_succeeded,
    "payment_intent.payment_failed": payment_failed,
    "payment_intent.requires_action": payment_requires_action,
    "payment_intent.amount_capturable_updated": payment_authorized,
    "payment_intent.canceled": payment_canceled,
    "payment_intent.fees_finalized": fees_finalized,
    "refund.created": refund,
    "refund.updated": refund,
    "operation.succeeded": refund,
    "connected_account.created": connected_account,
    "allocation_group.created": transfer,
    "allocation_group.updated": transfer,
    "transfer.created": transfer,
    "transfer.paid": transfer,
    "transfer.reversed": transfer_reversed,
    "transfer.reversal.created": transfer_reversed,
    "payout.created": payout,
    "payout.updated": payout,
    "payout.paid": payout,
}


def trigger(client: httpx.Client, event_type: str, *, sandbox: bool) -> Walk:
    if event_type not in SCENARIOS:
        raise TriggerRefused(f"no trigger for {event_type!r}; supported: {', '.join(SCENARIOS)}")
    if not sandbox:
        raise TriggerRefused("trigger makes objects in a sandbox only: use a sandbox key (sk_test_…)")
    walk = Walk(client)
    SCENARIOS[event_type](walk)
    return walk
