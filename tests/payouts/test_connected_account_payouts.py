"""Payouts of connected accounts, through real workers and the sandbox clock: standard and instant,
arrival on the environment's clock, a closed bank account failing with the money back, and never more
than the available balance, also when two are requested at once."""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest

from tests.connect.support import CLOSED_BANK_ACCOUNT, create_account, onboarded_account
from tests.engine.conftest import wait_for_operation
from tests.harness import TLS
from tests.helpers import assert_error, count_rows
from tests.installations.test_cli import moneyrail
from tests.payments.support import event_types, ledger_balance, paid
from tests.transfers.support import FINAL, account_balance, processor_transfer_calls

DAY = 86400


@pytest.fixture
def platform(make_api):
    return make_api(kind="platform")


def funded(api, amount: int, **account_fields) -> str:
    """An onboarded account with `amount` available: a transfer out of a payment whose fees are final."""
    account = onboarded_account(api, **account_fields)["id"]
    payment = paid(api, amount)
    api.post("/v1/test-helpers/clock/advance", json={"seconds": 3 * DAY + 60})  # the payment settles
    transfer = api.post(
        "/v1/transfers", json={"destination": account, "amount": amount, "source_transaction": payment["id"]}
    ).json()
    group = api.get(f"/v1/allocation-groups/{transfer['allocation_group']}").json()
    assert wait_for_operation(api, group["operation"], FINAL)["status"] == "succeeded"
    assert account_balance(api, account) == (amount, 0)
    return account


def payout(api, account: str, amount: int, **fields) -> httpx.Response:
    return api.post(
        f"/v1/connected-accounts/{account}/payouts", json={"amount": amount, "currency": "eur", **fields}
    )


def settled(api, created: dict) -> dict:
    wait_for_operation(api, created["operation"], FINAL)
    return next(
        item
        for item in api.get(f"/v1/connected-accounts/{created['connected_account']}/payouts").json()["data"]
        if item["id"] == created["id"]
    )


def test_a_standard_payout_is_in_transit_then_paid_on_the_next_business_days(platform, db, money_stack):
    account = funded(platform, 5000)
    created = payout(platform, account, 3000)
    assert created.status_code == 200, created.text
    body = created.json()
    assert body["id"].startswith("po_") and (body["status"], body["method"], body["fee_amount"]) == (
        "pending",
        "standard",
        0,
    )
    assert account_balance(platform, account) == (2000, 0)  # held from the moment it is accepted
    in_transit = settled(platform, body)
    assert in_transit["status"] == "in_transit"
    now = platform.get("/v1/test-helpers/clock").json()["now"]
    assert 2 * DAY - 60 <= in_transit["arrival_date"] - now <= 4 * DAY  # two weekdays, weekends skipped
    platform.post("/v1/test-helpers/clock/advance", json={"seconds": 4 * DAY + 60})
    listed = platform.get(f"/v1/connected-accounts/{account}/payouts").json()["data"]
    assert [(item["id"], item["status"]) for item in listed] == [(body["id"], "paid")]
    installation = platform.keys.installation_id
    assert ledger_balance(db, installation, "payouts:in_transit") == 0
    assert ledger_balance(db, installation, "world:bank_payouts") == 3000
    assert event_types(platform, body["id"]) == ["payout.created", "payout.updated", "payout.paid"]


def test_an_instant_payout_costs_a_fee_and_arrives_within_minutes(platform, db, money_stack):
    account = funded(platform, 10000)
    body = payout(platform, account, 8000, method="instant").json()
    assert body["fee_amount"] == 80  # 1 %, at least 50
    assert account_balance(platform, account) == (10000 - 8080, 0)
    in_transit = settled(platform, body)
    assert in_transit["arrival_date"] - platform.get("/v1/test-helpers/clock").json()["now"] <= 30 * 60
    platform.post("/v1/test-helpers/clock/advance", json={"seconds": 31 * 60})
    assert platform.get(f"/v1/connected-accounts/{account}/payouts").json()["data"][0]["status"] == "paid"
    assert ledger_balance(db, platform.keys.installation_id, "service:payout_fees") == 80
    assert_error(
        payout(platform, account, 1871, method="instant"), 400, "amount_invalid", "amount"
    )  # 1871 + 50 > 1920


def test_a_closed_bank_account_fails_the_payout_and_returns_the_money(platform, db, money_stack):
    account = funded(platform, 4000, external_account={"account_number": CLOSED_BANK_ACCOUNT})
    body = payout(platform, account, 4000).json()
    done = settled(platform, body)
    assert (done["status"], done["failure_code"]) == ("failed", "account_closed")
    assert account_balance(platform, account) == (4000, 0)
    assert ledger_balance(db, platform.keys.installation_id, "payouts:in_transit") == 0
    assert event_types(platform, body["id"]) == ["payout.created", "payout.failed"]


