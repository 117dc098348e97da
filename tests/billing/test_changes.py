"""Subscription changes over HTTP (issue 16.1): immutable proposals, consent through a checkout, the
prorated difference of an immediate change, next_cycle changes applied by the renewal (a real worker),
expiry on the sandbox clock, withdrawal, and the refusals that write nothing."""

from __future__ import annotations

import math

import httpx

from tests.billing.support import (
    DAY,
    active_subscription,
    advance,
    checkout_for,
    clock_now,
    invoices,
    ok,
    post,
    price,
    wait_until,
)
from tests.checkout.support import SUCCESS_URL, card_form
from tests.disputes.support import disputed
from tests.harness import TLS
from tests.helpers import assert_error, count_rows
from tests.payment_methods.support import SUCCEEDS
from tests.payments.support import event_types, set_commission


def read(api, subscription_id: str) -> dict:
    return ok(api.get(f"/v1/subscriptions/{subscription_id}"))


def propose(api, subscription: dict, **fields) -> httpx.Response:
    body = {"expected_version": subscription["terms_version"], "effective": "immediate"} | fields
    return post(api, f"/v1/subscriptions/{subscription['id']}/changes", body)


def read_change(api, subscription_id: str, change_id: str) -> dict:
    return ok(api.get(f"/v1/subscriptions/{subscription_id}/changes/{change_id}"))


def test_an_immediate_upgrade_charges_the_prorated_difference_and_applies_only_once_paid(biller, db):
    subscription = active_subscription(biller, 1500)
    advance(biller, 10 * DAY)
    dearer = price(biller, 4000)
    now = clock_now(biller)
    change = ok(propose(biller, subscription, price=dearer["id"]))
    quoted_at = change["expires_at"] - 15 * 60
    assert now <= quoted_at <= clock_now(biller)  # the sandbox clock runs on between two requests
    period = subscription["current_period_end"] - subscription["current_period_start"]
    remaining = subscription["current_period_end"] - quoted_at
    expected_due = math.ceil((4000 - 1500) * remaining / period)
    assert (change["object"], change["status"], change["effective"]) == (
        "subscription_change",
        "open",
        "immediate",
    )
    assert (change["current_amount"], change["amount"], change["amount_due"]) == (1500, 4000, expected_due)
    # a quote changes nothing and charges nothing
    before_calls = count_rows(db, "sandbox_processor_calls", biller.keys.installation_id)
    assert read(biller, subscription["id"])["terms_version"] == 1

    checkout = checkout_for(biller, subscription["id"], change=change["id"])
    assert (checkout["subscription"], checkout["change"]) == (subscription["id"], change["id"])
    waiting = read_change(biller, subscription["id"], change["id"])
    assert waiting["status"] == "awaiting_payment"
    difference = invoices(biller, subscription["id"])[-1]
    assert difference["id"] == waiting["subscription_invoice"]
    assert (difference["billing_kind"], difference["status"], difference["amount"]) == (
        "upgrade",
        "open",
        expected_due,
    )
    assert difference["payment_intent"] == checkout["payment_intent"]
    page = httpx.get(checkout["checkout_url"], verify=TLS)
    assert page.status_code == 200
    assert "then €40.00 every month" in page.text  # the difference now, the new total at each renewal
    # consent without the full payment applies nothing
    assert read(biller, subscription["id"])["terms_version"] == 1
    assert count_rows(db, "sandbox_processor_calls", biller.keys.installation_id) == before_calls

    paying_at = clock_now(biller)
    paid = httpx.post(checkout["checkout_url"], data=card_form(SUCCEEDS, renew_consent="yes"), verify=TLS)
    assert paid.status_code == 303 and paid.headers["location"] == SUCCESS_URL, paid.text
    after = read(biller, subscription["id"])
    assert (after["price"], after["amount"], after["terms_version"]) == (dearer["id"], 4000, 2)
    # the calendar and the paid access stay as they were
    assert after["current_period_end"] == subscription["current_period_end"]
    assert after["access_until"] == subscription["access_until"]
    assert after["latest_invoice"] == subscription["latest_invoice"]
    applied = read_change(biller, subscription["id"], change["id"])
    assert applied["status"] == "applied" and paying_at <= applied["applied_at"] <= clock_now(biller)
    assert invoices(biller, subscription["id"])[-1]["status"] == "paid"
    assert event_types(biller, change["id"]) == [
        "subscription.change.awaiting_payment",
        "subscription.change.applied",
    ]
    # applied terms are a new version: a proposal quoted against the old one is stale
    assert_error(
        propose(biller, subscription, quantity=2, effective="next_cycle"),
        409,
        "subscription_version_conflict",
        "expected_version",
    )


