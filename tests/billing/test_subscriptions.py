"""Subscriptions over HTTP with real worker and scheduler processes: creation without charging, the
subscription checkout, renewals by the engine, declines and recovery, cancellation, review and sync."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.billing.support import (
    DAY,
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
from tests.engine.conftest import wait_for_operation
from tests.harness import TLS
from tests.helpers import assert_error, count_rows
from tests.payment_methods.support import CHARGES_DECLINED, SUCCEEDS, save_card
from tests.payments.support import event_types


def read(api, subscription_id: str) -> dict:
    return ok(api.get(f"/v1/subscriptions/{subscription_id}"))


def pay_checkout(api, subscription_id: str, number: str = SUCCEEDS, **fields) -> httpx.Response:
    checkout = checkout_for(api, subscription_id, **fields)
    return httpx.post(checkout["checkout_url"], data=card_form(number, renew_consent="yes"), verify=TLS)


def active_subscription(api, amount: int = 1500, **terms) -> dict:
    created = subscribe(api, price(api, amount, **terms)["id"], customer(api)["id"])
    paid = pay_checkout(api, created["id"])
    assert paid.status_code == 303 and paid.headers["location"] == SUCCESS_URL, paid.text
    return read(api, created["id"])


def charges_for(db, invoice_id: str) -> int:
    row = db.execute(
        "SELECT count(*) FROM sandbox_processor_calls WHERE idempotency_key = %s", (f"{invoice_id}:charge",)
    ).fetchone()
    return int(row[0])


def renew(api, subscription: dict, count: int) -> list[dict]:
    """Advance the sandbox clock to the period's end and wait for the worker to settle the renewal."""
    advance(api, subscription["current_period_end"] - clock_now(api) + 1)
    return wait_until(
        lambda: (
            (found := invoices(api, subscription["id"]))
            and len(found) == count
            and found[-1]["status"] != "open"
            and found
        )
    )


def test_creation_prepares_an_incomplete_subscription_and_its_open_first_invoice_without_charging(biller, db):
    plan = price(biller, 1500)
    buyer = customer(biller)
    created = subscribe(biller, plan["id"], buyer["id"], quantity=2)
    assert created["id"].startswith("sub_") and created["object"] == "subscription"
    assert (created["status"], created["entitled"], created["access_until"]) == ("incomplete", False, None)
    assert (created["quantity"], created["amount"], created["currency"]) == (2, 3000, "eur")
    assert (created["terms_version"], created["distribution_version"]) == (1, 1)
    assert created["cancel_at_period_end"] is False and created["canceled_at"] is None
    (first,) = invoices(biller, created["id"])
    assert first["id"] == created["latest_invoice"] and first["id"].startswith("subinv_")
    assert (first["object"], first["billing_kind"], first["status"], first["amount"]) == (
        "subscription_invoice",
        "cycle",
        "open",
        3000,
    )
    assert (first["period_start"], first["period_end"]) == (
        created["current_period_start"],
        created["current_period_end"],
    )
    payment = ok(biller.get(f"/v1/payment-intents/{first['payment_intent']}"))
    assert (payment["status"], payment["amount"], payment["customer"]) == (
        "requires_payment_method",
        3000,
        buyer["id"],
    )
    assert count_rows(db, "sandbox_processor_calls", biller.keys.installation_id) == 0  # nothing charged
    assert event_types(biller, created["id"]) == ["subscription.created"]
    listed = ok(biller.get("/v1/subscriptions"))
    assert [s["id"] for s in listed["data"]] == [created["id"]]


def test_price_data_creates_the_price_with_the_subscription(biller):
    owner = ok(post(biller, "/v1/products", {"name": "Team"}))
    created = ok(
        post(
            biller,
            "/v1/subscriptions",
            {
                "price_data": {"product": owner["id"], "currency": "eur", "interval": "year", "amount": 9900},
                "customer": customer(biller)["id"],
            },
        )
    )
    made = ok(biller.get(f"/v1/prices/{created['price']}"))
    assert (made["interval"], made["amount"], created["amount"]) == ("year", 9900, 9900)


