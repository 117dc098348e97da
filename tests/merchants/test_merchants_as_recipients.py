"""A merchant connected over OAuth is paid through its own connected account (spec 2: recipient ids are
`acct_`, "connected account, also used as a distribution recipient"): distributions, transfers and
payouts name that `acct_`; a `mer_` where a recipient goes is refused with the `acct_` to use. Over HTTP,
with real workers."""

from __future__ import annotations

import httpx
import pytest

from tests.engine.conftest import wait_for_operation
from tests.harness import TLS
from tests.helpers import assert_error, count_rows
from tests.merchants.support import (
    RETURN_URL,
    approve,
    connect,
    exchange,
    register_redirect_uris,
    restart_consent,
)
from tests.payments.support import create_payment, paid
from tests.transfers.support import FINAL, account_balance, distributed, group_of

DAY = 86400


@pytest.fixture
def platform(make_api, bridge):
    api = make_api(kind="platform")
    register_redirect_uris(bridge, api.keys)
    return api


def distribution_to(recipient: str, amount: int) -> dict:
    return {
        "merchant_of_record": recipient,
        "allocations": [{"recipient": recipient, "role": "merchant", "amount": amount}],
    }


def test_a_connected_merchant_is_paid_through_its_own_connected_account(platform, db, money_stack):
    merchant = connect(platform)
    account_id = merchant["connected_account"]
    assert account_id.startswith("acct_")
    account = platform.get(f"/v1/connected-accounts/{account_id}").json()
    assert (account["kind"], account["merchant"], account["display_name"]) == (
        "merchant",
        merchant["id"],
        "Luigi's Pizzeria",
    )
    assert account["payouts_enabled"] is True and account["requirements"]["currently_due"] == []
    listed = platform.get("/v1/connected-accounts", params={"kind": "merchant"}).json()["data"]
    assert [item["id"] for item in listed] == [account_id]

    payment = distributed(platform, 2500, [(account_id, "merchant", 2500)], merchant_of_record=account_id)
    group = group_of(platform, payment["id"])
    assert group["status"] == "committed"
    assert [(item["destination"], item["amount"]) for item in group["transfers"]] == [(account_id, 2500)]
    assert account_balance(platform, account_id) == (0, 2500)  # pending until the payment's fees are final
    platform.post("/v1/test-helpers/clock/advance", json={"seconds": 3 * DAY + 60})
    assert account_balance(platform, account_id) == (2500, 0)

    payout = platform.post(
        f"/v1/connected-accounts/{account_id}/payouts", json={"amount": 2500, "currency": "eur"}
    ).json()
    assert wait_for_operation(platform, payout["operation"], FINAL)["status"] == "succeeded"
    assert platform.get(f"/v1/payouts/{payout['id']}").json()["status"] == "in_transit"


def test_a_merchant_id_where_a_recipient_goes_is_refused_naming_its_account(platform, db):
    merchant = connect(platform)
    refused = platform.post(
        "/v1/payment-intents",
        json={"amount": 1000, "currency": "eur", "distribution": distribution_to(merchant["id"], 1000)},
    )
    error = assert_error(refused, 400, "distribution_invalid", "distribution[allocations][0][recipient]")
    assert merchant["connected_account"] in error["message"]
    unknown = "mer_" + "0" * 24
    error = assert_error(
        platform.post(
            "/v1/payment-intents",
            json={"amount": 1000, "currency": "eur", "distribution": distribution_to(unknown, 1000)},
        ),
        400,
        "distribution_invalid",
        "distribution[allocations][0][recipient]",
    )
    assert "acct_" in error["message"]
    source = paid(platform, 1000)
    transfer = platform.post(
        "/v1/transfers",
        json={"destination": merchant["id"], "amount": 100, "source_transaction": source["id"]},
    )
    error = assert_error(transfer, 400, "parameter_invalid", "destination")
    assert merchant["connected_account"] in error["message"]
    assert count_rows(db, "payment_intents", platform.keys.installation_id) == 1  # the source only
    assert count_rows(db, "transfers", platform.keys.installation_id) == 0


def test_a_merchant_with_its_bank_account_due_is_paid_out_once_its_activation_page_has_it(platform):
    merchant = connect(platform, leave_requirement_due="yes")
    account_id = merchant["connected_account"]
    account = platform.get(f"/v1/connected-accounts/{account_id}").json()
    assert account["payouts_enabled"] is False and account["external_account"] is None
    assert account["requirements"]["currently_due"] == ["external_account"]
    assert_error(
        platform.post(f"/v1/connected-accounts/{account_id}/payouts", json={"amount": 1, "currency": "eur"}),
        409,
        "resource_state_invalid",
    )
    session = platform.post(
        f"/v1/merchants/{merchant['id']}/onboarding-sessions", json={"return_url": RETURN_URL}
    ).json()
    done = httpx.post(
        session["url"], data={"bank_account": "8937 0400 12"}, follow_redirects=False, timeout=30, verify=TLS
    )
    assert done.status_code == 303, done.text
    account = platform.get(f"/v1/connected-accounts/{account_id}").json()
    assert account["payouts_enabled"] is True and account["external_account"]["bank_last4"] == "0012"


def test_a_revoked_merchants_account_receives_no_new_money_and_a_new_consent_keeps_it(platform, db):
    merchant = connect(platform)
    account_id = merchant["connected_account"]
    assert platform.delete(f"/v1/merchants/{merchant['id']}").json()["connected_account"] == account_id
    refused = platform.post(
        "/v1/payment-intents",
        json={"amount": 1000, "currency": "eur", "distribution": distribution_to(account_id, 1000)},
    )
    error = assert_error(refused, 400, "distribution_invalid", "distribution[allocations][0][recipient]")
    assert "revoked" in error["message"]
    assert count_rows(db, "payment_intents", platform.keys.installation_id) == 0

    started = restart_consent(platform, merchant["id"])
    token = exchange(platform, approve(started), started.pkce.verifier)
    assert token.status_code == 200, token.text
    again = platform.get(f"/v1/merchants/{merchant['id']}").json()
    assert again["connected_account"] == account_id  # the same account, not a second one
    assert count_rows(db, "connected_accounts", platform.keys.installation_id) == 1
    assert (
        create_payment(platform, 1000, distribution=distribution_to(account_id, 1000))["status"]
        == "requires_payment_method"
    )
