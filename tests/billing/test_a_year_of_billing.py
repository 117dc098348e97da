"""Done when: one subscription from 31 January through a year of sandbox time, over HTTP with real
worker and scheduler processes, every date and amount checked against a table written by hand."""

from __future__ import annotations

from datetime import UTC, date, datetime

import httpx

from tests.billing.support import (
    DAY,
    advance,
    checkout_for,
    clock_now,
    customer,
    invoices,
    ok,
    post,
    price,
    subscribe,
    wait_until,
)
from tests.checkout.support import SUCCESS_URL, card_form
from tests.harness import TLS
from tests.payment_methods.support import CHARGES_DECLINED, SUCCEEDS, save_card
from tests.payments.support import event_types

START = datetime(2027, 1, 31, 10, 0, 0, tzinfo=UTC)
UNIT_AMOUNT, QUANTITY, CYCLE_AMOUNT = 990, 3, 2970  # 3 x 9.90 EUR

# Written by hand: every cycle of the year, its period and how its collection ended.
# The anchor (31 January) is kept: 28 February, then 31 March, 30 April, 31 May...
YEAR = [
    # cycle, period start,        period end,          amount,       how it ended
    (0, date(2027, 1, 31), date(2027, 2, 28), CYCLE_AMOUNT, "paid"),  # the subscription checkout
    (1, date(2027, 2, 28), date(2027, 3, 31), CYCLE_AMOUNT, "paid"),
    (2, date(2027, 3, 31), date(2027, 4, 30), CYCLE_AMOUNT, "paid"),
    (3, date(2027, 4, 30), date(2027, 5, 31), CYCLE_AMOUNT, "paid"),  # declined, then recovered 2 May
    (4, date(2027, 5, 31), date(2027, 6, 30), CYCLE_AMOUNT, "paid"),
    (5, date(2027, 6, 30), date(2027, 7, 31), CYCLE_AMOUNT, "paid"),  # cancel at period end, then resume
    (6, date(2027, 7, 31), date(2027, 8, 31), CYCLE_AMOUNT, "paid"),
    (7, date(2027, 8, 31), date(2027, 9, 30), CYCLE_AMOUNT, "paid"),
    (8, date(2027, 9, 30), date(2027, 10, 31), CYCLE_AMOUNT, "paid"),
    (9, date(2027, 10, 31), date(2027, 11, 30), CYCLE_AMOUNT, "paid"),
    (10, date(2027, 11, 30), date(2027, 12, 31), CYCLE_AMOUNT, "paid"),
    (11, date(2027, 12, 31), date(2028, 1, 31), CYCLE_AMOUNT, "paid"),  # then canceled at its end
]


def day_of(seconds: int) -> date:
    return datetime.fromtimestamp(seconds, UTC).date()


def time_of(seconds: int) -> tuple[int, int, int]:
    moment = datetime.fromtimestamp(seconds, UTC)
    return (moment.hour, moment.minute, moment.second)


def advance_to(api, moment: datetime | int) -> None:
    target = int(moment.timestamp()) if isinstance(moment, datetime) else moment
    advance(api, target - clock_now(api) + 1)


def settled_renewal(api, subscription_id: str, count: int) -> dict:
    return wait_until(
        lambda: (
            (found := invoices(api, subscription_id))
            and len(found) == count
            and found[-1]["status"] != "open"
            and found[-1]
        ),
        timeout=60,
    )