def test_bad_proposals_are_refused_with_their_codes_and_write_nothing(biller, db):
    subscription = active_subscription(biller, 1500)
    installation = biller.keys.installation_id
    usd = price(biller, 3000, currency="usd")
    yearly = price(biller, 3000, interval="year")
    assert_error(
        propose(biller, subscription, quantity=2, expected_version=7),
        409,
        "subscription_version_conflict",
        "expected_version",
    )
    assert_error(propose(biller, subscription, price=usd["id"]), 400, "currency_invalid", "price")
    assert_error(propose(biller, subscription, price=yearly["id"]), 400, "parameter_invalid", "effective")
    assert_error(propose(biller, subscription, price="price_nope"), 400, "resource_missing", "price")
    assert_error(propose(biller, subscription, quantity=0), 400, "parameter_invalid", "quantity")
    assert_error(propose(biller, subscription, quantity=1), 400, "parameter_invalid")  # changes nothing
    cheaper = price(biller, 900)
    # a reduction takes effect at renewal: no credit is created
    assert_error(propose(biller, subscription, price=cheaper["id"]), 400, "parameter_invalid", "effective")
    assert_error(
        propose(biller, subscription, quantity=2, effective="later"), 400, "parameter_invalid", "effective"
    )
    assert_error(propose(biller, subscription, quantity=2, surprise=1), 400, "parameter_unknown", "surprise")
    assert count_rows(db, "subscription_changes", installation) == 0

    first = ok(propose(biller, subscription, quantity=2))
    assert_error(
        propose(biller, subscription, quantity=3), 409, "subscription_change_pending", "subscription"
    )
    assert count_rows(db, "subscription_changes", installation) == 1
    listed = ok(biller.get(f"/v1/subscriptions/{subscription['id']}/changes"))
    assert [row["id"] for row in listed["data"]] == [first["id"]]
    assert_error(
        biller.get(f"/v1/subscriptions/{subscription['id']}/changes/subchg_nope"),
        404,
        "resource_missing",
        "change",
    )


def test_a_difference_below_the_commission_is_amount_too_small(biller, bridge, db):
    set_commission(bridge, biller.keys, 0, 600)  # before this tenant's first request (the web remembers it)
    subscription = active_subscription(biller, 1500)
    # one day left of a month: (1600 - 1500) x 1/31 rounds up to 4, below the 600 commission
    advance(biller, subscription["current_period_end"] - clock_now(biller) - DAY)
    assert_error(
        propose(biller, subscription, price=price(biller, 1600)["id"]), 400, "amount_too_small", "effective"
    )
    assert count_rows(db, "subscription_changes", biller.keys.installation_id) == 0
    # scheduled for the renewal instead, it is taken
    scheduled = ok(propose(biller, subscription, price=price(biller, 1600)["id"], effective="next_cycle"))
    assert scheduled["amount_due"] == 0


def test_an_unaccepted_proposal_expires_after_15_minutes_on_the_sandbox_clock(biller):
    subscription = active_subscription(biller, 1500)
    change = ok(propose(biller, subscription, quantity=2))
    advance(biller, 15 * 60 - 1)
    assert read_change(biller, subscription["id"], change["id"])["status"] == "open"
    advance(biller, 1)
    assert read_change(biller, subscription["id"], change["id"])["status"] == "expired"
    assert event_types(biller, change["id"]) == ["subscription.change.expired"]
    assert_error(
        biller.post(
            "/v1/checkout-sessions",
            json={
                "subscription": subscription["id"],
                "change": change["id"],
                "title": "Upgrade",
                "success_url": SUCCESS_URL,
                "cancel_url": SUCCESS_URL,
            },
        ),
        409,
        "change_expired",
        "change",
    )
    assert_error(
        post(biller, f"/v1/subscriptions/{subscription['id']}/changes/{change['id']}/cancel"),
        409,
        "change_expired",
        "change",
    )
    # the expired proposal no longer blocks a new one
    assert ok(propose(biller, subscription, quantity=3))["status"] == "open"


