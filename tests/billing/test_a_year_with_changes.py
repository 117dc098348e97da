"""Done when (issue 16): a platform subscription through a year of sandbox time with an immediate upgrade
(hand-computed proration), a next-cycle downgrade, a quantity change and a distribution change mid-year;
each invoice's snapshot, transfers and settlement_status against a table written by hand; over HTTP with
real worker and scheduler processes; `ledger verify` passes (the module's stack checks it at the end)."""

from __future__ import annotations

from datetime import UTC, date, datetime

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
from tests.checkout.support import SUCCESS_URL, card_form
from tests.connect.support import create_account
from tests.harness import TLS
from tests.payment_methods.support import SUCCEEDS

START = datetime(2027, 1, 31, 10, 0, 0, tzinfo=UTC)
UPGRADE_AT = datetime(2027, 2, 14, 10, 0, 0, tzinfo=UTC)  # 14 of the period's 28 days remain
DISTRIBUTION_AT = datetime(2027, 3, 15, 10, 0, 0, tzinfo=UTC)
DOWNGRADE_AT = datetime(2027, 4, 10, 10, 0, 0, tzinfo=UTC)
QUANTITY_AT = datetime(2027, 5, 10, 10, 0, 0, tzinfo=UTC)

# Written by hand. Prices per seat: basic 10.00, pro 20.00 EUR; 3 seats, then 5 from 31 May.
# The upgrade on 14 February: (6000 - 3000) x 14 days / 28 days = 1500, charged at once.
# Shares: version 1 is 80% merchant / 20% courier; version 2 (from 15 March) is 60% / 40%.
YEAR = [
    # kind,   period start,       period end,          amount, terms, dist, merchant, courier
    ("cycle", date(2027, 1, 31), date(2027, 2, 28), 3000, 1, 1, 2400, 600),  # basic x 3, the checkout
    ("upgrade", date(2027, 2, 14), date(2027, 2, 28), 1500, 2, 1, 1200, 300),  # pro x 3, prorated
    ("cycle", date(2027, 2, 28), date(2027, 3, 31), 6000, 2, 1, 4800, 1200),  # opened before 15 March
    ("cycle", date(2027, 3, 31), date(2027, 4, 30), 6000, 2, 2, 3600, 2400),
    ("cycle", date(2027, 4, 30), date(2027, 5, 31), 3000, 3, 2, 1800, 1200),  # basic x 3 (next_cycle)
    ("cycle", date(2027, 5, 31), date(2027, 6, 30), 5000, 4, 2, 3000, 2000),  # basic x 5 (next_cycle)
    ("cycle", date(2027, 6, 30), date(2027, 7, 31), 5000, 4, 2, 3000, 2000),
    ("cycle", date(2027, 7, 31), date(2027, 8, 31), 5000, 4, 2, 3000, 2000),
    ("cycle", date(2027, 8, 31), date(2027, 9, 30), 5000, 4, 2, 3000, 2000),
    ("cycle", date(2027, 9, 30), date(2027, 10, 31), 5000, 4, 2, 3000, 2000),
    ("cycle", date(2027, 10, 31), date(2027, 11, 30), 5000, 4, 2, 3000, 2000),
    ("cycle", date(2027, 11, 30), date(2027, 12, 31), 5000, 4, 2, 3000, 2000),
    ("cycle", date(2027, 12, 31), date(2028, 1, 31), 5000, 4, 2, 3000, 2000),
]


@pytest.fixture
def marketplace(make_api, bridge):
    platform = make_api(kind="platform")
    enable_billing(bridge, platform.keys)
    return platform


def day_of(seconds: int) -> date:
    return datetime.fromtimestamp(seconds, UTC).date()


def advance_to(api, moment: datetime | int) -> None:
    target = int(moment.timestamp()) if isinstance(moment, datetime) else moment
    advance(api, target - clock_now(api) + 1)


def shares(merchant: str, courier: str, merchant_bp: int, courier_bp: int) -> dict:
    return {
        "merchant_of_record": merchant,
        "allocations": [
            {"recipient": merchant, "role": "merchant", "basis_points": merchant_bp},
            {"recipient": courier, "role": "courier", "basis_points": courier_bp},
        ],
    }


def consent(api, subscription_id: str, change_id: str, form: dict) -> None:
    checkout = checkout_for(api, subscription_id, change=change_id)
    answered = httpx.post(checkout["checkout_url"], data=form, verify=TLS)
    assert answered.status_code == 303 and answered.headers["location"] == SUCCESS_URL, answered.text


