"""A refund of a subscription payment stops the distribution not executed yet (spec 4.C, issue 16.3):
the commit still queued sends nothing when a worker finally runs it, a dead-lettered commit is stopped
the same way, what was sent is reversed by the refund's own operation, and no manual reversal runs
beside it. Over HTTP; the workers are started by each test where the race needs them; ledger verify."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.billing.support import (
    checkout_for,
    customer,
    enable_billing,
    invoices,
    ok,
    price,
    subscribe,
    wait_until,
)
from tests.billing.test_distribution_versions import shares
from tests.checkout.support import card_form
from tests.connect.support import create_account
from tests.engine.conftest import assert_ledger_verifies, wait_for_operation
from tests.harness import TLS
from tests.helpers import assert_error
from tests.payment_methods.support import SUCCEEDS
from tests.stacks import start_scheduler, start_worker
from tests.transfers.support import FINAL


@pytest.fixture
def platform(make_api, bridge):
    api = make_api(kind="platform")
    enable_billing(bridge, api.keys)
    return api


def transfer_calls(db: Any, installation_id: str) -> list[bool]:
    """Whether each transfer the processor was asked for went through."""
    rows = db.execute(
        "SELECT succeeded FROM sandbox_processor_calls "
        "WHERE installation_id = %s AND operation_type = 'transfer'",
        (installation_id,),
    )
    return [bool(row[0]) for row in rows]


def paid_platform_subscription(api) -> tuple[dict, dict, dict]:
    bakery = create_account(api, "merchant")
    courier = create_account(api, "courier")
    created = subscribe(
        api,
        price(api, 2000)["id"],
        customer(api)["id"],
        distribution=shares(bakery["id"], courier["id"], 8000, 2000),
    )
    paid = httpx.post(
        checkout_for(api, created["id"])["checkout_url"],
        data=card_form(SUCCEEDS, renew_consent="yes"),
        verify=TLS,
    )
    assert paid.status_code == 303, paid.text
    (first,) = invoices(api, created["id"])
    return first, bakery, courier


def test_a_refund_before_the_worker_runs_the_commit_stops_it_and_nothing_is_ever_sent(platform, db, servers):
    # no worker runs yet: the cycle's commit operation is queued, its transfers pending
    first, bakery, courier = paid_platform_subscription(platform)
    assert (first["status"], first["settlement_status"]) == ("paid", "distributing")
    group = ok(platform.get(f"/v1/allocation-groups/{first['allocation_group']}"))
    assert group["status"] == "committing"
    assert ok(platform.get(f"/v1/operations/{group['operation']}"))["status"] not in FINAL
    assert {t["destination"]: (t["amount"], t["status"]) for t in group["transfers"]} == {
        bakery["id"]: (1600, "pending"),
        courier["id"]: (400, "pending"),
    }

    refund = ok(platform.post("/v1/refunds", json={"payment_intent": first["payment_intent"]}))
    assert refund["status"] == "pending"
    # accepted: the distribution is stopped in the same transaction, before any worker ran
    stopped = ok(platform.get(f"/v1/allocation-groups/{group['id']}"))
    assert stopped["status"] == "canceled"
    assert {t["status"] for t in stopped["transfers"]} == {"canceled"}
    assert invoices(platform, first["subscription"])[0]["settlement_status"] == "canceled"
    # no manual reversal beside the refund (and nothing was sent to reverse)
    assert_error(
        platform.post(f"/v1/transfers/{stopped['transfers'][0]['id']}/reversals", json={}),
        409,
        "resource_state_invalid",
    )

    # the worker, and the scheduler whose relay publishes queued operations, start only now
    worker = start_worker(servers, name="worker-refund-stops-commit")
    scheduler = start_scheduler(servers, name="scheduler-refund-stops-commit")
    try:
        # the queued commit runs now and sends nothing; the refund goes through
        assert wait_for_operation(platform, group["operation"], FINAL, timeout=60)["status"] == "succeeded"
        done = wait_until(
            lambda: (r := ok(platform.get(f"/v1/refunds/{refund['id']}")))["status"] != "pending" and r,
            timeout=60,
        )
        assert done["status"] == "succeeded"
    finally:
        worker.stop()
        scheduler.stop()
    after = ok(platform.get(f"/v1/allocation-groups/{group['id']}"))
    assert after["status"] == "canceled"
    assert {t["destination"]: (t["status"], t["amount_reversed"]) for t in after["transfers"]} == {
        bakery["id"]: ("canceled", 0),
        courier["id"]: ("canceled", 0),
    }
    assert transfer_calls(db, platform.keys.installation_id) == []  # nothing ever reached the processor
    payment = ok(platform.get(f"/v1/payment-intents/{first['payment_intent']}"))
    assert payment["amount_refunded"] == 2000
    invoice = invoices(platform, first["subscription"])[0]
    assert (invoice["status"], invoice["settlement_status"]) == ("paid", "canceled")
    for account in (bakery, courier):
        balance = ok(platform.get(f"/v1/connected-accounts/{account['id']}/balance"))
        assert [b["amount"] for b in balance["available"] + balance["pending"]] in ([], [0], [0, 0])
    assert_ledger_verifies(servers)


def test_a_refund_stops_a_dead_lettered_commit_and_the_operators_retry_sends_nothing(platform, db, servers):
    from tests.installations.test_cli import moneyrail

    worker = start_worker(servers, name="worker-refund-stops-dead-letter")
    scheduler = start_scheduler(servers, name="scheduler-refund-stops-dead-letter")
    try:
        ok(
            platform.post(
                "/v1/test-helpers/processor-faults",
                json={"operation_type": "transfer", "mode": "permanent", "count": 1},
            )
        )
        first, _, _ = paid_platform_subscription(platform)
        distributing = wait_until(
            lambda: (i := invoices(platform, first["subscription"])[0])["allocation_group"] and i, timeout=60
        )
        group = ok(platform.get(f"/v1/allocation-groups/{distributing['allocation_group']}"))
        assert wait_for_operation(platform, group["operation"], FINAL, timeout=60)["status"] == "dead_letter"
        # final means final: a dead-lettered commit is not a failed distribution; it waits for an operator
        group = ok(platform.get(f"/v1/allocation-groups/{group['id']}"))
        assert (group["status"], group["last_operation_error"]["code"]) == ("committing", "processor_error")
        assert invoices(platform, first["subscription"])[0]["settlement_status"] == "distributing"

        # a partial refund: the whole unsent distribution stops, the rest stays with the platform
        refund = ok(
            platform.post("/v1/refunds", json={"payment_intent": first["payment_intent"], "amount": 500})
        )
        assert ok(platform.get(f"/v1/allocation-groups/{group['id']}"))["status"] == "canceled"
        done = wait_until(
            lambda: (r := ok(platform.get(f"/v1/refunds/{refund['id']}")))["status"] != "pending" and r,
            timeout=60,
        )
        assert done["status"] == "succeeded"
        # the operator retries the dead letter after the refund: it finds nothing to send
        retried = moneyrail(
            servers, "dead-letters", "retry", group["operation"], "--operator", "ops@example.com"
        )
        assert retried.returncode == 0, retried.stderr
        assert wait_for_operation(platform, group["operation"], FINAL, timeout=60)["status"] == "succeeded"
    finally:
        worker.stop()
        scheduler.stop()
    after = ok(platform.get(f"/v1/allocation-groups/{group['id']}"))
    assert (after["status"], {t["status"] for t in after["transfers"]}) == ("canceled", {"canceled"})
    # the processor was asked once, for the group's transfers in one batch, and refused them all;
    # nothing was asked after the refund
    calls = transfer_calls(db, platform.keys.installation_id)
    assert calls and not any(calls)
    assert ok(platform.get(f"/v1/payment-intents/{first['payment_intent']}"))["amount_refunded"] == 500
    assert invoices(platform, first["subscription"])[0]["settlement_status"] == "canceled"
    assert_ledger_verifies(servers)