def test_a_subscription_from_31_january_through_a_year_matches_the_hand_written_table(
    biller, db, money_stack
):
    advance_to(biller, START)
    plan = price(biller, UNIT_AMOUNT)
    buyer = customer(biller)["id"]
    subscription = subscribe(biller, plan["id"], buyer, quantity=QUANTITY)
    sid = subscription["id"]
    anchor_time = time_of(subscription["current_period_start"])
    assert day_of(subscription["current_period_start"]) == date(2027, 1, 31) and anchor_time[:2] == (10, 0)
    assert (subscription["status"], subscription["amount"]) == ("incomplete", CYCLE_AMOUNT)

    # 31 January: the subscription checkout, with consent
    checkout = checkout_for(biller, sid)
    paid = httpx.post(checkout["checkout_url"], data=card_form(SUCCEEDS, renew_consent="yes"), verify=TLS)
    assert paid.status_code == 303 and paid.headers["location"] == SUCCESS_URL

    def read() -> dict:
        return ok(biller.get(f"/v1/subscriptions/{sid}"))

    # February, March, April: renewals on the anchor's calendar
    for count in (2, 3):
        settled_renewal_after_period_end(biller, read(), count)

    # before 30 April the customer's preferred card becomes one whose later charges are declined
    declining = save_card(biller, buyer, CHARGES_DECLINED)
    ok(biller.post(f"/v1/customers/{buyer}/payment-methods/{declining['id']}/default"))
    failed = settled_renewal_after_period_end(biller, read(), 4, expected="failed")
    assert failed["failure_code"] == "generic_decline"
    past_due = read()
    assert (past_due["status"], past_due["entitled"]) == ("past_due", False)
    assert day_of(past_due["access_until"]) == date(2027, 4, 30)
    assert "subscription.invoice.failed" in event_types(biller, failed["id"])

    # 2 May: the customer recovers through a checkout for that invoice, on the same payment
    advance(biller, 2 * DAY)
    assert invoices(biller, sid)[-1]["status"] == "failed"  # no background retry
    recovery = checkout_for(biller, sid, invoice=failed["id"])
    assert recovery["payment_intent"] == failed["payment_intent"]
    paid = httpx.post(recovery["checkout_url"], data=card_form(SUCCEEDS, renew_consent="yes"), verify=TLS)
    assert paid.status_code == 303
    recovered = read()
    assert (recovered["status"], recovered["entitled"]) == ("active", True)
    assert day_of(recovered["access_until"]) == date(2027, 5, 31)

    # 31 May, 30 June
    for count in (5, 6):
        settled_renewal_after_period_end(biller, read(), count)

    # 10 July: cancel at period end; 20 July: resume
    advance(biller, 10 * DAY)
    scheduled = ok(post(biller, f"/v1/subscriptions/{sid}/cancel", {"at_period_end": True}))
    assert (scheduled["status"], scheduled["cancel_at_period_end"]) == ("active", True)
    advance(biller, 10 * DAY)
    resumed = ok(post(biller, f"/v1/subscriptions/{sid}/resume"))
    assert resumed["cancel_at_period_end"] is False

    # 31 July to 31 December: the renewals go on
    for count in range(7, 13):
        settled_renewal_after_period_end(biller, read(), count)

    # 5 January 2028: the final cancellation, at the end of the paid period
    advance(biller, 5 * DAY)
    ok(post(biller, f"/v1/subscriptions/{sid}/cancel", {"at_period_end": True}))
    last = read()
    advance_to(biller, last["current_period_end"])
    ended = read()
    assert (ended["status"], ended["entitled"], ended["cancel_at_period_end"]) == ("canceled", False, False)
    assert day_of(ended["canceled_at"]) == date(2028, 1, 31)
    assert day_of(ended["access_until"]) == date(2028, 1, 31)

    # the table
    found = invoices(biller, sid)
    assert [
        (i["billing_kind"], day_of(i["period_start"]), day_of(i["period_end"]), i["amount"], i["status"])
        for i in found
    ] == [("cycle", start, end, amount, status) for _, start, end, amount, status in YEAR]
    assert all(time_of(i["period_start"]) == time_of(i["period_end"]) == anchor_time for i in found)
    payments = [ok(biller.get(f"/v1/payment-intents/{i['payment_intent']}")) for i in found]
    assert [p["amount_received"] for p in payments] == [row[3] for row in YEAR]
    assert len({i["payment_intent"] for i in found}) == len(YEAR)  # the recovery reused its payment
    # each renewal asked the network once under its invoice's key (cycle 0 was paid at the checkout)
    keys = [
        row[0]
        for row in db.execute(
            "SELECT idempotency_key FROM sandbox_processor_calls"
            " WHERE installation_id = %s AND idempotency_key LIKE 'subinv_%%'",
            (biller.keys.installation_id,),
        )
    ]
    assert sorted(keys) == sorted(f"{i['id']}:charge" for i in found[1:])
    updates = [
        e
        for e in ok(biller.get("/v1/events", params={"limit": 100}))["data"]
        if e["type"] == "subscription.updated"
    ]
    assert updates and all(e["data"]["object"]["terms_version"] == 1 for e in updates)
    # the year is over: time passes, nothing more is collected
    advance(biller, 40 * DAY)
    assert len(invoices(biller, sid)) == len(YEAR)


def settled_renewal_after_period_end(api, subscription: dict, count: int, expected: str = "paid") -> dict:
    advance_to(api, subscription["current_period_end"])
    invoice = settled_renewal(api, subscription["id"], count)
    assert invoice["status"] == expected, invoice
    return invoice
