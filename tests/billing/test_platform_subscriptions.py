"""Subscriptions on a platform installation: the distribution in basis points is validated, stored as
version 1, snapshotted on each cycle's invoice, and each paid cycle is distributed (largest remainder);
the hosted page names the merchant of record as the seller. Transient network faults during a
renewal are retried with one charge."""

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
from tests.checkout.support import card_form
from tests.connect.support import create_account
from tests.engine.conftest import wait_for_operation
from tests.harness import TLS
from tests.helpers import assert_error, count_rows
from tests.payment_methods.support import SUCCEEDS
from tests.transfers.support import FINAL


@pytest.fixture
def marketplace(make_api, bridge):
    platform = make_api(kind="platform")
    enable_billing(bridge, platform.keys)
    return platform


def shares(merchant: str, courier: str, merchant_bp: int = 8000, courier_bp: int = 2000) -> dict:
    return {
        "merchant_of_record": merchant,
        "allocations": [
            {"recipient": merchant, "role": "merchant", "basis_points": merchant_bp},
            {"recipient": courier, "role": "courier", "basis_points": courier_bp},
        ],
    }


def test_a_platform_subscription_distributes_each_paid_cycle_by_basis_points(marketplace, db, money_stack):
    bakery = create_account(marketplace, "merchant", display_name="Bakery Ltd")
    courier = create_account(marketplace, "courier")
    plan = price(marketplace, 1999)
    created = subscribe(
        marketplace, plan["id"], customer(marketplace)["id"], distribution=shares(bakery["id"], courier["id"])
    )
    assert (created["distribution_version"], created["terms_version"]) == (1, 1)
    assert created["distribution"]["allocations"][0]["basis_points"] == 8000
    checkout = checkout_for(marketplace, created["id"])
    page = httpx.get(checkout["checkout_url"], verify=TLS).text
    assert "Bakery Ltd" in page and "test installation" not in page  # the seller, never the developer firm
    paid = httpx.post(checkout["checkout_url"], data=card_form(SUCCEEDS, renew_consent="yes"), verify=TLS)
    assert paid.status_code == 303
    (first,) = invoices(marketplace, created["id"])
    assert (first["status"], first["distribution_version"], first["settlement_status"]) == (
        "paid",
        1,
        "distributing",
    )
    transfers = wait_until(
        lambda: ok(
            marketplace.get(
                "/v1/transfers", params={"source_transaction": first["payment_intent"], "limit": 10}
            )
        )["data"]
    )
    group = ok(marketplace.get(f"/v1/allocation-groups/{transfers[0]['allocation_group']}"))
    wait_for_operation(marketplace, group["operation"], FINAL)
    paid_out = {
        t["destination"]: t["amount"]
        for t in ok(marketplace.get(f"/v1/allocation-groups/{group['id']}"))["transfers"]
    }
    # 1999 x 80% = 1599.2 and x 20% = 399.8: the leftover unit goes to the larger remainder
    assert paid_out == {bakery["id"]: 1599, courier["id"]: 400}
    settled = wait_until(
        lambda: (i := invoices(marketplace, created["id"])[0])["settlement_status"] == "settled" and i
    )
    assert (settled["allocation_group"], settled["distribution_version"]) == (group["id"], 1)


@pytest.mark.parametrize(
    ("change", "param"),
    [
        ({"merchant_bp": 7000}, "distribution.allocations"),
        ({"merchant_bp": 12000, "courier_bp": -2000}, "distribution.allocations[1].basis_points"),
    ],
)
def test_a_distribution_that_does_not_total_10000_basis_points_is_refused(marketplace, db, change, param):
    bakery, courier = create_account(marketplace, "merchant"), create_account(marketplace, "courier")
    body = {
        "price": price(marketplace)["id"],
        "customer": customer(marketplace)["id"],
        "distribution": shares(bakery["id"], courier["id"], **change),
    }
    assert_error(post(marketplace, "/v1/subscriptions", body), 400, "distribution_invalid", param)
    assert count_rows(db, "subscriptions", marketplace.keys.installation_id) == 0


def test_a_foreign_recipient_or_a_missing_distribution_is_refused_on_a_platform(marketplace, make_api, db):
    stranger = create_account(make_api(kind="platform"), "courier")
    bakery = create_account(marketplace, "merchant")
    body = {"price": price(marketplace)["id"], "customer": customer(marketplace)["id"]}
    assert_error(post(marketplace, "/v1/subscriptions", body), 400, "parameter_missing", "distribution")
    foreign = post(
        marketplace, "/v1/subscriptions", body | {"distribution": shares(bakery["id"], stranger["id"])}
    )
    assert foreign.status_code == 400 and foreign.json()["error"]["code"] == "distribution_invalid"
    assert count_rows(db, "subscriptions", marketplace.keys.installation_id) == 0
    assert count_rows(db, "payment_intents", marketplace.keys.installation_id) == 0


def test_transient_network_faults_during_a_renewal_are_retried_with_one_charge(biller, db, money_stack):
    created = subscribe(biller, price(biller, 1200)["id"], customer(biller)["id"])
    checkout = checkout_for(biller, created["id"])
    assert (
        httpx.post(
            checkout["checkout_url"], data=card_form(SUCCEEDS, renew_consent="yes"), verify=TLS
        ).status_code
        == 303
    )
    ok(
        biller.post(
            "/v1/test-helpers/processor-faults",
            json={"operation_type": "authorize", "mode": "transient", "count": 2},
        )
    )
    advance(biller, created["current_period_end"] - clock_now(biller) + 1)
    renewal = wait_until(
        lambda: (i := invoices(biller, created["id"])) and i[-1]["status"] == "paid" and i[-1], timeout=60
    )
    calls = db.execute(
        "SELECT succeeded FROM sandbox_processor_calls WHERE idempotency_key = %s",
        (f"{renewal['id']}:charge",),
    ).fetchall()
    assert [row[0] for row in calls].count(True) == 1
    operation = db.execute(
        "SELECT operation_id FROM subscription_invoices WHERE id = %s", (renewal["id"],)
    ).fetchone()[0]
    assert wait_for_operation(biller, operation, {"succeeded"})["attempts"] == 3