def test_withdrawing_an_immediate_change_cancels_its_unpaid_difference_without_refund(biller):
    subscription = active_subscription(biller, 1500)
    change = ok(propose(biller, subscription, quantity=2))
    checkout = checkout_for(biller, subscription["id"], change=change["id"])
    canceled = ok(post(biller, f"/v1/subscriptions/{subscription['id']}/changes/{change['id']}/cancel"))
    assert canceled["status"] == "canceled" and canceled["canceled_at"] is not None
    difference = invoices(biller, subscription["id"])[-1]
    assert (difference["billing_kind"], difference["status"]) == ("upgrade", "void")
    assert ok(biller.get(f"/v1/payment-intents/{checkout['payment_intent']}"))["status"] == "canceled"
    # the page no longer takes the card, and the subscription keeps its terms
    assert (
        httpx.post(
            checkout["checkout_url"], data=card_form(SUCCEEDS, renew_consent="yes"), verify=TLS
        ).status_code
        != 303
    )
    assert read(biller, subscription["id"])["terms_version"] == 1
    assert event_types(biller, change["id"]) == [
        "subscription.change.awaiting_payment",
        "subscription.change.canceled",
    ]
    assert_error(
        post(biller, f"/v1/subscriptions/{subscription['id']}/changes/{change['id']}/cancel"),
        409,
        "resource_state_invalid",
    )


def test_a_next_cycle_change_is_confirmed_without_a_charge_survives_the_links_expiry_and_applies_at_renewal(
    biller, db, money_stack
):
    subscription = active_subscription(biller, 500, quantity=3)
    change = ok(propose(biller, subscription, quantity=1, effective="next_cycle"))
    assert (change["current_amount"], change["amount"], change["amount_due"]) == (1500, 500, 0)
    checkout = checkout_for(biller, subscription["id"], change=change["id"])
    assert checkout["payment_intent"] is None and checkout["change"] == change["id"]
    page = httpx.get(checkout["checkout_url"], verify=TLS)
    assert page.status_code == 200 and "Nothing is charged now" in page.text
    assert 'name="card_number"' not in page.text  # a confirmation of the change, not of a charge
    calls = count_rows(db, "sandbox_processor_calls", biller.keys.installation_id)
    refused = httpx.post(checkout["checkout_url"], data={}, verify=TLS)  # consent not ticked
    assert refused.status_code == 400 and "agree" in refused.text
    assert read_change(biller, subscription["id"], change["id"])["status"] == "open"
    confirmed = httpx.post(checkout["checkout_url"], data={"renew_consent": "yes"}, verify=TLS)
    assert confirmed.status_code == 303 and confirmed.headers["location"] == SUCCESS_URL
    assert count_rows(db, "sandbox_processor_calls", biller.keys.installation_id) == calls  # nothing charged
    accepted = read_change(biller, subscription["id"], change["id"])
    assert accepted["status"] == "accepted" and accepted["accepted_at"] is not None
    assert read(biller, subscription["id"])["quantity"] == 3  # current access and terms kept
    # past the link's lifetime and the proposal's 15 minutes: accepted, the change stays scheduled
    advance(biller, max(checkout["expires_at"], change["expires_at"]) - clock_now(biller) + 1)
    assert read_change(biller, subscription["id"], change["id"])["status"] == "accepted"

    advance(biller, subscription["current_period_end"] - clock_now(biller) + 1)
    renewed = wait_until(
        lambda: (
            (found := invoices(biller, subscription["id"]))
            and len(found) == 2
            and found[-1]["status"] == "paid"
            and found
        )
    )
    assert (renewed[-1]["billing_kind"], renewed[-1]["amount"], renewed[-1]["terms_version"]) == (
        "cycle",
        500,
        2,
    )
    after = read(biller, subscription["id"])
    assert (after["quantity"], after["amount"], after["terms_version"]) == (1, 500, 2)
    assert read_change(biller, subscription["id"], change["id"])["status"] == "applied"
    assert event_types(biller, change["id"]) == [
        "subscription.change.accepted",
        "subscription.change.applied",
    ]


