"""What transfer tests share: captured payments, groups, waiting for commits, balances."""

from __future__ import annotations

from typing import Any

import httpx

from tests.engine.conftest import wait_for_operation
from tests.payments.support import paid

FINAL = {"succeeded", "failed", "dead_letter"}


def distributed(
    api: httpx.Client, amount: int, allocations: list[tuple[str, str, int]], **fields: Any
) -> dict[str, Any]:
    """A paid payment created with a distribution of (recipient, role, amount) allocations."""
    distribution = {
        "allocations": [
            {"recipient": recipient, "role": role, "amount": share} for recipient, role, share in allocations
        ],
        **fields,
    }
    return paid(api, amount, distribution=distribution)


def group_of(api: httpx.Client, payment_id: str) -> dict[str, Any]:
    """The allocation group a distributed payment's capture committed, once its operation is over."""
    transfers = api.get("/v1/transfers", params={"source_transaction": payment_id, "limit": 100}).json()[
        "data"
    ]
    assert transfers, "the capture made no transfers"
    group = api.get(f"/v1/allocation-groups/{transfers[0]['allocation_group']}").json()
    wait_for_operation(api, group["operation"], FINAL)
    settled: dict[str, Any] = api.get(f"/v1/allocation-groups/{group['id']}").json()
    return settled


def reserve(api: httpx.Client, payment_id: str, amount: int) -> httpx.Response:
    return api.post("/v1/allocation-groups", json={"payment_intent": payment_id, "amount": amount})


def allocate(api: httpx.Client, group_id: str, recipient: str, amount: int, **fields: Any) -> httpx.Response:
    return api.post(
        f"/v1/allocation-groups/{group_id}/allocations",
        json={"recipient": recipient, "amount": amount, **fields},
    )


def committed_group(api: httpx.Client, payment_id: str, shares: list[tuple[str, int]]) -> dict[str, Any]:
    group = reserve(api, payment_id, sum(amount for _, amount in shares)).json()
    for recipient, amount in shares:
        assert allocate(api, group["id"], recipient, amount).status_code == 200
    operation = api.post(f"/v1/allocation-groups/{group['id']}/commit").json()
    assert wait_for_operation(api, operation["id"], FINAL)["status"] == "succeeded"
    done: dict[str, Any] = api.get(f"/v1/allocation-groups/{group['id']}").json()
    return done


def account_balance(api: httpx.Client, account_id: str, currency: str = "eur") -> tuple[int, int]:
    """(available, pending) of a connected account."""
    body = api.get(f"/v1/connected-accounts/{account_id}/balance").json()

    def total(kind: str) -> int:
        return sum(item["amount"] for item in body[kind] if item["currency"] == currency)

    return total("available"), total("pending")


def processor_transfer_calls(
    db: Any, installation_id: str, operation_type: str = "transfer"
) -> list[tuple[str, bool]]:
    rows = db.execute(
        "SELECT idempotency_key, succeeded FROM sandbox_processor_calls"
        " WHERE installation_id = %s AND operation_type = %s ORDER BY created_at",
        (installation_id, operation_type),
    )
    return [(row[0], row[1]) for row in rows]