def test_a_platform_year_with_an_upgrade_a_downgrade_a_quantity_and_a_distribution_change(
    marketplace, money_stack
):
    api = marketplace
    bakery = create_account(api, "merchant", display_name="Bakery Ltd")
    courier = create_account(api, "courier")
    basic, pro = price(api, 1000), price(api, 2000)
    advance_to(api, START)
    created = subscribe(
        api,
        basic["id"],
        customer(api)["id"],
        quantity=3,
        distribution=shares(bakery["id"], courier["id"], 8000, 2000),
    )
    sid = created["id"]

    def read() -> dict:
        return ok(api.get(f"/v1/subscriptions/{sid}"))

    def renew(count: int) -> None:
        advance_to(api, read()["current_period_end"])
        wait_until(
            lambda: (found := invoices(api, sid)) and len(found) == count and found[-1]["status"] == "paid",
            timeout=60,
        )

    def propose(**fields) -> dict:
        return ok(
            post(
                api,
                f"/v1/subscriptions/{sid}/changes",
                {"expected_version": read()["terms_version"]} | fields,
            )
        )

    # 31 January: the subscription checkout
    consent_to_pay = card_form(SUCCEEDS, renew_consent="yes")
    checkout = checkout_for(api, sid)
    assert httpx.post(checkout["checkout_url"], data=consent_to_pay, verify=TLS).status_code == 303

    # 14 February: pro, at once; the payer pays the hand-computed difference
    advance_to(api, UPGRADE_AT)
    upgrade = propose(price=pro["id"], effective="immediate")
    assert (upgrade["amount"], upgrade["amount_due"]) == (6000, 1500)
    consent(api, sid, upgrade["id"], consent_to_pay)
    assert (read()["amount"], read()["terms_version"]) == (6000, 2)

    renew(3)  # 28 February, pro x 3, distribution version 1

    # 15 March: new shares, for invoices opened from now on (the March cycle keeps version 1)
    advance_to(api, DISTRIBUTION_AT)
    versioned = ok(
        post(
            api,
            f"/v1/subscriptions/{sid}/distribution",
            {"distribution": shares(bakery["id"], courier["id"], 6000, 4000), "expected_version": 1},
        )
    )
    assert versioned["distribution_version"] == 2

    renew(4)  # 31 March, pro x 3, version 2

    # 10 April: back to basic at the renewal; the page confirms the change, nothing is charged
    advance_to(api, DOWNGRADE_AT)
    downgrade = propose(price=basic["id"], effective="next_cycle")
    assert (downgrade["amount"], downgrade["amount_due"]) == (3000, 0)
    consent(api, sid, downgrade["id"], {"renew_consent": "yes"})
    assert read()["amount"] == 6000  # current terms kept until the renewal

    renew(5)  # 30 April, basic x 3
    assert read()["terms_version"] == 3

    # 10 May: 5 seats from the next renewal
    advance_to(api, QUANTITY_AT)
    seats = propose(quantity=5, effective="next_cycle")
    assert (seats["amount"], seats["amount_due"]) == (5000, 0)
    consent(api, sid, seats["id"], {"renew_consent": "yes"})

    for count in range(6, 14):  # 31 May to 31 December
        renew(count)
    assert (read()["quantity"], read()["terms_version"], read()["distribution_version"]) == (5, 4, 2)

    # the table: every invoice settled by its own snapshot
    found = wait_until(
        lambda: (i := invoices(api, sid)) and all(x["settlement_status"] == "settled" for x in i) and i,
        timeout=90,
    )
    rows = []
    for invoice in found:
        group = ok(api.get(f"/v1/allocation-groups/{invoice['allocation_group']}"))
        sent = {t["destination"]: t["amount"] for t in group["transfers"]}
        fees = ok(api.get(f"/v1/payment-intents/{invoice['payment_intent']}"))["fees"]
        # the merchant's share also carries what capture withheld: the commission reserve (none here)
        # and earlier processor costs recovered (CONVENTIONS.md §7)
        withheld = (fees["reserve"] or 0) + fees["prior_recovery"]
        rows.append(
            (
                invoice["billing_kind"],
                day_of(invoice["period_start"]),
                day_of(invoice["period_end"]),
                invoice["amount"],
                invoice["terms_version"],
                invoice["distribution_version"],
                sent[bakery["id"]] + withheld,
                sent[courier["id"]],
            )
        )
    assert rows == YEAR
    assert [
        ok(api.get(f"/v1/subscriptions/{sid}/changes/{c['id']}"))["status"]
        for c in (upgrade, downgrade, seats)
    ] == ["applied", "applied", "applied"]