@pytest.mark.parametrize(
    ("fields", "status", "code", "param"),
    [
        ({"quantity": 0}, 400, "parameter_invalid", "quantity"),
        ({"quantity": 10001}, 400, "parameter_invalid", "quantity"),
        ({"customer": "cus_000000000000000000000000"}, 400, "resource_missing", "customer"),
        ({"price": "price_000000000000000000000000"}, 400, "resource_missing", "price"),
        ({"price": None}, 400, "parameter_missing", "price"),
        (
            {"price_data": {"product": "prod_x", "currency": "eur", "interval": "month", "amount": 5}},
            400,
            "parameters_exclusive",
            "price_data",
        ),
        (
            {
                "distribution": {
                    "allocations": [{"recipient": "acct_x", "role": "merchant", "basis_points": 10000}]
                }
            },
            400,
            "distribution_invalid",
            "distribution",
        ),
        ({"surprise": True}, 400, "parameter_unknown", "surprise"),
    ],
)
def test_bad_subscriptions_are_refused_and_write_nothing(biller, db, fields, status, code, param):
    body = {"price": price(biller)["id"], "customer": customer(biller)["id"]} | fields
    body = {key: value for key, value in body.items() if value is not None}
    assert_error(post(biller, "/v1/subscriptions", body), status, code, param)
    assert count_rows(db, "subscriptions", biller.keys.installation_id) == 0
    assert count_rows(db, "payment_intents", biller.keys.installation_id) == 0


def test_a_total_beyond_the_limit_is_amount_invalid(biller, db):
    big = price(biller, 99_999_999)
    assert_error(
        post(
            biller,
            "/v1/subscriptions",
            {"price": big["id"], "customer": customer(biller)["id"], "quantity": 2},
        ),
        400,
        "amount_invalid",
        "quantity",
    )
    assert count_rows(db, "subscriptions", biller.keys.installation_id) == 0


def test_subscriptions_off_in_the_environment_is_recurring_not_enabled(api, bridge, db):
    enable_billing(bridge, api.keys, recurring=False)
    body = {"price": price(api)["id"], "customer": customer(api)["id"]}
    error = assert_error(post(api, "/v1/subscriptions", body), 403, "recurring_not_enabled")
    assert error["type"] == "permission_error"
    assert count_rows(db, "subscriptions", api.keys.installation_id) == 0


def test_an_archived_price_takes_no_new_subscription(biller):
    plan = price(biller)
    ok(post(biller, f"/v1/prices/{plan['id']}/archive"))
    body = {"price": plan["id"], "customer": customer(biller)["id"]}
    assert_error(post(biller, "/v1/subscriptions", body), 409, "resource_state_invalid", "price")


def test_the_subscription_checkout_needs_consent_then_activates_and_sets_access_until(biller, db):
    created = subscribe(biller, price(biller, 1500)["id"], customer(biller)["id"])
    checkout = checkout_for(biller, created["id"])
    assert (checkout["subscription"], checkout["invoice"]) == (created["id"], created["latest_invoice"])
    page = httpx.get(checkout["checkout_url"], verify=TLS)
    assert page.status_code == 200
    assert (
        "every month" in page.text
        and "test installation" in page.text
        and 'name="renew_consent"' in page.text
    )
    refused = httpx.post(checkout["checkout_url"], data=card_form(SUCCEEDS), verify=TLS)  # consent not ticked
    assert refused.status_code == 400 and "agree" in refused.text
    assert count_rows(db, "sandbox_processor_calls", biller.keys.installation_id) == 0
    paid = httpx.post(checkout["checkout_url"], data=card_form(SUCCEEDS, renew_consent="yes"), verify=TLS)
    assert paid.status_code == 303 and paid.headers["location"] == SUCCESS_URL
    after = read(biller, created["id"])
    assert (after["status"], after["entitled"]) == ("active", True)
    assert after["access_until"] == after["current_period_end"] == created["current_period_end"]
    (first,) = invoices(biller, created["id"])
    assert first["status"] == "paid" and first["paid_at"] is not None
    assert event_types(biller, created["id"]) == ["subscription.created", "subscription.updated"]
    assert event_types(biller, first["id"]) == ["subscription.invoice.paid"]
    # the first payment cannot be taken twice
    assert_error(
        biller.post(
            "/v1/checkout-sessions",
            json={
                "subscription": created["id"],
                "title": "x",
                "success_url": SUCCESS_URL,
                "cancel_url": SUCCESS_URL,
            },
        ),
        409,
        "resource_state_invalid",
        "subscription",
    )


