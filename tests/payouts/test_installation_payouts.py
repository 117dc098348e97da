"""Payouts of a direct installation's own balance and reversals of paid payouts, over HTTP through real
workers and the sandbox clock: standard and instant, a closed bank account failing with the money back,
never more than the available balance (also two at once), cancel while pending, reverse once when paid."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from moneyrail.installations import service as installations
from tests.connect.support import onboarded_account
from tests.engine.conftest import wait_for_operation
from tests.harness import TLS
from tests.helpers import assert_error, count_rows
from tests.payments.support import event_types, ledger_balance, paid
from tests.payouts.support import (
    CLOSED_BANK_ACCOUNT,
    DAY,
    advance,
    after_operation,
    available,
    clock_now,
    fund_installation,
    installation_payout,
    paid_payout,
)
from tests.transfers.support import FINAL, account_balance


@pytest.fixture
def direct(make_api):
    return make_api(kind="direct")


def set_payout_bank_account(bridge, api, number: str) -> None:
    async def work(session: Any) -> None:
        await installations.update_environment_settings(session, api.keys.tenant, payout_bank_account=number)

    bridge.in_unit_of_work(work)


def at_once(web, api, count: int, call: Callable[[httpx.Client], httpx.Response]) -> list[httpx.Response]:
    """`count` requests released together, each on its own connection."""
    start = threading.Barrier(count)
    answers: list[httpx.Response] = []

    def attempt() -> None:
        with httpx.Client(base_url=web.base_url, headers=dict(api.headers), timeout=30, verify=TLS) as client:
            start.wait()
            answers.append(call(client))

    threads = [threading.Thread(target=attempt) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


def test_a_standard_payout_of_the_installations_balance_arrives_on_the_sandbox_clock(direct, db, money_stack):
    fund_installation(direct, 5000)
    created = installation_payout(direct, 3000, metadata={"batch": "7"})
    assert created.status_code == 200, created.text
    body = created.json()
    assert body["id"].startswith("po_")
    assert (body["connected_account"], body["status"], body["method"], body["fee_amount"]) == (
        None,
        "pending",
        "standard",
        0,
    )
    assert available(direct) == 2000  # held from the moment it is accepted
    in_transit = after_operation(direct, body)
    assert in_transit["status"] == "in_transit"
    assert 2 * DAY - 60 <= in_transit["arrival_date"] - clock_now(direct) <= 4 * DAY
    advance(direct, 4 * DAY + 60)
    assert direct.get(f"/v1/payouts/{body['id']}").json()["status"] == "paid"
    assert [item["id"] for item in direct.get("/v1/payouts").json()["data"]] == [body["id"]]
    installation = direct.keys.installation_id
    assert ledger_balance(db, installation, "payouts:in_transit") == 0
    assert ledger_balance(db, installation, "world:bank_payouts") == 3000
    assert ledger_balance(db, installation, "balance:available") == 2000
    assert event_types(direct, body["id"]) == ["payout.created", "payout.updated", "payout.paid"]


def test_an_instant_payout_of_the_installations_balance_costs_its_fee(direct, db, money_stack):
    fund_installation(direct, 10000)
    body = installation_payout(direct, 6000, method="instant").json()
    assert body["fee_amount"] == 60  # 1 %, at least 50
    assert available(direct) == 10000 - 6060
    in_transit = after_operation(direct, body)
    assert in_transit["arrival_date"] - clock_now(direct) <= 30 * 60
    advance(direct, 31 * 60)
    assert direct.get(f"/v1/payouts/{body['id']}").json()["status"] == "paid"
    assert ledger_balance(db, direct.keys.installation_id, "service:payout_fees") == 60
    # 3940 left: 3891 + the 50 minimum fee is one too many
    assert_error(installation_payout(direct, 3891, method="instant"), 400, "amount_invalid", "amount")
    assert available(direct) == 3940


def test_a_closed_bank_account_fails_the_installations_payout_and_returns_the_money(
    direct, bridge, db, money_stack
):
    fund_installation(direct, 4000)
    set_payout_bank_account(bridge, direct, CLOSED_BANK_ACCOUNT)
    body = installation_payout(direct, 2500, method="instant").json()
    done = after_operation(direct, body)
    assert (done["status"], done["failure_code"]) == ("failed", "account_closed")
    assert available(direct) == 4000  # the fee too
    assert ledger_balance(db, direct.keys.installation_id, "payouts:in_transit") == 0
    assert ledger_balance(db, direct.keys.installation_id, "service:payout_fees") == 0
    assert event_types(direct, body["id"]) == ["payout.created", "payout.failed"]


def test_two_installation_payouts_at_once_never_exceed_the_available_balance(direct, web, db, money_stack):
    fund_installation(direct, 1000)
    answers = at_once(web, direct, 2, lambda client: installation_payout(client, 700))
    assert sorted(answer.status_code for answer in answers) == [200, 400]
    refused = next(answer for answer in answers if answer.status_code == 400)
    assert_error(refused, 400, "amount_invalid", "amount")
    assert available(direct) == 300
    assert count_rows(db, "payouts", direct.keys.installation_id) == 1


def test_installation_payouts_refuse_bad_input_and_platforms_writing_nothing(direct, make_api, db):
    assert_error(installation_payout(direct, 1), 400, "amount_invalid", "amount")  # nothing available
    assert_error(installation_payout(direct, 0), 400, "amount_invalid", "amount")
    assert_error(installation_payout(direct, 100, method="overnight"), 400, "parameter_invalid", "method")
    assert_error(installation_payout(direct, 100, currency="EURO"), 400, "currency_invalid", "currency")
    assert_error(installation_payout(direct, 100, destination="x"), 400, "parameter_unknown", "destination")
    platform = make_api(kind="platform")
    refused = installation_payout(platform, 100)
    assert_error(refused, 409, "resource_state_invalid")
    assert "connected-accounts" in refused.json()["error"]["message"]
    assert count_rows(db, "payouts", direct.keys.installation_id) == 0
    assert count_rows(db, "payouts", platform.keys.installation_id) == 0


def test_a_pending_installation_payout_can_be_canceled_and_its_money_returns(direct, db, money_stack):
    fund_installation(direct, 800)
    direct.post(
        "/v1/test-helpers/processor-faults",
        json={"operation_type": "payout", "mode": "transient", "count": 50},
    )
    body = installation_payout(direct, 700, method="instant").json()
    assert available(direct) == 800 - 750
    canceled = direct.post(f"/v1/payouts/{body['id']}/cancel")
    if canceled.status_code == 409:
        # the worker was handing it to the (failing) processor at that instant: refused, as documented,
        # until that attempt ends; the retries wait, so the next ask lands between attempts
        assert "being handed to the processor" in canceled.json()["error"]["message"]
        wait_for_operation(direct, body["operation"], {"pending"}, timeout=30)
        canceled = direct.post(f"/v1/payouts/{body['id']}/cancel")
    assert canceled.status_code == 200, canceled.text
    assert canceled.json()["status"] == "canceled"
    assert available(direct) == 800
    assert direct.delete("/v1/test-helpers/processor-faults").status_code == 200  # the processor is back
    wait_for_operation(direct, body["operation"], FINAL, timeout=60)
    assert direct.get(f"/v1/payouts/{body['id']}").json()["status"] == "canceled"
    assert_error(direct.post(f"/v1/payouts/{body['id']}/reverse"), 409, "resource_state_invalid")
    assert ledger_balance(db, direct.keys.installation_id, "payouts:in_transit") == 0


def test_a_paid_payout_is_reversed_once_and_its_money_comes_back_on_the_sandbox_clock(
    direct, db, money_stack
):
    fund_installation(direct, 5000)
    original = paid_payout(direct, 3000, method="instant")  # fee 50 (the minimum), not returned
    assert available(direct) == 5000 - 3050
    answered = direct.post(f"/v1/payouts/{original['id']}/reverse", json={"metadata": {"why": "test"}})
    assert answered.status_code == 200, answered.text
    reversal = answered.json()
    assert reversal["id"].startswith("po_") and reversal["id"] != original["id"]
    assert (reversal["original_payout"], reversal["amount"], reversal["fee_amount"], reversal["status"]) == (
        original["id"],
        3000,
        0,
        "pending",
    )
    assert reversal["metadata"] == {"why": "test"}
    assert direct.get(f"/v1/payouts/{original['id']}").json()["reversed_by"] == reversal["id"]
    assert available(direct) == 1950  # nothing is back until the bank gives the money up and it arrives
    assert_error(direct.post(f"/v1/payouts/{original['id']}/reverse"), 409, "resource_state_invalid")
    assert_error(direct.post(f"/v1/payouts/{reversal['id']}/reverse"), 409, "resource_state_invalid")

    in_transit = after_operation(direct, reversal)
    assert in_transit["status"] == "in_transit"
    installation = direct.keys.installation_id
    assert ledger_balance(db, installation, "payouts:in_transit") == 3000  # on its way back
    assert ledger_balance(db, installation, "world:bank_payouts") == 0
    assert available(direct) == 1950
    advance(direct, 4 * DAY + 60)
    assert direct.get(f"/v1/payouts/{reversal['id']}").json()["status"] == "paid"
    assert available(direct) == 4950  # the instant fee stays spent
    assert ledger_balance(db, installation, "payouts:in_transit") == 0
    assert ledger_balance(db, installation, "service:payout_fees") == 50
    assert_error(direct.post(f"/v1/payouts/{original['id']}/reverse"), 409, "resource_state_invalid")
    listed = [item["id"] for item in direct.get("/v1/payouts").json()["data"]]
    assert listed == [reversal["id"], original["id"]]
    assert event_types(direct, original["id"]) == [
        "payout.created",
        "payout.updated",
        "payout.paid",
        "payout.reversed",
    ]
    assert event_types(direct, reversal["id"]) == [
        "payout.reversal.created",
        "payout.reversal.updated",
        "payout.reversal.paid",
    ]


def test_two_reversals_of_one_payout_at_once_make_one(direct, web, db, money_stack):
    fund_installation(direct, 900)
    original = paid_payout(direct, 900)
    answers = at_once(web, direct, 2, lambda client: client.post(f"/v1/payouts/{original['id']}/reverse"))
    assert sorted(answer.status_code for answer in answers) == [200, 409]
    rows = db.execute(
        "SELECT count(*) FROM payouts WHERE original_payout_id = %s", (original["id"],)
    ).fetchone()
    assert rows is not None and rows[0] == 1


def test_only_a_paid_payout_can_be_reversed(direct, money_stack):
    fund_installation(direct, 600)
    body = installation_payout(direct, 600).json()
    assert_error(direct.post(f"/v1/payouts/{body['id']}/reverse"), 409, "resource_state_invalid")  # pending
    assert after_operation(direct, body)["status"] == "in_transit"
    refused = direct.post(f"/v1/payouts/{body['id']}/reverse")
    assert_error(refused, 409, "resource_state_invalid")
    assert "in_transit" in refused.json()["error"]["message"]
    assert_error(direct.post("/v1/payouts/po_" + "0" * 24 + "/reverse"), 404, "resource_missing", "payout")
    with_amount = direct.post(f"/v1/payouts/{body['id']}/reverse", json={"amount": 1})
    assert_error(with_amount, 400, "parameter_unknown", "amount")  # a payout is reversed whole


def test_a_pending_reversal_canceled_lets_the_payout_be_reversed_again(direct, db, money_stack):
    fund_installation(direct, 700)
    original = paid_payout(direct, 700)
    direct.post(
        "/v1/test-helpers/processor-faults",
        json={"operation_type": "payout_reversal", "mode": "transient", "count": 50},
    )
    first = direct.post(f"/v1/payouts/{original['id']}/reverse").json()
    canceled = direct.post(f"/v1/payouts/{first['id']}/cancel")
    assert canceled.status_code == 200, canceled.text
    assert canceled.json()["status"] == "canceled"
    assert direct.get(f"/v1/payouts/{original['id']}").json()["reversed_by"] is None
    assert available(direct) == 0  # a canceled reversal moved nothing
    assert direct.delete("/v1/test-helpers/processor-faults").status_code == 200  # the processor is back
    wait_for_operation(direct, first["operation"], FINAL, timeout=60)
    second = direct.post(f"/v1/payouts/{original['id']}/reverse").json()
    assert after_operation(direct, second)["status"] == "in_transit"
    advance(direct, 4 * DAY + 60)
    assert available(direct) == 700
    assert event_types(direct, first["id"]) == ["payout.reversal.created", "payout.reversal.canceled"]


def test_a_connected_accounts_paid_payout_reversed_returns_to_its_balance(make_api, db, money_stack):
    platform = make_api(kind="platform")
    account = onboarded_account(platform)["id"]
    payment = paid(platform, 1500)
    advance(platform, 3 * DAY + 60)
    transfer = platform.post(
        "/v1/transfers", json={"destination": account, "amount": 1500, "source_transaction": payment["id"]}
    ).json()
    group = platform.get(f"/v1/allocation-groups/{transfer['allocation_group']}").json()
    assert wait_for_operation(platform, group["operation"], FINAL)["status"] == "succeeded"
    created = platform.post(
        f"/v1/connected-accounts/{account}/payouts", json={"amount": 1500, "currency": "eur"}
    ).json()
    after_operation(platform, created)
    advance(platform, 4 * DAY + 60)
    assert account_balance(platform, account) == (0, 0)
    reversal = platform.post(f"/v1/payouts/{created['id']}/reverse").json()
    assert reversal["connected_account"] == account
    after_operation(platform, reversal)
    advance(platform, 4 * DAY + 60)
    assert platform.get(f"/v1/payouts/{reversal['id']}").json()["status"] == "paid"
    assert account_balance(platform, account) == (1500, 0)
    assert ledger_balance(db, platform.keys.installation_id, "world:bank_payouts") == 0
