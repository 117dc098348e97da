"""Monthly/yearly switches (spec 4.M rule 5, issue 16): refused as `immediate`, consented as
`next_cycle` through a checkout, applied by the renewal (real worker and scheduler): the new period
starts on the renewal date and ends on the new interval's calendar. Every date and amount below is
written by hand."""

from __future__ import annotations

from datetime import UTC, date, datetime

import httpx

from tests.billing.support import (
    advance,
    checkout_for,
    clock_now,
    customer,
    invoices,
    ok,
    price,
    subscribe,
    wait_until,
)
from tests.billing.test_changes import propose, read, read_change
from tests.checkout.support import SUCCESS_URL, card_form
from tests.harness import TLS
from tests.helpers import assert_error, count_rows
from tests.payment_methods.support import SUCCEEDS
from tests.payments.support import event_types

START = datetime(2027, 1, 31, 10, 0, 0, tzinfo=UTC)


def day_of(seconds: int) -> date:
    return datetime.fromtimestamp(seconds, UTC).date()


def at_ten(day: date) -> int:
    return int(datetime(day.year, day.month, day.day, 10, 0, 0, tzinfo=UTC).timestamp())


def calendar_of(subscription: dict):
    """Instants of the subscription's calendar: every boundary keeps the anchor's time of day (10:00 UTC
    and the few seconds the sandbox clock ran on before the subscription was created)."""
    seconds = subscription["current_period_start"] - at_ten(START.date())
    assert 0 <= seconds < 60
    return lambda day: at_ten(day) + seconds


def advance_to(api, moment: int) -> None:
    advance(api, moment - clock_now(api) + 1)


def subscribed_on_31_january(api, amount: int, interval: str) -> dict:
    advance_to(api, int(START.timestamp()))
    created = subscribe(api, price(api, amount, interval=interval)["id"], customer(api)["id"])
    paid = httpx.post(
        checkout_for(api, created["id"])["checkout_url"],
        data=card_form(SUCCEEDS, renew_consent="yes"),
        verify=TLS,
    )
    assert paid.status_code == 303 and paid.headers["location"] == SUCCESS_URL, paid.text
    return read(api, created["id"])


def consent_to(api, subscription: dict, change: dict, frequency: str) -> None:
    checkout = checkout_for(api, subscription["id"], change=change["id"])
    assert checkout["payment_intent"] is None  # nothing is charged now
    page = httpx.get(checkout["checkout_url"], verify=TLS)
    assert page.status_code == 200 and "Nothing is charged now" in page.text and frequency in page.text
    confirmed = httpx.post(checkout["checkout_url"], data={"renew_consent": "yes"}, verify=TLS)
    assert confirmed.status_code == 303, confirmed.text
    assert read_change(api, subscription["id"], change["id"])["status"] == "accepted"


def renewed(api, subscription_id: str, count: int) -> list[dict]:
    found: list[dict] = wait_until(
        lambda: (
            (rows := invoices(api, subscription_id))
            and len(rows) == count
            and rows[-1]["status"] == "paid"
            and rows
        ),
        timeout=60,
    )
    return found


def test_an_immediate_frequency_switch_is_refused_and_writes_nothing(biller, db):
    subscription = subscribed_on_31_january(biller, 990, "month")
    yearly = price(biller, 9900, interval="year")
    refused = propose(biller, subscription, price=yearly["id"])
    assert_error(refused, 400, "parameter_invalid", "effective")
    assert "next_cycle" in refused.json()["error"]["message"]
    quarterly = price(biller, 2900, interval="month", interval_count=3)
    assert_error(propose(biller, subscription, price=quarterly["id"]), 400, "parameter_invalid", "effective")
    assert count_rows(db, "subscription_changes", biller.keys.installation_id) == 0
    assert read(biller, subscription["id"])["terms_version"] == 1