def test_expiring_a_subscription_checkout_revokes_only_its_link(biller):
    created = subscribe(biller, price(biller)["id"], customer(biller)["id"])
    checkout = checkout_for(biller, created["id"])
    expired = ok(biller.post(f"/v1/checkout-sessions/{checkout['id']}/expire"))
    assert expired["status"] == "expired"
    assert read(biller, created["id"])["status"] == "incomplete"
    payment = ok(biller.get(f"/v1/payment-intents/{expired['payment_intent']}"))
    assert payment["status"] == "requires_payment_method"
    assert pay_checkout(biller, created["id"]).status_code == 303  # a new session still takes it


def test_an_incomplete_subscription_unpaid_for_23_hours_is_canceled(biller):
    created = subscribe(biller, price(biller)["id"], customer(biller)["id"])
    advance(biller, 23 * 3600 - 60)
    assert read(biller, created["id"])["status"] == "incomplete"
    advance(biller, 60)
    after = read(biller, created["id"])
    assert (after["status"], after["entitled"]) == ("canceled", False)
    (first,) = invoices(biller, created["id"])
    assert first["status"] == "void"
    assert ok(biller.get(f"/v1/payment-intents/{first['payment_intent']}"))["status"] == "canceled"


def test_a_renewal_charges_the_saved_card_once_and_moves_the_period(biller, db, money_stack):
    subscription = active_subscription(biller)
    first, second = renew(biller, subscription, 2)
    assert second["status"] == "paid" and second["period_start"] == first["period_end"]
    after = read(biller, subscription["id"])
    assert after["current_period_start"] == second["period_start"]
    assert after["access_until"] == after["current_period_end"] == second["period_end"]
    assert charges_for(db, second["id"]) == 1
    assert "subscription.invoice.paid" in event_types(biller, second["id"])
    # the same renewal asked again (a duplicate message, a re-driven attempt) charges nothing more
    operation = db.execute(
        "SELECT operation_id FROM subscription_invoices WHERE id = %s", (second["id"],)
    ).fetchone()[0]
    assert wait_for_operation(biller, operation, {"succeeded"})["type"] == "renewal"
    db.execute("UPDATE operations SET status = 'pending', attempts = 0 WHERE id = %s", (operation,))
    wait_for_operation(biller, operation, {"succeeded"})
    assert charges_for(db, second["id"]) == 1
    assert len(invoices(biller, subscription["id"])) == 2


def test_periods_missed_during_an_outage_are_not_collected_retroactively(biller, money_stack):
    subscription = active_subscription(biller)
    advance(biller, subscription["current_period_end"] - clock_now(biller) + 70 * DAY)
    found = wait_until(
        lambda: (i := invoices(biller, subscription["id"])) and i[-1]["status"] == "paid" and i
    )
    assert len(found) == 2  # one current cycle, not three
    now = clock_now(biller)
    assert found[-1]["period_start"] <= now < found[-1]["period_end"]


def test_a_declined_renewal_is_failed_past_due_and_recovered_on_the_same_payment(biller, db, money_stack):
    subscription = active_subscription(biller)
    declining = save_card(biller, subscription["customer"], CHARGES_DECLINED)
    ok(biller.post(f"/v1/customers/{subscription['customer']}/payment-methods/{declining['id']}/default"))
    _, failed = renew(biller, subscription, 2)
    assert (failed["status"], failed["failure_code"]) == ("failed", "generic_decline")
    after = read(biller, subscription["id"])
    assert (after["status"], after["entitled"]) == ("past_due", False)
    assert after["access_until"] == subscription["current_period_end"]
    assert "subscription.invoice.failed" in event_types(biller, failed["id"])
    # no background retry: time passes, nothing else is charged
    advance(biller, 3 * DAY)
    assert (
        charges_for(db, failed["id"]) == 1 and invoices(biller, subscription["id"])[-1]["status"] == "failed"
    )
    recovered = pay_checkout(biller, subscription["id"], invoice=failed["id"])
    assert recovered.status_code == 303
    again = invoices(biller, subscription["id"])
    assert len(again) == 2 and again[-1]["status"] == "paid"
    assert again[-1]["payment_intent"] == failed["payment_intent"]  # the same payment, no new one
    after = read(biller, subscription["id"])
    assert (after["status"], after["entitled"], after["access_until"]) == (
        "active",
        True,
        failed["period_end"],
    )