def test_two_payouts_at_the_same_moment_never_exceed_the_available_balance(platform, web, db, money_stack):
    account = funded(platform, 1000)
    start = threading.Barrier(2)
    statuses: list[int] = []

    def attempt() -> None:
        with httpx.Client(
            base_url=web.base_url, headers=dict(platform.headers), timeout=30, verify=TLS
        ) as client:
            start.wait()
            statuses.append(payout(client, account, 700).status_code)

    threads = [threading.Thread(target=attempt) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [200, 400]
    assert account_balance(platform, account) == (300, 0)
    assert count_rows(db, "payouts", platform.keys.installation_id) == 1


def test_payouts_wait_for_onboarding_and_never_overdraw(platform, make_api, db):
    fresh = create_account(platform)["id"]
    assert_error(payout(platform, fresh, 100), 409, "resource_state_invalid")
    ready = onboarded_account(platform)["id"]
    assert_error(payout(platform, ready, 1), 400, "amount_invalid", "amount")
    assert_error(payout(platform, ready, 1, method="overnight"), 400, "parameter_invalid", "method")
    foreign = onboarded_account(make_api(kind="platform"))["id"]
    assert_error(payout(platform, foreign, 1), 404, "resource_missing", "connected_account")
    assert count_rows(db, "payouts", platform.keys.installation_id) == 0


def test_a_transient_fault_is_retried_and_the_payout_happens_once(platform, db, money_stack):
    account = funded(platform, 900)
    platform.post(
        "/v1/test-helpers/processor-faults",
        json={"operation_type": "payout", "mode": "transient", "count": 2},
    )
    body = payout(platform, account, 900).json()
    operation = wait_for_operation(platform, body["operation"], FINAL)
    assert (operation["status"], operation["attempts"]) == ("succeeded", 3)
    assert platform.get(f"/v1/payouts/{body['id']}").json()["status"] == "in_transit"
    calls = processor_transfer_calls(db, platform.keys.installation_id, "payout")
    assert calls == [(f"{body['operation']}:payout", True)]


def test_a_refused_payout_dead_letters_holding_its_money_and_an_operators_retry_sends_it(
    platform, db, servers, money_stack
):
    account = funded(platform, 600)
    platform.post(
        "/v1/test-helpers/processor-faults",
        json={"operation_type": "payout", "mode": "permanent", "count": 1},
    )
    body = payout(platform, account, 600).json()
    assert wait_for_operation(platform, body["operation"], FINAL)["status"] == "dead_letter"
    held = platform.get(f"/v1/payouts/{body['id']}").json()
    assert (held["status"], held["failure_code"]) == ("pending", None)  # final means final: not failed
    assert held["last_operation_error"]["code"] == "processor_error"
    assert event_types(platform, body["id"]) == ["payout.created"]
    assert account_balance(platform, account) == (0, 0)  # held until an operator decides
    shown = moneyrail(
        servers, "dead-letters", "list", "--installation", platform.keys.installation_id, "--json"
    )
    assert shown.returncode == 0, shown.stderr
    listed = json.loads(shown.stdout)
    assert [(item["id"], item["type"]) for item in listed] == [(body["operation"], "payout")]
    assert moneyrail(servers, "dead-letters", "retry", body["operation"]).returncode == 0
    assert wait_for_operation(platform, body["operation"], FINAL)["status"] == "succeeded"
    sent = platform.get(f"/v1/payouts/{body['id']}").json()
    assert (sent["status"], sent["failure_code"], sent["last_operation_error"]) == ("in_transit", None, None)
    calls = processor_transfer_calls(db, platform.keys.installation_id, "payout")
    assert calls == [(f"{body['operation']}:payout", False), (f"{body['operation']}:payout:1", True)]


def test_the_installations_payouts_are_listed_and_read_only_by_it(platform, make_api, money_stack):
    account = funded(platform, 500)
    body = payout(platform, account, 200).json()
    assert [item["id"] for item in platform.get("/v1/payouts").json()["data"]] == [body["id"]]
    other = make_api(kind="platform")
    assert other.get("/v1/payouts").json()["data"] == []
    assert_error(other.get(f"/v1/payouts/{body['id']}"), 404, "resource_missing", "payout")


def test_a_pending_payout_can_be_canceled_and_its_money_returns(platform, db, money_stack):
    account = funded(platform, 750)
    # the processor is down, so the payout stays pending while its operation retries
    platform.post(
        "/v1/test-helpers/processor-faults",
        json={"operation_type": "payout", "mode": "transient", "count": 50},
    )
    body = payout(platform, account, 700, method="instant").json()
    assert account_balance(platform, account) == (0, 0)
    # between two attempts: while one is at the processor (no lock held) the cancel is refused, as the
    # processor may be paying it out; the caller asks again in a moment
    deadline = time.monotonic() + 30
    while (canceled := platform.post(f"/v1/payouts/{body['id']}/cancel")).status_code == 409:
        assert "being handed to the processor" in canceled.json()["error"]["message"], canceled.text
        assert time.monotonic() < deadline, "the payout's operation never paused between attempts"
        time.sleep(0.05)
    assert canceled.status_code == 200, canceled.text
    assert canceled.json()["status"] == "canceled"
    assert account_balance(platform, account) == (750, 0)  # the fee too
    assert_error(platform.post(f"/v1/payouts/{body['id']}/cancel"), 409, "resource_state_invalid")
    assert platform.delete("/v1/test-helpers/processor-faults").status_code == 200  # the processor is back
    # the operation then finds nothing to send (or, on a slow machine, ran out of attempts first)
    assert wait_for_operation(platform, body["operation"], FINAL, timeout=60)["status"] in {
        "succeeded",
        "dead_letter",
    }
    assert processor_transfer_calls(db, platform.keys.installation_id, "payout") == []  # nothing was sent
    assert platform.get(f"/v1/payouts/{body['id']}").json()["status"] == "canceled"
    assert ledger_balance(db, platform.keys.installation_id, "payouts:in_transit") == 0
    assert event_types(platform, body["id"]) == ["payout.created", "payout.canceled"]


def test_a_payout_on_its_way_cannot_be_canceled(platform, money_stack):
    account = funded(platform, 300)
    body = payout(platform, account, 300).json()
    wait_for_operation(platform, body["operation"], FINAL)
    assert_error(platform.post(f"/v1/payouts/{body['id']}/cancel"), 409, "resource_state_invalid")
    assert_error(platform.post("/v1/payouts/po_" + "0" * 24 + "/cancel"), 404, "resource_missing", "payout")
