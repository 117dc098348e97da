"""A setup intent not confirmed within its hour reads `canceled` with `cancellation_reason` `abandoned`,
on the environment's clock: a sandbox clock advance cancels the due ones, the scheduler's sweep does on
every sandbox's own clock, and a read that finds one past its expiry before any sweep cancels it itself.
A confirmation after the expiry stays refused and saves nothing."""

from __future__ import annotations

from typing import Any

import httpx

import workers.scheduler  # noqa: F401 - the leader's process registers its jobs by importing the domains
from moneyrail.engine.schedule import periodic_jobs
from moneyrail.payment_methods import service as payment_methods
from tests.helpers import assert_error, count_rows
from tests.payment_methods.support import confirm, new_customer, new_setup_intent, publishable

EXPIRY_WORK = "payment_methods.setup_intent_expiry"


def advance(api: Any, seconds: int) -> dict[str, Any]:
    response = api.post("/v1/test-helpers/clock/advance", json={"seconds": seconds})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def read(api: Any, setup_intent: dict[str, Any]) -> dict[str, Any]:
    response = api.get(f"/v1/setup-intents/{setup_intent['id']}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def stored(db: Any, setup_intent: dict[str, Any]) -> tuple[str, str | None]:
    """The row as the database holds it, without a read through the API (which may cancel it)."""
    row = db.execute(
        "SELECT status, cancellation_reason FROM setup_intents WHERE id = %s", (setup_intent["id"],)
    ).fetchone()
    return row[0], row[1]


def assert_confirm_refused_as_expired(client: httpx.Client, setup_intent: dict[str, Any]) -> None:
    error = assert_error(confirm(client, setup_intent), 409, "resource_state_invalid")
    assert "expired" in error["message"] and "abandoned" in error["message"]


def test_an_hour_on_the_sandbox_clock_cancels_a_waiting_setup_intent_as_abandoned(api, db):
    customer = new_customer(api)
    waiting, confirmed = new_setup_intent(api, customer), new_setup_intent(api, customer)
    with publishable(api) as client:
        saved = confirm(client, confirmed)
        assert saved.status_code == 200, saved.text

        assert advance(api, 3500)["work_done"][EXPIRY_WORK] == 0
        before = read(api, waiting)
        assert (before["status"], before["cancellation_reason"]) == ("requires_payment_method", None)

        assert advance(api, 200)["work_done"][EXPIRY_WORK] == 1  # the waiting one; a confirmed one stays
        assert stored(db, waiting) == ("canceled", "abandoned")
        after = read(api, waiting)
        assert after == {**before, "status": "canceled", "cancellation_reason": "abandoned"}
        assert after["payment_method"] is None
        assert read(api, confirmed) == saved.json()
        assert saved.json()["cancellation_reason"] is None

        assert_confirm_refused_as_expired(client, waiting)
    assert count_rows(db, "payment_methods", api.keys.installation_id) == 1  # the confirmed one's card
    assert read(api, waiting) == after
    assert advance(api, 3600)["work_done"][EXPIRY_WORK] == 0  # nothing is abandoned twice


def test_a_read_past_the_expiry_before_any_sweep_shows_it_abandoned_and_keeps_it_so(api, db):
    customer = new_customer(api)
    setup_intent = new_setup_intent(api, customer)
    # past its expiry on this environment's clock, and no sweep came by (no scheduler runs here)
    db.execute(
        "UPDATE setup_intents SET expires_at = now() - interval '1 second' WHERE id = %s",
        (setup_intent["id"],),
    )
    assert stored(db, setup_intent) == ("requires_payment_method", None)

    shown = read(api, setup_intent)
    assert (shown["status"], shown["cancellation_reason"]) == ("canceled", "abandoned")
    assert stored(db, setup_intent) == ("canceled", "abandoned")  # what the read showed is what is kept
    with publishable(api) as client:
        assert_confirm_refused_as_expired(client, setup_intent)
    assert count_rows(db, "payment_methods", api.keys.installation_id) == 0
    assert read(api, setup_intent) == shown


def test_confirming_just_before_the_expiry_still_saves_the_card(api, db):
    customer = new_customer(api)
    setup_intent = new_setup_intent(api, customer)
    advance(api, 3500)
    with publishable(api) as client:
        confirmed = confirm(client, setup_intent)
    assert confirmed.status_code == 200, confirmed.text
    advance(api, 200)
    shown = read(api, setup_intent)
    assert (shown["status"], shown["cancellation_reason"]) == ("succeeded", None)
    assert shown["payment_method"] == confirmed.json()["payment_method"]
    assert stored(db, setup_intent) == ("succeeded", None)


def test_the_scheduler_sweep_abandons_due_setup_intents_on_each_sandbox_clock(bridge, api, db):
    jobs = {job.name: job for job in periodic_jobs()}
    assert EXPIRY_WORK in jobs  # importing workers.scheduler registered it

    customer = new_customer(api)
    due, fresh, confirmed = (new_setup_intent(api, customer) for _ in range(3))
    with publishable(api) as client:
        assert confirm(client, confirmed).status_code == 200
    assert advance(api, 20 * 60)["work_done"][EXPIRY_WORK] == 0  # this sandbox now runs 20 minutes ahead
    # 15 minutes left on real time, 5 minutes past on this sandbox's clock: due for the sweep
    db.execute(
        "UPDATE setup_intents SET expires_at = now() + interval '15 minutes' WHERE id = ANY(%s)",
        ([due["id"], confirmed["id"]],),
    )

    assert bridge.in_unit_of_work(payment_methods.sweep_setup_intents) >= 1
    assert stored(db, due) == ("canceled", "abandoned")
    assert stored(db, fresh) == ("requires_payment_method", None)
    assert stored(db, confirmed) == ("succeeded", None)
    assert (read(api, due)["status"], read(api, fresh)["status"]) == ("canceled", "requires_payment_method")