def test_the_card_that_declines_later_pays_the_first_instalment_and_its_renewal_fails(
    biller, db, money_stack
):
    # CONVENTIONS.md §6: a subscription whose renewals fail, made with the card typed at its checkout
    created = subscribe(biller, price(biller, 1500)["id"], customer(biller)["id"])
    paid = pay_checkout(biller, created["id"], CHARGES_DECLINED)
    assert paid.status_code == 303 and paid.headers["location"] == SUCCESS_URL, paid.text
    subscription = read(biller, created["id"])
    assert (subscription["status"], subscription["entitled"]) == ("active", True)
    (first,) = invoices(biller, created["id"])
    assert first["status"] == "paid"
    payment = ok(biller.get(f"/v1/payment-intents/{first['payment_intent']}"))
    assert (payment["status"], payment["amount_received"]) == ("succeeded", 1500)
    [saved] = ok(biller.get(f"/v1/customers/{subscription['customer']}/payment-methods"))["data"]
    assert saved["card"]["last4"] == "0341" and saved["id"] == payment["payment_method"]

    _, renewal = renew(biller, subscription, 2)
    assert (renewal["status"], renewal["failure_code"]) == ("failed", "generic_decline")
    assert charges_for(db, renewal["id"]) == 1  # charged off-session once, declined
    after = read(biller, created["id"])
    assert (after["status"], after["entitled"]) == ("past_due", False)
    assert "subscription.invoice.failed" in event_types(biller, renewal["id"])


def test_cancel_at_period_end_keeps_access_then_stops_renewals_and_resume_withdraws_it(biller, money_stack):
    subscription = active_subscription(biller)
    scheduled = ok(post(biller, f"/v1/subscriptions/{subscription['id']}/cancel", {"at_period_end": True}))
    assert (scheduled["status"], scheduled["cancel_at_period_end"], scheduled["entitled"]) == (
        "active",
        True,
        True,
    )
    resumed = ok(post(biller, f"/v1/subscriptions/{subscription['id']}/resume"))
    assert resumed["cancel_at_period_end"] is False
    ok(post(biller, f"/v1/subscriptions/{subscription['id']}/cancel", {"at_period_end": True}))
    advance(biller, subscription["current_period_end"] - clock_now(biller) + 1)
    ended = read(biller, subscription["id"])
    assert (ended["status"], ended["entitled"], ended["canceled_at"]) == (
        "canceled",
        False,
        subscription["current_period_end"],
    )
    assert len(invoices(biller, subscription["id"])) == 1  # renewals stopped
    assert_error(
        post(biller, f"/v1/subscriptions/{subscription['id']}/resume"), 409, "resource_state_invalid"
    )


def test_cancel_now_ends_renewals_without_refund_and_paid_access_stays(biller, money_stack):
    subscription = active_subscription(biller)
    canceled = ok(post(biller, f"/v1/subscriptions/{subscription['id']}/cancel", {"at_period_end": False}))
    assert (canceled["status"], canceled["entitled"]) == ("canceled", True)
    assert canceled["access_until"] == subscription["access_until"]
    (first,) = invoices(biller, subscription["id"])
    payment = ok(biller.get(f"/v1/payment-intents/{first['payment_intent']}"))
    assert payment["amount_refunded"] == 0
    advance(biller, subscription["current_period_end"] - clock_now(biller) + 60)
    assert len(invoices(biller, subscription["id"])) == 1
    assert read(biller, subscription["id"])["entitled"] is False
    assert_error(
        post(biller, f"/v1/subscriptions/{subscription['id']}/cancel"), 409, "resource_state_invalid"
    )


