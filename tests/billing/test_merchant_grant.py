"""`review_required` when the merchant a subscription sells for lost its grant (issue 15.6, spec 4.M
rule 3): on a platform installation the renewal after a revocation opens no invoice and charges
nothing; the subscription says why; after the merchant consents again a sync resumes it, charged once.
Over HTTP, with real worker and scheduler processes and the sandbox clock."""

from __future__ import annotations

import httpx
import pytest

from tests.billing.support import (
    advance,
    checkout_for,
    clock_now,
    customer,
    enable_billing,
    invoices,
    ok,
    post,
    price,
    subscribe,
    wait_until,
)
from tests.billing.test_distribution_versions import shares
from tests.checkout.support import card_form
from tests.connect.support import create_account
from tests.harness import TLS
from tests.helpers import assert_error, count_rows
from tests.merchants.support import approve, connect, exchange, register_redirect_uris, restart_consent
from tests.payment_methods.support import SUCCEEDS


@pytest.fixture
def platform(make_api, bridge):
    api = make_api(kind="platform")
    register_redirect_uris(bridge, api.keys)
    enable_billing(bridge, api.keys)  # after: its return URLs are the checkout's
    return api


def read(api, subscription_id: str) -> dict:
    return ok(api.get(f"/v1/subscriptions/{subscription_id}"))


def test_a_revoked_merchant_stops_the_renewal_for_review_and_a_sync_after_consent_resumes_it(
    platform, db, money_stack
):
    merchant = connect(platform)
    assert merchant["connection_status"] == "active"
    bakery = create_account(platform, "merchant", display_name="Luigi's Pizzeria")
    courier = create_account(platform, "courier")
    created = subscribe(
        platform,
        price(platform, 2000)["id"],
        customer(platform)["id"],
        merchant=merchant["id"],
        distribution=shares(bakery["id"], courier["id"], 9000, 1000),
    )
    assert created["merchant"] == merchant["id"]
    paid = httpx.post(
        checkout_for(platform, created["id"])["checkout_url"],
        data=card_form(SUCCEEDS, renew_consent="yes"),
        verify=TLS,
    )
    assert paid.status_code == 303, paid.text
    subscription = read(platform, created["id"])
    assert subscription["status"] == "active"
    # the first cycle's transfers go out first, so the processor calls counted below are the renewal's
    wait_until(lambda: invoices(platform, created["id"])[0]["settlement_status"] == "settled", timeout=60)

    assert platform.delete(f"/v1/merchants/{merchant['id']}").status_code == 200
    installation = platform.keys.installation_id
    payments_before = count_rows(db, "payment_intents", installation)
    calls_before = count_rows(db, "sandbox_processor_calls", installation)

    advance(platform, subscription["current_period_end"] - clock_now(platform) + 1)
    stopped = wait_until(
        lambda: (s := read(platform, created["id"]))["status"] == "review_required" and s, timeout=60
    )
    assert stopped["review_reason"] == "merchant_grant_revoked"
    assert stopped["access_until"] == subscription["access_until"]  # the paid period only
    assert [i["status"] for i in invoices(platform, created["id"])] == ["paid"]
    assert count_rows(db, "payment_intents", installation) == payments_before  # no invoice, no payment
    assert count_rows(db, "sandbox_processor_calls", installation) == calls_before  # nothing charged

    # a sync before the repair changes nothing: the check still fails
    sync = ok(post(platform, f"/v1/subscriptions/{created['id']}/sync"), 202)
    wait_until(lambda: ok(platform.get(f"/v1/operations/{sync['id']}"))["status"] == "succeeded")
    assert read(platform, created["id"])["status"] == "review_required"
    assert count_rows(db, "sandbox_processor_calls", installation) == calls_before

    # the merchant consents again; a sync resumes automation and the cycle is charged once
    again = restart_consent(platform, merchant["id"])
    token = exchange(platform, approve(again), again.pkce.verifier)
    assert token.status_code == 200 and token.json()["merchant"] == merchant["id"], token.text
    resync = ok(post(platform, f"/v1/subscriptions/{created['id']}/sync"), 202)
    wait_until(lambda: ok(platform.get(f"/v1/operations/{resync['id']}"))["status"] == "succeeded")
    assert read(platform, created["id"])["status"] == "active"
    advance(platform, 1)  # the overdue cycle is renewed by the next sweep; a clock advance runs it now
    renewed = wait_until(
        lambda: (
            (rows := invoices(platform, created["id"]))
            and len(rows) == 2
            and rows[-1]["status"] == "paid"
            and rows
        ),
        timeout=60,
    )
    assert renewed[-1]["amount"] == 2000
    resumed = read(platform, created["id"])
    assert (resumed["status"], resumed["review_reason"]) == ("active", None)
    assert resumed["access_until"] > subscription["access_until"]
    assert count_rows(db, "payment_intents", installation) == payments_before + 1
    # a subscription names an active merchant of this installation, else nothing is written
    plan, buyer = price(platform, 2000)["id"], customer(platform)["id"]
    subscriptions = count_rows(db, "subscriptions", installation)
    body = {"price": plan, "customer": buyer, "distribution": shares(bakery["id"], courier["id"], 9000, 1000)}
    assert_error(
        post(platform, "/v1/subscriptions", body | {"merchant": "mer_nope"}),
        400,
        "resource_missing",
        "merchant",
    )
    assert platform.delete(f"/v1/merchants/{merchant['id']}").status_code == 200
    assert_error(
        post(platform, "/v1/subscriptions", body | {"merchant": merchant["id"]}),
        400,
        "parameter_invalid",
        "merchant",
    )
    assert count_rows(db, "subscriptions", installation) == subscriptions
