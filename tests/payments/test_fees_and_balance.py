"""Fees (CONVENTIONS.md §7) as worked examples: the reserve, the processor's late cost report, the
shortfall carried as `outstanding` and recovered from the next payment, and the balance they leave.

The sandbox network reports a payment's cost 3 sandbox days after capture: 2.9% + 30 minor units,
so a 100.00 EUR payment costs 3.20 EUR.
"""

from __future__ import annotations

import pytest

from tests.helpers import assert_error
from tests.payments.support import (
    COST_OF_10000,
    DAY,
    balance_of,
    confirm,
    create_payment,
    event_types,
    ledger_balance,
    paid,
    set_commission,
    wait_for,
)
from tests.stacks import start_scheduler

pytestmark = pytest.mark.usefixtures("ledger_verified_afterwards")


def advance(api, seconds: int) -> dict:
    response = api.post("/v1/test-helpers/clock/advance", json={"seconds": seconds})
    assert response.status_code == 200, response.text
    return response.json()


def fees_of(api, payment_id: str) -> dict:
    return api.get(f"/v1/payment-intents/{payment_id}").json()["fees"]


def test_a_shortfall_is_outstanding_and_the_next_payment_recovers_it(api, bridge, db):
    set_commission(bridge, api.keys, basis_points=100, fixed_amount=50)  # 1% + 0.50
    first = paid(api, 10_000)
    assert first["fees"] == {
        "status": "pending",
        "reserve": 150,
        "commission": None,  # missing cost data is not zero commission
        "collected": None,
        "prior_recovery": 0,
        "outstanding": None,
    }
    assert balance_of(api, "pending") == 9_850 and balance_of(api, "available") == 0

    assert advance(api, 2 * DAY)["work_done"]["payments.cost_reports"] == 0
    assert fees_of(api, first["id"])["status"] == "pending"

    assert advance(api, DAY + 1)["work_done"]["payments.cost_reports"] == 1
    assert fees_of(api, first["id"]) == {
        "status": "final",
        "reserve": 150,
        "commission": COST_OF_10000,  # the cost is above the reserve: the service takes the cost
        "collected": 150,
        "prior_recovery": 0,
        "outstanding": COST_OF_10000 - 150,
    }
    assert "payment_intent.fees_finalized" in event_types(api, first["id"])
    balance = api.get("/v1/balance").json()
    assert balance["available"] == [{"amount": 9_850, "currency": "eur"}]
    assert balance["pending"] == [{"amount": 0, "currency": "eur"}]
    assert balance["fees_outstanding"] == [{"amount": 170, "currency": "eur"}]

    quote = api.post("/v1/payment-quotes", json={"amount": 10_000, "currency": "eur"}).json()
    assert quote["fees"]["commission_reserve"] == 150 and quote["fees"]["prior_recovery"] == 170
    assert quote["fees"]["amount_fixed"] is True
    assert {item["role"]: item["amount"] for item in quote["funds_flow"]} == {
        "proceeds": 9_680,
        "commission_reserve": 150,
        "prior_recovery": 170,
    }

    second = paid(api, 10_000)
    assert second["fees"]["prior_recovery"] == 170
    assert balance_of(api, "pending") == 10_000 - 150 - 170
    assert api.get("/v1/balance").json()["fees_outstanding"] == []
    installation = api.keys.installation_id
    assert ledger_balance(db, installation, "fees:owed") == 0
    assert ledger_balance(db, installation, "service:commission") == 0  # commission K minus the cost paid
    # every unit accounted for: what the cards paid equals what the installation, the service and the
    # processor hold
    assert -ledger_balance(db, installation, "world:card_network") == 20_000
    held = sum(
        ledger_balance(db, installation, code)
        for code in (
            "balance:pending",
            "balance:available",
            "service:reserve",
            "service:commission",
            "fees:owed",
        )
    )
    assert held + ledger_balance(db, installation, "world:processor_costs") == 20_000


def test_a_reserve_above_the_cost_is_the_commission_and_nothing_is_outstanding(api, bridge):
    set_commission(bridge, api.keys, basis_points=500, fixed_amount=0)  # 5%
    payment = paid(api, 10_000)
    advance(api, 3 * DAY + 1)
    assert fees_of(api, payment["id"]) == {
        "status": "final",
        "reserve": 500,
        "commission": 500,
        "collected": 500,
        "prior_recovery": 0,
        "outstanding": 0,
    }
    assert balance_of(api, "available") == 9_500