def test_a_missing_saved_method_stops_for_review_and_sync_after_the_repair_charges_once(
    biller, db, money_stack
):
    subscription = active_subscription(biller)
    buyer = subscription["customer"]
    methods = ok(biller.get(f"/v1/customers/{buyer}/payment-methods"))["data"]
    for method in methods:
        ok(biller.delete(f"/v1/customers/{buyer}/payment-methods/{method['id']}"))
    advance(biller, subscription["current_period_end"] - clock_now(biller) + 1)
    stopped = wait_until(lambda: (s := read(biller, subscription["id"]))["status"] == "review_required" and s)
    assert stopped["review_reason"] == "payment_method_missing"
    renewal = invoices(biller, subscription["id"])[-1]
    assert renewal["status"] == "open" and charges_for(db, renewal["id"]) == 0
    # a sync before the repair changes nothing
    before = post(biller, f"/v1/subscriptions/{subscription['id']}/sync")
    assert before.status_code == 202 and before.json()["type"] == "subscription_sync"
    wait_for_operation(biller, before.json()["id"], {"succeeded"})
    assert read(biller, subscription["id"])["status"] == "review_required"
    repaired = save_card(biller, buyer, SUCCEEDS)
    ok(biller.post(f"/v1/customers/{buyer}/payment-methods/{repaired['id']}/default"))
    after = post(biller, f"/v1/subscriptions/{subscription['id']}/sync")
    wait_for_operation(biller, after.json()["id"], {"succeeded"})
    paid = wait_until(lambda: (i := invoices(biller, subscription["id"])[-1])["status"] == "paid" and i)
    assert paid["id"] == renewal["id"] and charges_for(db, renewal["id"]) == 1
    assert read(biller, subscription["id"])["status"] == "active"
    # another sync never charges again
    third = post(biller, f"/v1/subscriptions/{subscription['id']}/sync")
    wait_for_operation(biller, third.json()["id"], {"succeeded"})
    assert charges_for(db, renewal["id"]) == 1


def test_a_subscription_with_a_distribution_needs_the_payment_and_transfer_scopes(biller, bridge, web):
    from tests.harness import add_key

    secret = add_key(bridge, biller.keys.tenant, ("billing:write",))
    body = {
        "price": price(biller)["id"],
        "customer": customer(biller)["id"],
        "distribution": {"allocations": [{"recipient": "acct_x", "role": "merchant", "basis_points": 10000}]},
    }
    with httpx.Client(
        base_url=web.base_url, headers={"Authorization": f"Bearer {secret}"}, verify=TLS
    ) as narrow:
        assert_error(post(narrow, "/v1/subscriptions", body), 403, "insufficient_scope")


def test_another_installations_subscription_answers_like_a_missing_id(biller, make_api):
    created = subscribe(biller, price(biller)["id"], customer(biller)["id"])
    stranger = make_api()
    assert_error(stranger.get(f"/v1/subscriptions/{created['id']}"), 404, "resource_missing", "subscription")
    assert_error(
        post(stranger, f"/v1/subscriptions/{created['id']}/cancel"), 404, "resource_missing", "subscription"
    )


def test_two_sweeps_at_the_same_moment_open_one_invoice_and_charge_once(biller, db, money_stack):
    """Two clock advances at once each run the billing calendar in their own transaction (as two
    schedulers across a fail-over would): the cycle gets one invoice and one charge."""
    subscription = active_subscription(biller)
    seconds = subscription["current_period_end"] - clock_now(biller) + 1

    def sweep(_: int) -> int:
        return advance(biller, seconds)["work_done"]["billing.renewals"]

    with ThreadPoolExecutor(2) as pool:
        done = list(pool.map(sweep, range(2)))
    assert sorted(done) == [0, 1]
    found = wait_until(
        lambda: (i := invoices(biller, subscription["id"])) and i[-1]["status"] == "paid" and i
    )
    assert len(found) == 2 and charges_for(db, found[-1]["id"]) == 1


def test_the_leading_schedulers_own_sweep_renews_without_a_clock_advance(biller, bridge, money_stack):
    """The sandbox clock moved without running its due work (as real time passes in live): the
    scheduler's periodic billing sweep finds the due subscription by query and renews it."""
    from moneyrail.sandbox import repository as sandbox

    subscription = active_subscription(biller)
    seconds = subscription["current_period_end"] - clock_now(biller) + 1

    async def move_clock(session):
        await sandbox.advance_clock(session, biller.keys.installation_id, seconds)

    bridge.in_unit_of_work(move_clock)
    found = wait_until(
        lambda: (
            (i := invoices(biller, subscription["id"])) and len(i) == 2 and i[-1]["status"] == "paid" and i
        ),
        timeout=60,
    )
    assert found[-1]["period_start"] == subscription["current_period_end"]