def test_cancelling_the_subscription_cancels_its_unapplied_change(biller):
    subscription = active_subscription(biller, 1500)
    change = ok(propose(biller, subscription, quantity=2, effective="next_cycle"))
    ok(post(biller, f"/v1/subscriptions/{subscription['id']}/cancel", {"at_period_end": False}))
    assert read_change(biller, subscription["id"], change["id"])["status"] == "canceled"
    assert event_types(biller, change["id"]) == ["subscription.change.canceled"]


def refused_over_an_excluded_period(api, db, subscription: dict, why: str) -> None:
    """Spec 4.M rule 4: the difference is not computed over a refunded or disputed period. No difference
    exists there, so the immediate change is refused (never charged as if the period cost nothing, nor
    applied for free); scheduled for the renewal, it is taken, with nothing due now."""
    dearer = price(api, 4000)
    changes = count_rows(db, "subscription_changes", api.keys.installation_id)
    calls = count_rows(db, "sandbox_processor_calls", api.keys.installation_id)
    refused = propose(api, subscription, price=dearer["id"])
    assert_error(refused, 400, "parameter_invalid", "effective")
    message = refused.json()["error"]["message"]
    assert f"was {why}" in message and "next_cycle" in message
    assert count_rows(db, "subscription_changes", api.keys.installation_id) == changes
    assert count_rows(db, "sandbox_processor_calls", api.keys.installation_id) == calls
    scheduled = ok(propose(api, subscription, price=dearer["id"], effective="next_cycle"))
    assert (scheduled["amount"], scheduled["amount_due"]) == (4000, 0)


def test_proration_is_not_computed_over_a_refunded_period(biller, db, money_stack):
    subscription = active_subscription(biller, 1500)
    # before the refund the same upgrade is quoted with its prorated difference
    quoted = ok(propose(biller, subscription, quantity=2))
    assert quoted["amount_due"] > 0
    ok(post(biller, f"/v1/subscriptions/{subscription['id']}/changes/{quoted['id']}/cancel"))
    first = invoices(biller, subscription["id"])[0]
    refund = ok(biller.post("/v1/refunds", json={"payment_intent": first["payment_intent"], "amount": 500}))
    wait_until(lambda: ok(biller.get(f"/v1/refunds/{refund['id']}"))["status"] == "succeeded")
    refused_over_an_excluded_period(biller, db, subscription, "refunded")


def test_proration_is_not_computed_over_a_disputed_period(biller, db, money_stack):
    subscription = active_subscription(biller, 1500)
    quoted = ok(propose(biller, subscription, quantity=2))
    assert quoted["amount_due"] > 0
    ok(post(biller, f"/v1/subscriptions/{subscription['id']}/changes/{quoted['id']}/cancel"))
    first = invoices(biller, subscription["id"])[0]
    disputed(biller, first["payment_intent"])  # the sandbox network opens it; the worker withdraws its money
    refused_over_an_excluded_period(biller, db, subscription, "disputed")


def test_an_unpaid_immediate_difference_is_withdrawn_when_its_period_ends(biller, money_stack):
    subscription = active_subscription(biller, 1500)
    change = ok(propose(biller, subscription, quantity=2))
    checkout = checkout_for(biller, subscription["id"], change=change["id"])
    advance(biller, subscription["current_period_end"] - clock_now(biller) + 1)
    renewed = wait_until(
        lambda: (
            (found := invoices(biller, subscription["id"]))
            and found[-1]["billing_kind"] == "cycle"
            and found[-1]["status"] == "paid"
            and found
        )
    )
    # the renewal bills the terms in force; the difference priced a period that is over
    assert (renewed[-1]["amount"], renewed[-1]["terms_version"]) == (1500, 1)
    assert read_change(biller, subscription["id"], change["id"])["status"] == "canceled"
    assert [i["status"] for i in renewed if i["billing_kind"] == "upgrade"] == ["void"]
    assert ok(biller.get(f"/v1/payment-intents/{checkout['payment_intent']}"))["status"] == "canceled"
    assert read(biller, subscription["id"])["terms_version"] == 1