def test_monthly_to_yearly_starts_a_year_on_the_renewal_date(biller, money_stack):
    subscription = subscribed_on_31_january(biller, 990, "month")
    at_ten = calendar_of(subscription)
    assert (day_of(subscription["current_period_start"]), day_of(subscription["current_period_end"])) == (
        date(2027, 1, 31),
        date(2027, 2, 28),
    )
    yearly = price(biller, 9900, interval="year")
    change = ok(propose(biller, subscription, price=yearly["id"], effective="next_cycle"))
    assert (change["current_amount"], change["amount"], change["amount_due"]) == (990, 9900, 0)
    consent_to(biller, subscription, change, "every year")
    # the month paid is kept as it was
    assert (read(biller, subscription["id"])["interval"], read(biller, subscription["id"])["amount"]) == (
        "month",
        990,
    )

    advance_to(biller, at_ten(date(2027, 2, 28)))
    rows = renewed(biller, subscription["id"], 2)
    after = read(biller, subscription["id"])
    assert (after["interval"], after["amount"], after["terms_version"], after["price"]) == (
        "year",
        9900,
        2,
        yearly["id"],
    )
    assert (after["current_period_start"], after["current_period_end"], after["access_until"]) == (
        at_ten(date(2027, 2, 28)),
        at_ten(date(2028, 2, 28)),
        at_ten(date(2028, 2, 28)),
    )
    assert read_change(biller, subscription["id"], change["id"])["status"] == "applied"
    assert event_types(biller, change["id"]) == [
        "subscription.change.accepted",
        "subscription.change.applied",
    ]

    # a year later the yearly calendar goes on from its own anchor (28 February)
    advance_to(biller, at_ten(date(2028, 2, 28)))
    rows = renewed(biller, subscription["id"], 3)
    assert [
        (r["billing_kind"], r["amount"], r["period_start"], r["period_end"], r["terms_version"]) for r in rows
    ] == [
        ("cycle", 990, at_ten(date(2027, 1, 31)), at_ten(date(2027, 2, 28)), 1),
        ("cycle", 9900, at_ten(date(2027, 2, 28)), at_ten(date(2028, 2, 28)), 2),
        ("cycle", 9900, at_ten(date(2028, 2, 28)), at_ten(date(2029, 2, 28)), 2),
    ]
    assert [
        ok(biller.get(f"/v1/payment-intents/{r['payment_intent']}"))["amount_received"] for r in rows
    ] == [
        990,
        9900,
        9900,
    ]


def test_yearly_to_monthly_starts_a_month_on_the_renewal_date(biller, money_stack):
    subscription = subscribed_on_31_january(biller, 12000, "year")
    at_ten = calendar_of(subscription)
    assert day_of(subscription["current_period_end"]) == date(2028, 1, 31)
    monthly = price(biller, 1100, interval="month")
    change = ok(propose(biller, subscription, price=monthly["id"], effective="next_cycle"))
    assert (change["current_amount"], change["amount"], change["amount_due"]) == (12000, 1100, 0)
    consent_to(biller, subscription, change, "every month")

    advance_to(biller, at_ten(date(2028, 1, 31)))
    renewed(biller, subscription["id"], 2)
    after = read(biller, subscription["id"])
    assert (after["interval"], after["amount"], after["terms_version"]) == ("month", 1100, 2)
    # 2028 is a leap year: 31 January, then 29 February, then 31 March (the anchor day kept)
    assert (after["current_period_start"], after["current_period_end"]) == (
        at_ten(date(2028, 1, 31)),
        at_ten(date(2028, 2, 29)),
    )
    advance_to(biller, at_ten(date(2028, 2, 29)))
    rows = renewed(biller, subscription["id"], 3)
    assert [(r["amount"], r["period_start"], r["period_end"], r["terms_version"]) for r in rows] == [
        (12000, at_ten(date(2027, 1, 31)), at_ten(date(2028, 1, 31)), 1),
        (1100, at_ten(date(2028, 1, 31)), at_ten(date(2028, 2, 29)), 2),
        (1100, at_ten(date(2028, 2, 29)), at_ten(date(2028, 3, 31)), 2),
    ]
    assert read(biller, subscription["id"])["access_until"] == at_ten(date(2028, 3, 31))