def test_a_renewal_that_cannot_be_opened_as_agreed_stops_for_review_and_sync_resumes_it(
    biller, bridge, db, money_stack
):
    """The operator raised the commission above the cycle's total: the renewal is not opened (nothing
    charged), the subscription is review_required with the reason, and the other due ones renew."""
    from tests.payments.support import set_commission, wait_for_settings_to_reach_web

    stopped = active_subscription(biller, 500)
    renewed = active_subscription(biller, 5000)
    set_commission(bridge, biller.keys, 0, 600)
    wait_for_settings_to_reach_web()
    advance(biller, max(stopped["current_period_end"], renewed["current_period_end"]) - clock_now(biller) + 1)
    after = read(biller, stopped["id"])
    assert (after["status"], after["review_reason"]) == ("review_required", "amount_invalid")
    assert len(invoices(biller, stopped["id"])) == 1
    wait_until(lambda: (i := invoices(biller, renewed["id"])) and len(i) == 2 and i[-1]["status"] == "paid")
    set_commission(bridge, biller.keys, 0, 0)
    wait_for_settings_to_reach_web()
    synced = post(biller, f"/v1/subscriptions/{stopped['id']}/sync")
    wait_for_operation(biller, synced.json()["id"], {"succeeded"})
    assert read(biller, stopped["id"])["status"] == "active"
    advance(biller, 1)  # the billing calendar runs again: the cycle that contains now is collected
    found = wait_until(
        lambda: (i := invoices(biller, stopped["id"])) and len(i) == 2 and i[-1]["status"] == "paid" and i
    )
    assert charges_for(db, found[-1]["id"]) == 1


def dead_lettered_renewal(api, db, bridge) -> tuple[dict, dict]:
    """An active subscription whose renewal an injected network outage dead-letters: (the subscription
    as it was, its waiting invoice). Final means final: the invoice stays `open`, showing the error."""
    subscription = active_subscription(api)
    ok(
        api.post(
            "/v1/test-helpers/processor-faults",
            json={"operation_type": "authorize", "mode": "transient", "count": 100},
        )
    )
    advance(api, subscription["current_period_end"] - clock_now(api) + 1)
    opened = wait_until(lambda: (i := invoices(api, subscription["id"])) and len(i) == 2 and i[-1])
    assert opened["operation"].startswith("op_")
    db.execute("UPDATE operations SET max_attempts = 2 WHERE id = %s", (opened["operation"],))
    operation = wait_for_operation(
        api, opened["operation"], {"succeeded", "failed", "dead_letter"}, timeout=60
    )
    assert operation["status"] == "dead_letter", operation
    waiting = invoices(api, subscription["id"])[-1]
    assert (waiting["status"], waiting["failure_code"]) == ("open", None)
    assert waiting["last_operation_error"]["code"] == "processor_unavailable"
    assert "subscription.invoice.failed" not in event_types(api, waiting["id"])
    assert read(api, subscription["id"])["status"] == "active"
    assert api.delete("/v1/test-helpers/processor-faults").status_code == 200  # the network is back
    return subscription, waiting


def test_a_dead_lettered_renewal_stays_open_and_an_operators_retry_collects_it(
    biller, db, bridge, money_stack
):
    from moneyrail.engine.service import retry_dead_letter

    subscription, waiting = dead_lettered_renewal(biller, db, bridge)

    async def retry(session):
        await retry_dead_letter(session, waiting["operation"], operator="ops@example.com")

    bridge.in_unit_of_work(retry)
    wait_for_operation(biller, waiting["operation"], {"succeeded"}, timeout=60)
    paid = invoices(biller, subscription["id"])[-1]
    assert (paid["status"], paid["last_operation_error"]) == ("paid", None)
    assert event_types(biller, paid["id"]) == ["subscription.invoice.paid"]
    assert charges_for(db, paid["id"]) == 1
    assert read(biller, subscription["id"])["access_until"] == paid["period_end"]


def test_a_discarded_renewal_fails_its_invoice_once_as_a_decline_does(biller, db, bridge, money_stack):
    from moneyrail.engine.service import discard_dead_letter

    subscription, waiting = dead_lettered_renewal(biller, db, bridge)

    async def discard(session):
        await discard_dead_letter(
            session, waiting["operation"], operator="ops@example.com", reason="card network incident"
        )

    bridge.in_unit_of_work(discard)
    failed = invoices(biller, subscription["id"])[-1]
    assert (failed["status"], failed["failure_code"]) == ("failed", "operation_discarded")
    assert event_types(biller, failed["id"]) == ["subscription.invoice.failed"]
    after = read(biller, subscription["id"])
    assert (after["status"], after["access_until"]) == ("past_due", subscription["current_period_end"])
    assert charges_for(db, failed["id"]) == 0
    # the payer recovers it with the same payment, as after a decline
    assert pay_checkout(biller, subscription["id"], invoice=failed["id"]).status_code == 303
    assert invoices(biller, subscription["id"])[-1]["status"] == "paid"
