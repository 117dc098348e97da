"""Distribution versions of a platform subscription (issue 16.2): a new version applies to invoices
opened later, never to a cycle already begun; each paid cycle is distributed by its own snapshot; the
refusals (stale version, basis points, foreign recipients, another seller, missing scopes) write nothing."""

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
from tests.helpers import assert_error
from tests.payment_methods.support import SUCCEEDS
from tests.transfers.support import FINAL


@pytest.fixture
def marketplace(make_api, bridge):
    platform = make_api(kind="platform")
    enable_billing(bridge, platform.keys)
    return platform


def shares(merchant: str, courier: str, merchant_bp: int, courier_bp: int) -> dict:
    return {
        "merchant_of_record": merchant,
        "allocations": [
            {"recipient": merchant, "role": "merchant", "basis_points": merchant_bp},
            {"recipient": courier, "role": "courier", "basis_points": courier_bp},
        ],
    }


def paid_out(api, invoice: dict) -> dict[str, int]:
    """The transfers of a paid invoice's allocation group, once its commit finished."""
    settled = wait_until(
        lambda: (
            (found := next(i for i in invoices(api, invoice["subscription"]) if i["id"] == invoice["id"]))
            and found["settlement_status"] in ("settled", "failed")
            and found
        )
    )
    assert settled["settlement_status"] == "settled"
    group = ok(api.get(f"/v1/allocation-groups/{settled['allocation_group']}"))
    wait_for_operation(api, group["operation"], FINAL)
    return {t["destination"]: t["amount"] for t in group["transfers"]}


def version(api, subscription: dict, distribution: dict, expected: int) -> httpx.Response:
    return post(
        api,
        f"/v1/subscriptions/{subscription['id']}/distribution",
        {"distribution": distribution, "expected_version": expected},
    )


def test_a_new_distribution_version_applies_to_later_cycles_only(marketplace, money_stack):
    bakery = create_account(marketplace, "merchant", display_name="Bakery Ltd")
    courier = create_account(marketplace, "courier")
    created = subscribe(
        marketplace,
        price(marketplace, 2000)["id"],
        customer(marketplace)["id"],
        distribution=shares(bakery["id"], courier["id"], 8000, 2000),
    )
    checkout = checkout_for(marketplace, created["id"])
    assert (
        httpx.post(
            checkout["checkout_url"], data=card_form(SUCCEEDS, renew_consent="yes"), verify=TLS
        ).status_code
        == 303
    )
    (first,) = invoices(marketplace, created["id"])

    versioned = ok(version(marketplace, created, shares(bakery["id"], courier["id"], 6000, 4000), 1))
    assert versioned["distribution_version"] == 2
    assert versioned["distribution"]["allocations"][1]["basis_points"] == 4000
    # the cycle already begun keeps its snapshot: 80/20 of 2000
    assert first["distribution_version"] == 1
    assert paid_out(marketplace, first) == {bakery["id"]: 1600, courier["id"]: 400}

    advance(marketplace, created["current_period_end"] - clock_now(marketplace) + 1)
    second = wait_until(
        lambda: (
            (i := invoices(marketplace, created["id"]))
            and len(i) == 2
            and i[-1]["status"] == "paid"
            and i[-1]
        )
    )
    assert second["distribution_version"] == 2
    # 60/40 of 2000; the merchant's share also repays the processor's reported cost of the first
    # payment (CONVENTIONS.md §7: prior_recovery is taken from the merchant allocations)
    recovered = ok(marketplace.get(f"/v1/payment-intents/{second['payment_intent']}"))["fees"][
        "prior_recovery"
    ]
    assert paid_out(marketplace, second) == {bakery["id"]: 1200 - recovered, courier["id"]: 800}
    assert invoices(marketplace, created["id"])[0]["distribution_version"] == 1  # never rewritten


def test_bad_distribution_versions_are_refused_and_write_nothing(marketplace, make_api):
    bakery = create_account(marketplace, "merchant")
    courier = create_account(marketplace, "courier")
    other_merchant = create_account(marketplace, "merchant")
    stranger = create_account(make_api(kind="platform"), "courier")
    created = subscribe(
        marketplace,
        price(marketplace, 2000)["id"],
        customer(marketplace)["id"],
        distribution=shares(bakery["id"], courier["id"], 8000, 2000),
    )
    assert_error(
        version(marketplace, created, shares(bakery["id"], courier["id"], 6000, 4000), 2),
        409,
        "subscription_version_conflict",
        "expected_version",
    )
    assert_error(
        version(marketplace, created, shares(bakery["id"], courier["id"], 6000, 3000), 1),
        400,
        "distribution_invalid",
        "distribution.allocations",
    )
    foreign = version(marketplace, created, shares(bakery["id"], stranger["id"], 6000, 4000), 1)
    assert foreign.status_code == 400 and foreign.json()["error"]["code"] == "distribution_invalid"
    assert_error(
        version(marketplace, created, shares(other_merchant["id"], courier["id"], 6000, 4000), 1),
        400,
        "distribution_invalid",
        "distribution.merchant_of_record",
    )
    after = ok(marketplace.get(f"/v1/subscriptions/{created['id']}"))
    assert after["distribution_version"] == 1
    assert after["distribution"] == created["distribution"]


def test_versioning_a_distribution_needs_the_payment_and_transfer_scopes(marketplace, bridge, web):
    from tests.harness import add_key

    bakery = create_account(marketplace, "merchant")
    courier = create_account(marketplace, "courier")
    created = subscribe(
        marketplace,
        price(marketplace, 2000)["id"],
        customer(marketplace)["id"],
        distribution=shares(bakery["id"], courier["id"], 8000, 2000),
    )
    secret = add_key(bridge, marketplace.keys.tenant, ("billing:write",))
    with httpx.Client(
        base_url=web.base_url, headers={"Authorization": f"Bearer {secret}"}, verify=TLS
    ) as narrow:
        refused = version(narrow, created, shares(bakery["id"], courier["id"], 5000, 5000), 1)
        assert_error(refused, 403, "insufficient_scope")
    assert ok(marketplace.get(f"/v1/subscriptions/{created['id']}"))["distribution_version"] == 1