def test_without_a_commission_policy_the_cost_is_still_borne_and_carried(api):
    payment = paid(api, 10_000)
    assert payment["fees"]["reserve"] is None
    assert balance_of(api, "pending") == 10_000
    advance(api, 3 * DAY + 1)
    assert fees_of(api, payment["id"]) == {
        "status": "final",
        "reserve": None,
        "commission": COST_OF_10000,
        "collected": 0,
        "prior_recovery": 0,
        "outstanding": COST_OF_10000,
    }


def test_a_payment_with_a_fee_reserve_has_a_fixed_amount(api, bridge, db):
    set_commission(bridge, api.keys, basis_points=100, fixed_amount=0)
    payment = create_payment(api, 5_000, capture_method="manual")
    assert payment["fees"]["reserve"] == 50
    refused = api.post(f"/v1/payment-intents/{payment['id']}/update", json={"amount": 6_000})
    assert_error(refused, 400, "fee_amount_immutable", "amount")
    confirm(api, payment)
    increment = api.post(
        f"/v1/payment-intents/{payment['id']}/increment-authorization", json={"amount": 6_000}
    )
    assert_error(increment, 400, "fee_amount_immutable", "amount")
    partial = api.post(f"/v1/payment-intents/{payment['id']}/capture", json={"amount_to_capture": 4_000})
    assert_error(partial, 400, "fee_amount_immutable", "amount_to_capture")
    after = api.get(f"/v1/payment-intents/{payment['id']}").json()
    assert (after["amount"], after["amount_capturable"], after["status"]) == (
        5_000,
        5_000,
        "requires_capture",
    )
    assert ledger_balance(db, api.keys.installation_id, "balance:pending") == 0
    full = api.post(f"/v1/payment-intents/{payment['id']}/capture")
    assert full.status_code == 200 and full.json()["amount_received"] == 5_000


def test_an_amount_that_does_not_cover_its_commission_is_refused(api, bridge, db):
    set_commission(bridge, api.keys, basis_points=0, fixed_amount=500)
    assert_error(
        api.post("/v1/payment-intents", json={"amount": 500, "currency": "eur"}),
        400,
        "amount_invalid",
        "amount",
    )
    assert_error(
        api.post("/v1/payment-quotes", json={"amount": 400, "currency": "eur"}),
        400,
        "amount_invalid",
        "amount",
    )


def test_a_quote_shows_what_the_next_payment_would_recover(api):
    paid(api, 4_000)
    advance(api, 3 * DAY + 1)
    assert balance_of(api, "available") == 4_000
    cost_of_4000 = 116 + 30  # 2.9% of 40.00, rounded up, + 0.30
    quote = api.post("/v1/payment-quotes", json={"amount": 1_000, "currency": "eur"}).json()
    assert quote["object"] == "payment_quote"
    assert quote["fees"]["amount_fixed"] is False and quote["fees"]["commission_reserve"] == 0
    assert quote["fees"]["prior_recovery"] == cost_of_4000
    assert {item["role"]: item["amount"] for item in quote["funds_flow"]} == {
        "proceeds": 1_000 - cost_of_4000,
        "prior_recovery": cost_of_4000,
    }
    # a quote creates nothing
    assert len(api.get("/v1/payment-intents").json()["data"]) == 1


def test_the_balance_is_per_currency_and_per_installation(api, make_api):
    paid(api, 1_000)
    assert confirm(api, create_payment(api, 700, currency="usd")).status_code == 200
    balance = api.get("/v1/balance").json()
    assert balance["pending"] == [{"amount": 1_000, "currency": "eur"}, {"amount": 700, "currency": "usd"}]
    other = make_api()
    assert other.get("/v1/balance").json() == {
        "object": "balance",
        "livemode": False,
        "available": [],
        "pending": [],
        "fees_outstanding": [],
    }


def test_the_scheduler_collects_due_cost_reports_on_each_tenants_own_clock(api, servers, db):
    payment = paid(api, 10_000)
    # the sandbox clock moves without an advance request (so no due work runs with it): only the
    # scheduler's own sweep can notice that the report fell due
    db.execute(
        "INSERT INTO sandbox_clocks (installation_id, offset_seconds) VALUES (%s, %s)"
        " ON CONFLICT (installation_id) DO UPDATE SET offset_seconds = EXCLUDED.offset_seconds",
        (api.keys.installation_id, 3 * DAY + 60),
    )
    scheduler = start_scheduler(
        servers, name="scheduler-cost-reports", MONEYRAIL_COST_REPORT_SWEEP_SECONDS="0.5"
    )
    try:
        wait_for(lambda: fees_of(api, payment["id"])["status"] == "final", timeout=30)
    finally:
        scheduler.stop()
    assert fees_of(api, payment["id"])["commission"] == COST_OF_10000
