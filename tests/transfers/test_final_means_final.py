"""Final means final (CONVENTIONS.md §9), through real workers: an object whose operation an injected
sandbox fault dead-letters (a transfer, a payout, a refund) stays in its pending state showing the error,
with no `*.failed` event; an operator's retry of the dead letter then lets it succeed as if nothing had
happened; an operator's discard makes it `failed`, with its `*.failed` event once, and gives back its
money (a payout's balance, a refund's and a transfer's reservation) exactly once."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from moneyrail.engine.service import discard_dead_letter, retry_dead_letter
from moneyrail.errors import Conflict
from tests.connect.support import create_account, onboarded_account
from tests.engine.conftest import wait_for_operation
from tests.payments.support import event_types, ledger_balance, paid
from tests.transfers.support import FINAL, account_balance, processor_transfer_calls

DAY = 86400
OPERATOR = "ops@example.com"


def fault(api: httpx.Client, operation_type: str, mode: str, count: int) -> None:
    response = api.post(
        "/v1/test-helpers/processor-faults",
        json={"operation_type": operation_type, "mode": mode, "count": count},
    )
    assert response.status_code == 200, response.text


def retry(bridge: Any, operation_id: str) -> None:
    """What `moneyrail dead-letters retry` does."""

    async def work(session: Any) -> None:
        await retry_dead_letter(session, operation_id, operator=OPERATOR)

    bridge.in_unit_of_work(work)


def discard(bridge: Any, operation_id: str, reason: str) -> None:
    """What `moneyrail dead-letters discard --reason` does."""

    async def work(session: Any) -> None:
        await discard_dead_letter(session, operation_id, operator=OPERATOR, reason=reason)

    bridge.in_unit_of_work(work)


def dead_lettered(api: httpx.Client, operation_id: str) -> dict[str, Any]:
    operation = wait_for_operation(api, operation_id, FINAL | {"canceled"}, timeout=60)
    assert operation["status"] == "dead_letter", operation
    return operation


def distributable(api: httpx.Client, payment_id: str) -> int:
    """What the payment can still distribute, as the refusal of a too large reservation says it."""
    refused = api.post("/v1/allocation-groups", json={"payment_intent": payment_id, "amount": 99_999_999})
    assert refused.status_code == 400, refused.text
    found = re.search(r"can still distribute \((\d+)", refused.json()["error"]["message"])
    assert found is not None, refused.text
    return int(found.group(1))


def waiting_transfer(api: httpx.Client) -> tuple[dict[str, Any], dict[str, Any], str]:
    """A transfer whose operation dead-letters on an injected refusal (`processor_error`, replayed under
    its key by each of the policy's five attempts): (its answer, its payment, its destination)."""
    courier = create_account(api)["id"]
    payment = paid(api, 3000)
    fault(api, "transfer", "permanent", 1)
    created = api.post(
        "/v1/transfers", json={"destination": courier, "amount": 1200, "source_transaction": payment["id"]}
    )
    assert created.status_code == 200, created.text
    transfer = created.json()
    assert transfer["status"] == "pending"
    transfer["operation"] = api.get(f"/v1/allocation-groups/{transfer['allocation_group']}").json()[
        "operation"
    ]
    dead_lettered(api, transfer["operation"])
    return transfer, payment, courier


def assert_waits(api: httpx.Client, transfer: dict[str, Any]) -> None:
    shown = api.get(f"/v1/transfers/{transfer['id']}").json()
    assert shown["status"] == "pending", shown
    assert (shown["failure_code"], shown["failure_message"]) == (None, None)
    assert shown["last_operation_error"]["code"] == "processor_error"
    assert "injected permanent fault" in shown["last_operation_error"]["message"]
    group = api.get(f"/v1/allocation-groups/{transfer['allocation_group']}").json()
    assert (group["status"], group["failure_reason"]) == ("committing", None)
    assert group["last_operation_error"]["code"] == "processor_error"
    assert event_types(api, transfer["id"]) == ["transfer.created"]  # no transfer.failed


def test_a_dead_lettered_transfer_stays_pending_and_an_operators_retry_pays_it(
    platform, db, bridge, money_stack
):
    transfer, payment, courier = waiting_transfer(platform)
    assert_waits(platform, transfer)
    assert account_balance(platform, courier) == (0, 0)

    retry(bridge, transfer["operation"])
    assert wait_for_operation(platform, transfer["operation"], FINAL)["status"] == "succeeded"
    done = platform.get(f"/v1/transfers/{transfer['id']}").json()
    assert (done["status"], done["failure_code"], done["last_operation_error"]) == ("paid", None, None)
    assert event_types(platform, transfer["id"]) == ["transfer.created", "transfer.paid"]
    assert account_balance(platform, courier) == (0, 1200)
    key = f"{transfer['operation']}:{done['allocation']}"  # refused, then asked under its next key
    assert processor_transfer_calls(db, platform.keys.installation_id) == [(key, False), (f"{key}:1", True)]
    group = platform.get(f"/v1/allocation-groups/{transfer['allocation_group']}").json()
    assert (group["status"], group["last_operation_error"]) == ("committed", None)
    assert distributable(platform, payment["id"]) > 0


def test_a_discarded_transfer_fails_once_and_releases_its_reservation(platform, db, bridge, money_stack):
    transfer, payment, courier = waiting_transfer(platform)
    assert_waits(platform, transfer)
    before_discard = distributable(platform, payment["id"])

    discard(bridge, transfer["operation"], "recipient paid by hand")
    failed = platform.get(f"/v1/transfers/{transfer['id']}").json()
    assert (failed["status"], failed["failure_code"]) == ("failed", "operation_discarded")
    assert "recipient paid by hand" in failed["failure_message"]
    assert failed["last_operation_error"]["code"] == "processor_error"
    assert event_types(platform, transfer["id"]) == ["transfer.created", "transfer.failed"]
    group = platform.get(f"/v1/allocation-groups/{transfer['allocation_group']}").json()
    assert group["status"] == "failed" and "recipient paid by hand" in group["failure_reason"]
    # nothing was booked for it, so nothing comes back in the ledger; its reservation is released once
    assert account_balance(platform, courier) == (0, 0)
    assert distributable(platform, payment["id"]) == before_discard + 1200

    # final: the operation cannot be retried any more, and the transfer never turns into anything else
    with pytest.raises(Conflict):
        retry(bridge, transfer["operation"])
    assert platform.get(f"/v1/transfers/{transfer['id']}").json()["status"] == "failed"
    assert event_types(platform, transfer["id"]) == ["transfer.created", "transfer.failed"]
    assert ledger_balance(db, platform.keys.installation_id, f"connect:{courier}:pending") == 0


# --- payouts ------------------------------------------------------------------------------------------
def funded(api: httpx.Client, amount: int) -> str:
    """An onboarded account with `amount` available: a transfer out of a payment whose fees are final."""
    account = onboarded_account(api)["id"]
    payment = paid(api, amount)
    api.post("/v1/test-helpers/clock/advance", json={"seconds": 3 * DAY + 60})  # the payment settles
    transfer = api.post(
        "/v1/transfers", json={"destination": account, "amount": amount, "source_transaction": payment["id"]}
    ).json()
    group = api.get(f"/v1/allocation-groups/{transfer['allocation_group']}").json()
    assert wait_for_operation(api, group["operation"], FINAL)["status"] == "succeeded"
    assert account_balance(api, account) == (amount, 0)
    return account


def waiting_payout(api: httpx.Client, amount: int) -> tuple[dict[str, Any], str]:
    account = funded(api, amount)
    fault(api, "payout", "permanent", 1)  # refused once, replayed under its key by every attempt
    created = api.post(
        f"/v1/connected-accounts/{account}/payouts", json={"amount": amount, "currency": "eur"}
    )
    assert created.status_code == 200, created.text
    payout = created.json()
    dead_lettered(api, payout["operation"])
    shown = api.get(f"/v1/payouts/{payout['id']}").json()
    assert shown["status"] == "pending", shown
    assert (shown["failure_code"], shown["failure_message"]) == (None, None)
    assert shown["last_operation_error"]["code"] == "processor_error"
    assert event_types(api, payout["id"]) == ["payout.created"]  # no payout.failed
    assert account_balance(api, account) == (0, 0)  # held until an operator decides
    return payout, account


def test_a_dead_lettered_payout_stays_pending_and_an_operators_retry_sends_it(
    platform, db, bridge, money_stack
):
    payout, _ = waiting_payout(platform, 600)
    retry(bridge, payout["operation"])
    assert wait_for_operation(platform, payout["operation"], FINAL)["status"] == "succeeded"
    sent = platform.get(f"/v1/payouts/{payout['id']}").json()
    assert (sent["status"], sent["failure_code"], sent["last_operation_error"]) == ("in_transit", None, None)
    assert event_types(platform, payout["id"]) == ["payout.created", "payout.updated"]
    assert ledger_balance(db, platform.keys.installation_id, "payouts:in_transit") == 600


def test_a_discarded_payout_fails_once_and_its_money_returns_once(platform, db, bridge, money_stack):
    payout, account = waiting_payout(platform, 700)
    discard(bridge, payout["operation"], "bank details checked by phone: wrong account")
    failed = platform.get(f"/v1/payouts/{payout['id']}").json()
    assert (failed["status"], failed["failure_code"]) == ("failed", "operation_discarded")
    assert "wrong account" in failed["failure_message"]
    assert failed["last_operation_error"]["code"] == "processor_error"
    assert event_types(platform, payout["id"]) == ["payout.created", "payout.failed"]
    assert account_balance(platform, account) == (700, 0)
    installation = platform.keys.installation_id
    assert ledger_balance(db, installation, "payouts:in_transit") == 0
    returned = db.execute(
        "SELECT count(*) FROM journal_transactions WHERE installation_id = %s AND kind = 'payout_returned'",
        (installation,),
    ).fetchone()[0]
    assert returned == 1


# --- refunds ------------------------------------------------------------------------------------------
def waiting_refund(api: httpx.Client, db: Any, amount: int) -> tuple[dict[str, Any], dict[str, Any]]:
    payment = paid(api, amount)
    fault(api, "refund", "permanent", 1)  # a processor_error: an injected fault is not a refusal for good
    created = api.post("/v1/refunds", json={"payment_intent": payment["id"]})
    assert created.status_code == 200, created.text
    refund = created.json()
    assert refund["operation"].startswith("op_")
    db.execute("UPDATE operations SET max_attempts = 2 WHERE id = %s", (refund["operation"],))
    dead_lettered(api, refund["operation"])
    shown = api.get(f"/v1/refunds/{refund['id']}").json()
    assert shown["status"] == "pending", shown
    assert shown["failure_reason"] is None
    assert shown["last_operation_error"]["code"] == "processor_error"
    assert event_types(api, refund["id"]) == ["refund.created"]  # no refund.failed
    assert api.get(f"/v1/payment-intents/{payment['id']}").json()["amount_refunded"] == 0
    return refund, payment


def test_a_dead_lettered_refund_stays_pending_and_an_operators_retry_refunds_it(api, db, bridge, money_stack):
    refund, payment = waiting_refund(api, db, 900)
    retry(bridge, refund["operation"])
    assert wait_for_operation(api, refund["operation"], FINAL)["status"] == "succeeded"
    done = api.get(f"/v1/refunds/{refund['id']}").json()
    assert (done["status"], done["last_operation_error"]) == ("succeeded", None)
    assert event_types(api, refund["id"]) == ["refund.created", "refund.updated"]
    assert api.get(f"/v1/payment-intents/{payment['id']}").json()["amount_refunded"] == 900
    assert ledger_balance(db, api.keys.installation_id, "balance:pending") == 0


def test_a_discarded_refund_fails_once_and_frees_its_amount(api, db, bridge, money_stack):
    refund, payment = waiting_refund(api, db, 800)
    discard(bridge, refund["operation"], "refunded by bank transfer")
    failed = api.get(f"/v1/refunds/{refund['id']}").json()
    assert failed["status"] == "failed"
    assert failed["failure_reason"] == (
        "operation_discarded: Discarded by an operator: refunded by bank transfer"
    )
    assert event_types(api, refund["id"]) == ["refund.created", "refund.failed"]
    assert api.get(f"/v1/payment-intents/{payment['id']}").json()["amount_refunded"] == 0
    assert ledger_balance(db, api.keys.installation_id, "balance:pending") == 800
    again = api.post("/v1/refunds", json={"payment_intent": payment["id"]})  # the amount is free again
    assert again.status_code == 200 and again.json()["amount"] == 800, again.text