def test_a_refunded_cycle_takes_back_its_transfers_itself_and_no_manual_reversal_runs_beside_it(
    marketplace, money_stack
):
    """Issue 16.3: the refund's own operation reverses what the recipients received before the payer is
    refunded; while it is in progress a manual reversal of the same transfers is refused."""
    bakery = create_account(marketplace, "merchant")
    courier = create_account(marketplace, "courier")
    created = subscribe(
        marketplace,
        price(marketplace, 2000)["id"],
        customer(marketplace)["id"],
        distribution=shares(bakery["id"], courier["id"], 8000, 2000),
    )
    checkout = checkout_for(marketplace, created["id"])
    assert (
        httpx.post(
            checkout["checkout_url"], data=card_form(SUCCEEDS, renew_consent="yes"), verify=TLS
        ).status_code
        == 303
    )
    (first,) = invoices(marketplace, created["id"])
    assert paid_out(marketplace, first) == {bakery["id"]: 1600, courier["id"]: 400}
    transfers = ok(
        marketplace.get("/v1/transfers", params={"source_transaction": first["payment_intent"], "limit": 10})
    )["data"]

    # the processor fails the refund twice: the refund stays in progress while its operation retries
    ok(
        marketplace.post(
            "/v1/test-helpers/processor-faults",
            json={"operation_type": "refund", "mode": "transient", "count": 2},
        )
    )
    refund = ok(marketplace.post("/v1/refunds", json={"payment_intent": first["payment_intent"]}))
    assert refund["status"] == "pending"
    assert_error(
        marketplace.post(f"/v1/transfers/{transfers[0]['id']}/reversals", json={}),
        409,
        "resource_state_invalid",
    )
    done = wait_until(
        lambda: (r := ok(marketplace.get(f"/v1/refunds/{refund['id']}")))["status"] != "pending" and r,
        timeout=60,
    )
    assert done["status"] == "succeeded"
    after = {
        t["destination"]: (t["amount_reversed"], t["status"])
        for t in ok(
            marketplace.get(
                "/v1/transfers", params={"source_transaction": first["payment_intent"], "limit": 10}
            )
        )["data"]
    }
    assert after == {bakery["id"]: (1600, "reversed"), courier["id"]: (400, "reversed")}


def test_a_failed_cycle_distribution_is_retried_as_its_own_operation_only(
    marketplace, db, servers, money_stack
):
    """Spec 4.M rule 6: the invoice shows its distribution still under way while the commit waits in
    `dead_letter`; the operator's retry of the dead-lettered commit settles it with the same payment, the
    same allocation group and the same transfers."""
    from tests.installations.test_cli import moneyrail

    bakery = create_account(marketplace, "merchant")
    courier = create_account(marketplace, "courier")
    created = subscribe(
        marketplace,
        price(marketplace, 2000)["id"],
        customer(marketplace)["id"],
        distribution=shares(bakery["id"], courier["id"], 8000, 2000),
    )
    ok(
        marketplace.post(
            "/v1/test-helpers/processor-faults",
            json={"operation_type": "transfer", "mode": "permanent", "count": 1},
        )
    )
    checkout = checkout_for(marketplace, created["id"])
    assert (
        httpx.post(
            checkout["checkout_url"], data=card_form(SUCCEEDS, renew_consent="yes"), verify=TLS
        ).status_code
        == 303
    )
    failed = wait_until(lambda: (i := invoices(marketplace, created["id"])[0])["allocation_group"] and i)
    group = ok(marketplace.get(f"/v1/allocation-groups/{failed['allocation_group']}"))
    assert wait_for_operation(marketplace, group["operation"], FINAL)["status"] == "dead_letter"
    # final means final: dead-lettered, the distribution is still under way, waiting for an operator
    group = ok(marketplace.get(f"/v1/allocation-groups/{group['id']}"))
    assert (group["status"], group["last_operation_error"]["code"]) == ("committing", "processor_error")
    assert invoices(marketplace, created["id"])[0]["settlement_status"] == "distributing"
    transfer_ids = sorted(t["id"] for t in group["transfers"])
    payments_before = db.execute(
        "SELECT count(*) FROM payment_intents WHERE installation_id = %s", (marketplace.keys.installation_id,)
    ).fetchone()[0]

    retried = moneyrail(servers, "dead-letters", "retry", group["operation"], "--operator", "ops@example.com")
    assert retried.returncode == 0, retried.stderr
    wait_for_operation(marketplace, group["operation"], FINAL)
    settled = wait_until(
        lambda: (i := invoices(marketplace, created["id"])[0])["settlement_status"] == "settled" and i
    )
    assert (
        settled["allocation_group"] == group["id"] and settled["payment_intent"] == failed["payment_intent"]
    )
    after = ok(marketplace.get(f"/v1/allocation-groups/{group['id']}"))
    assert sorted(t["id"] for t in after["transfers"]) == transfer_ids  # no new transfers
    assert {t["destination"]: (t["amount"], t["status"]) for t in after["transfers"]} == {
        bakery["id"]: (1600, "paid"),
        courier["id"]: (400, "paid"),
    }
    payments_after = db.execute(
        "SELECT count(*) FROM payment_intents WHERE installation_id = %s", (marketplace.keys.installation_id,)
    ).fetchone()[0]
    assert payments_after == payments_before  # no new payment
