"""A payment's synchronous steps in atomic phases on an outside processor (payments/phases.py;
ARCHITECTURE.md, "The processor is an outside system"), over HTTP against web processes whose sandbox
processor is reached over the network model (MONEYRAIL_SANDBOX_LATENCY_MS). While a capture's call is on
the network, the web process holds no transaction, no row lock and no advisory lock, the payment reads
as before, and a second step on it is refused with 409. A web process killed after the processor
captured leaves a claim that the same request, retried with its Idempotency-Key, finishes: one
capture, one succeeded event, the ledger whole."""

from __future__ import annotations

import os
import secrets
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from datetime import timedelta
from typing import Any

import httpx
import psycopg
import pytest

from moneyrail.payments.orphans import sweep_orphans
from moneyrail.processor.sandbox import SandboxProcessor
from tests.billing.support import (
    checkout_for,
    customer,
    enable_billing,
    price,
    subscribe,
)
from tests.checkout.support import SUCCESS_URL, card_form, create_session, enable_checkout, session_status
from tests.harness import (
    OUTPUT_DIR,
    TLS,
    Process,
    Servers,
    TenantKeys,
    free_port,
    libpq_url,
    verify_ledger_as_an_operator_does,
    wait_until_ready,
)
from tests.helpers import backends_of
from tests.payments.support import (
    AUTHENTICATE,
    GENERIC_DECLINE,
    RISK_REVIEW,
    SUCCEEDS,
    card,
    claim_of,
    confirm,
    create_payment,
    event_types,
    wait_for,
)

# long enough for the checks to run while the call is on the network, on a loaded machine
SLOW_CALL_MS = "8000"


@contextmanager
def web_process(servers: Servers, log_name: str, **env: str) -> Iterator[tuple[str, Process]]:
    port = free_port()
    process = Process.start("web", servers, OUTPUT_DIR / f"{log_name}.log", MONEYRAIL_PORT=str(port), **env)
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_until_ready(base_url, process)
        yield base_url, process
    finally:
        process.stop()


@pytest.fixture(scope="module")
def web_at_100ms(servers: Servers) -> Iterator[tuple[str, Process]]:
    """A web process whose processor is 100 ms away, shared by the module's tests that only need one."""
    with web_process(servers, "web-step-phases-100ms", MONEYRAIL_SANDBOX_LATENCY_MS="100") as running:
        yield running


@pytest.fixture(scope="module")
def web_far_away(servers: Servers) -> Iterator[tuple[str, Process]]:
    """A web process whose processor calls take SLOW_CALL_MS: long enough to look at the database while
    one is on the network. Shared by the tests that do not kill it."""
    with web_process(servers, "web-step-phases-far", MONEYRAIL_SANDBOX_LATENCY_MS=SLOW_CALL_MS) as running:
        yield running


def authorized(api: httpx.Client) -> dict[str, Any]:
    """A manual-capture payment confirmed on the session's web process (the simulator, one transaction)."""
    payment = create_payment(api, 2000, capture_method="manual")
    confirmed = confirm(api, payment)
    assert confirmed.status_code == 200, confirmed.text
    assert confirmed.json()["status"] == "requires_capture"
    return payment


def simulator_status(db: psycopg.Connection[Any], payment_id: str) -> tuple[str, int]:
    row = db.execute(
        "SELECT a.status, a.amount_captured FROM sandbox_authorizations a "
        "JOIN payment_intents p ON p.processor_authorization = a.id WHERE p.id = %s",
        (payment_id,),
    ).fetchone()
    assert row is not None
    return row[0], row[1]


def in_background(call: Any) -> tuple[threading.Thread, dict[str, Any]]:
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["response"] = call()
        except httpx.HTTPError as error:
            outcome["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def test_a_capture_on_the_network_holds_no_transaction_lock_or_connection_and_a_second_step_waits(
    servers: Servers, api, db, tenant: TenantKeys, web_far_away
):
    payment = authorized(api)
    path = f"/v1/payment-intents/{payment['id']}/capture"
    with (
        nullcontext(web_far_away) as (url, web),
        httpx.Client(base_url=url, headers={"Authorization": f"Bearer {tenant.secret}"}, verify=TLS) as slow,
    ):
        thread, outcome = in_background(
            lambda: slow.post(path, headers={"Idempotency-Key": "capture-1"}, timeout=60)
        )
        wait_for(lambda: claim_of(db, payment["id"])[0] is not None, timeout=30)
        # the call is on the network now (the claim commits just before it)
        backends = backends_of(db, web.popen.pid)
        assert backends, "the web process has connected to the database"
        assert [(pid, state) for pid, state, _ in backends if state != "idle"] == []
        held = db.execute(
            "SELECT locktype, mode FROM pg_locks WHERE pid = ANY(%s)", ([pid for pid, _, _ in backends],)
        ).fetchall()
        assert held == []
        with psycopg.connect(libpq_url(servers.database_url)) as other:
            locked = other.execute(
                "SELECT id, status FROM payment_intents WHERE id = %s FOR UPDATE NOWAIT", (payment["id"],)
            ).fetchall()
            assert locked == [(payment["id"], "requires_capture")]
            other.rollback()
        # the payment reads as before the call; another step on it waits for the call's answer
        assert api.get(f"/v1/payment-intents/{payment['id']}").json()["status"] == "requires_capture"
        second = api.post(path, headers={"Idempotency-Key": "capture-2"})
        assert second.status_code == 409, second.text
        assert second.json()["error"]["code"] == "resource_state_invalid"
        canceled = api.post(f"/v1/payment-intents/{payment['id']}/cancel")
        assert canceled.status_code == 409, canceled.text
        thread.join(60)
    captured = outcome["response"]
    assert captured.status_code == 200, captured.text
    assert (captured.json()["status"], captured.json()["amount_received"]) == ("succeeded", 2000)
    assert claim_of(db, payment["id"]) == (None, None)
    assert simulator_status(db, payment["id"]) == ("captured", 2000)
    # the stored answer replays, byte for byte
    replayed = api.post(path, headers={"Idempotency-Key": "capture-1"})
    assert replayed.headers.get("Idempotent-Replayed") == "true"
    assert replayed.content == captured.content
    assert event_types(api, payment["id"]).count("payment_intent.succeeded") == 1


def test_a_web_process_killed_after_the_processor_captured_is_finished_by_the_same_request_retried(
    servers: Servers, api, db, tenant: TenantKeys
):
    payment = authorized(api)
    path = f"/v1/payment-intents/{payment['id']}/capture"
    headers = {"Authorization": f"Bearer {tenant.secret}", "Idempotency-Key": "capture-crash"}
    with web_process(servers, "web-step-phases-killed", MONEYRAIL_SANDBOX_LATENCY_MS=SLOW_CALL_MS) as (
        url,
        web,
    ):
        thread, outcome = in_background(
            lambda: httpx.post(f"{url}{path}", headers=headers, timeout=60, verify=TLS)
        )
        # the simulator captured (half the round trip); the answer is still on its way back
        wait_for(lambda: simulator_status(db, payment["id"])[0] == "captured", timeout=30)
        os.killpg(web.popen.pid, signal.SIGKILL)
        web.popen.wait(10)
        thread.join(30)
    assert "error" in outcome  # the caller never heard back
    # nothing recorded: the payment reads as before, its claim left behind
    shown = api.get(f"/v1/payment-intents/{payment['id']}").json()
    assert (shown["status"], shown["amount_received"]) == ("requires_capture", 0)
    assert claim_of(db, payment["id"])[0] is not None
    # another request may not capture it while the claim's lease lasts
    other = api.post(path, headers={"Idempotency-Key": "another-capture"})
    assert other.status_code == 409, other.text
    # the process restarted, the same request again: the same processor key answers the same capture
    with web_process(servers, "web-step-phases-restarted", MONEYRAIL_SANDBOX_LATENCY_MS="200") as (url, _):
        retried = httpx.post(f"{url}{path}", headers=headers, timeout=60, verify=TLS)
    assert retried.status_code == 200, retried.text
    assert (retried.json()["status"], retried.json()["amount_received"]) == ("succeeded", 2000)
    assert claim_of(db, payment["id"]) == (None, None)
    assert simulator_status(db, payment["id"]) == ("captured", 2000)
    assert event_types(api, payment["id"]).count("payment_intent.succeeded") == 1
    again = api.post(path, headers={"Idempotency-Key": "capture-crash"})
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert again.json()["status"] == "succeeded"
    verify_ledger_as_an_operator_does(servers)


def test_a_confirm_and_capture_over_the_network_end_as_in_one_transaction(
    servers: Servers, api, db, tenant, web_at_100ms
):
    """The bench's flow (create, confirm with a card, capture) on the phased path, with a key each."""
    with (
        nullcontext(web_at_100ms) as (url, _),
        httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {tenant.secret}"}, timeout=30, verify=TLS
        ) as slow,
    ):
        payment = create_payment(slow, 2000, capture_method="manual")
        body = {"client_secret": payment["client_secret"], "card": card()}
        client_side = {"Authorization": f"Bearer {payment['publishable_key']}", "Idempotency-Key": "c-1"}
        confirmed = slow.post(f"/v1/payment-intents/{payment['id']}/confirm", json=body, headers=client_side)
        assert confirmed.status_code == 200, confirmed.text
        assert confirmed.json()["status"] == "requires_capture"
        replay = slow.post(f"/v1/payment-intents/{payment['id']}/confirm", json=body, headers=client_side)
        assert replay.content == confirmed.content
        increment = slow.post(
            f"/v1/payment-intents/{payment['id']}/increment-authorization", json={"amount": 2500}
        )
        assert increment.status_code == 200, increment.text
        assert increment.json()["amount_capturable"] == 2500
        captured = slow.post(f"/v1/payment-intents/{payment['id']}/capture", headers={"Idempotency-Key": "k"})
        assert captured.status_code == 200, captured.text
        assert (captured.json()["status"], captured.json()["amount_received"]) == ("succeeded", 2500)
        second = create_payment(slow, 1000, capture_method="manual")
        second_body = {**body, "client_secret": second["client_secret"]}
        declined = slow.post(
            f"/v1/payment-intents/{second['id']}/confirm",
            json={**second_body, "card": card(GENERIC_DECLINE)},
            headers={"Authorization": f"Bearer {second['publishable_key']}"},
        )
        assert declined.status_code == 402, declined.text
        assert slow.get(f"/v1/payment-intents/{second['id']}").json()["status"] == "requires_payment_method"
        accepted = slow.post(
            f"/v1/payment-intents/{second['id']}/confirm",
            json=second_body,
            headers={"Authorization": f"Bearer {second['publishable_key']}"},
        )
        assert accepted.status_code == 200, accepted.text
        canceled = slow.post(f"/v1/payment-intents/{second['id']}/cancel")
        assert canceled.status_code == 200, canceled.text
        assert canceled.json()["status"] == "canceled"
    for made in (payment, second):
        assert claim_of(db, made["id"]) == (None, None)
    verify_ledger_as_an_operator_does(servers)


def test_an_unreachable_processor_answers_503_and_releases_the_claim(servers: Servers, api, db, tenant):
    payment = authorized(api)
    path = f"/v1/payment-intents/{payment['id']}/capture"
    with web_process(servers, "web-step-phases-resets", MONEYRAIL_SANDBOX_RESET_RATE="1") as (url, _):
        refused = httpx.post(
            f"{url}{path}",
            headers={"Authorization": f"Bearer {tenant.secret}", "Idempotency-Key": "capture-503"},
            timeout=30,
            verify=TLS,
        )
    assert refused.status_code == 503, refused.text
    assert refused.json()["error"]["code"] == "processor_unavailable"
    assert int(refused.headers["Retry-After"]) >= 1
    assert claim_of(db, payment["id"]) == (None, None)
    assert api.get(f"/v1/payment-intents/{payment['id']}").json()["status"] == "requires_capture"
    # the same key, the processor reachable: captured once
    retried = api.post(path, headers={"Idempotency-Key": "capture-503"})
    assert retried.status_code == 200, retried.text
    assert simulator_status(db, payment["id"]) == ("captured", 2000)


def test_bank_authentication_completes_in_phases_with_automatic_capture(
    servers: Servers, api, db, tenant, web_at_100ms
):
    """The bank's page on the phased path: its answer, then the automatic capture, two calls, then the
    payment recorded once."""
    with (
        nullcontext(web_at_100ms) as (url, _),
        httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {tenant.secret}"}, timeout=30, verify=TLS
        ) as slow,
    ):
        payment = create_payment(slow, 4500)
        started = slow.post(
            f"/v1/payment-intents/{payment['id']}/confirm",
            json={"client_secret": payment["client_secret"], "card": card(AUTHENTICATE)},
            headers={"Authorization": f"Bearer {payment['publishable_key']}"},
        )
        assert started.status_code == 200, started.text
        assert started.json()["status"] == "requires_action"
        page_url = started.json()["next_action"]["redirect_to_url"]["url"]
        assert page_url.startswith(f"{url}/authenticate/")
        done = httpx.post(page_url, data={"decision": "approve"}, timeout=30, verify=TLS)
        assert done.status_code == 200, done.text
        after = slow.get(f"/v1/payment-intents/{payment['id']}").json()
        assert (after["status"], after["amount_received"]) == ("succeeded", 4500)
        assert httpx.post(page_url, data={"decision": "approve"}, timeout=30, verify=TLS).status_code == 404
    assert claim_of(db, payment["id"]) == (None, None)
    assert simulator_status(db, payment["id"]) == ("captured", 4500)
    assert event_types(api, payment["id"]).count("payment_intent.succeeded") == 1


def test_the_hosted_checkout_pays_in_phases_and_a_double_click_meanwhile_is_told_to_wait(
    servers: Servers, api, db, bridge, tenant, web_far_away
):
    enable_checkout(bridge, api.keys)
    payment = create_payment(api, 2000)
    checkout = create_session(api, payment["id"])
    page = "/checkout/" + checkout["checkout_url"].rsplit("/checkout/", 1)[1]
    with nullcontext(web_far_away) as (url, web):
        thread, outcome = in_background(
            lambda: httpx.post(f"{url}{page}", data=card_form(SUCCEEDS), timeout=60, verify=TLS)
        )
        wait_for(lambda: claim_of(db, payment["id"])[0] is not None, timeout=30)
        assert [(pid, state) for pid, state, _ in backends_of(db, web.popen.pid) if state != "idle"] == []
        # the payer clicks again while the bank has not answered: asked to wait, nothing charged twice
        again = httpx.post(f"{api.base_url}{page}", data=card_form(SUCCEEDS), timeout=30, verify=TLS)
        assert again.status_code == 200, again.text
        assert "being processed" in again.text
        thread.join(60)
    paid = outcome["response"]
    assert paid.status_code == 303, paid.text
    assert paid.headers["location"] == SUCCESS_URL
    assert session_status(api, checkout) == "complete"
    after = api.get(f"/v1/payment-intents/{payment['id']}").json()
    assert (after["status"], after["amount_received"]) == ("succeeded", 2000)
    assert claim_of(db, payment["id"]) == (None, None)
    assert event_types(api, payment["id"]).count("payment_intent.succeeded") == 1


def test_a_confirmation_killed_between_its_phases_is_left_alone_until_its_lease_ends_then_released(
    servers: Servers, api, db, bridge, tenant
):
    """The sweep (orphans.py) never releases an authorization whose payment's call is in flight; once
    the claim's lease has ended (the test ends it in the database instead of waiting two minutes), the
    sweep clears the claim and voids the authorization nobody recorded; the payer's retry charges once."""
    payment = create_payment(api, 2000, capture_method="manual")
    body = {"client_secret": payment["client_secret"], "card": card()}
    headers = {"Authorization": f"Bearer {payment['publishable_key']}"}
    path = f"/v1/payment-intents/{payment['id']}/confirm"
    slow = {"MONEYRAIL_SANDBOX_LATENCY_MS": SLOW_CALL_MS}
    with web_process(servers, "web-step-phases-lost", **slow) as (url, web):
        thread, outcome = in_background(
            lambda: httpx.post(f"{url}{path}", json=body, headers=headers, timeout=60, verify=TLS)
        )
        wait_for(lambda: authorizations(db, payment["id"]) == ["authorized"], timeout=60)
        os.killpg(web.popen.pid, signal.SIGKILL)
        web.popen.wait(10)
        thread.join(30)
    assert "error" in outcome
    assert claim_of(db, payment["id"])[0] is not None

    def sweep() -> int:
        network = SandboxProcessor(bridge.sessionmaker)
        return bridge.run(sweep_orphans(bridge.sessionmaker, processor=network, grace=timedelta(0)))

    sweep()
    assert authorizations(db, payment["id"]) == ["authorized"]  # its request may yet record it
    assert claim_of(db, payment["id"])[0] is not None
    db.execute(
        "UPDATE payment_intents SET processor_call_until = now() - interval '1 second' WHERE id = %s",
        (payment["id"],),
    )
    sweep()
    assert claim_of(db, payment["id"]) == (None, None)
    assert authorizations(db, payment["id"]) == ["canceled"]
    retried = confirm(api, payment)
    assert retried.status_code == 200, retried.text
    assert retried.json()["status"] == "requires_capture"
    assert authorizations(db, payment["id"]) == ["canceled", "authorized"]
    verify_ledger_as_an_operator_does(servers)


def authorizations(db: psycopg.Connection[Any], payment_id: str) -> list[str]:
    rows = db.execute(
        "SELECT status FROM sandbox_authorizations WHERE reference = %s ORDER BY created_at", (payment_id,)
    ).fetchall()
    return [row[0] for row in rows]


def test_a_review_approval_captures_in_phases(servers: Servers, api, db, tenant, web_at_100ms):
    """A capture of a payment held for review is refused before any call (the hold is a fact the
    claim's statement reads); a step that reaches its payment through another object (here the
    review's approval) claims the first payment it locks."""
    payment = create_payment(api, 2000)
    held = confirm(api, payment, RISK_REVIEW)
    assert held.json()["status"] == "requires_capture"
    reviews = api.get("/v1/radar/reviews", params={"limit": 100}).json()["data"]
    (review,) = [review for review in reviews if review["payment_intent"] == payment["id"]]
    with (
        nullcontext(web_at_100ms) as (url, _),
        httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {tenant.secret}"}, timeout=30, verify=TLS
        ) as slow,
    ):
        # the first step of a web process reads the environment's processor settings (then kept), in a
        # transaction the step then runs in; the next ones start with the claim
        assert slow.post("/v1/payment-intents/pi_missing0000000000000000/capture").status_code == 404
        refused = slow.post(f"/v1/payment-intents/{payment['id']}/capture")
        assert refused.status_code == 409, refused.text
        assert "held for a risk review" in refused.json()["error"]["message"]
        assert claim_of(db, payment["id"]) == (None, None)
        assert simulator_status(db, payment["id"]) == ("authorized", 0)
        approved = slow.post(f"/v1/radar/reviews/{review['id']}/approve")
        assert approved.status_code == 200, approved.text
    after = api.get(f"/v1/payment-intents/{payment['id']}").json()
    assert (after["status"], after["amount_received"]) == ("succeeded", 2000)
    assert claim_of(db, payment["id"]) == (None, None)
    assert event_types(api, payment["id"]).count("payment_intent.succeeded") == 1


def test_expiring_a_checkout_cancels_its_payment_at_the_processor_holding_no_transaction_or_lock(
    servers: Servers, api, db, bridge, tenant, web_far_away
):
    """The payer left the bank's page of a hosted checkout; the merchant expires the session: the
    payment's authorization is cancelled at the processor in phases."""
    enable_checkout(bridge, api.keys)
    payment = create_payment(api, 2600)
    checkout = create_session(api, payment["id"])
    page = "/checkout/" + checkout["checkout_url"].rsplit("/checkout/", 1)[1]
    left = httpx.post(f"{api.base_url}{page}", data=card_form(AUTHENTICATE), timeout=30, verify=TLS)
    assert left.status_code == 303, left.text  # to the bank's page, which the payer never answers
    assert api.get(f"/v1/payment-intents/{payment['id']}").json()["status"] == "requires_action"
    path = f"/v1/checkout-sessions/{checkout['id']}/expire"
    with (
        nullcontext(web_far_away) as (url, web),
        httpx.Client(base_url=url, headers={"Authorization": f"Bearer {tenant.secret}"}, verify=TLS) as slow,
    ):
        thread, outcome = in_background(lambda: slow.post(path, json={}, timeout=60))
        wait_for(lambda: claim_of(db, payment["id"])[0] is not None, timeout=30)
        assert [(pid, state) for pid, state, _ in backends_of(db, web.popen.pid) if state != "idle"] == []
        with psycopg.connect(libpq_url(servers.database_url)) as other:
            for table, row_id in (("checkout_sessions", checkout["id"]), ("payment_intents", payment["id"])):
                locked = other.execute(f"SELECT id FROM {table} WHERE id = %s FOR UPDATE NOWAIT", (row_id,))
                assert locked.fetchall() == [(row_id,)]
            other.rollback()
        assert session_status(api, checkout) == "open"  # as before the call, until it answers
        thread.join(60)
    expired = outcome["response"]
    assert expired.status_code == 200, expired.text
    assert expired.json()["status"] == "expired"
    after = api.get(f"/v1/payment-intents/{payment['id']}").json()
    assert (after["status"], after["cancellation_reason"]) == ("canceled", "abandoned")
    assert claim_of(db, payment["id"]) == (None, None)
    assert event_types(api, payment["id"]).count("payment_intent.canceled") == 1


def rows_lockable_now(servers: Servers, rows: list[tuple[str, str]]) -> None:
    """Each (table, id) row can be locked at once by another connection: nobody holds it."""
    with psycopg.connect(libpq_url(servers.database_url)) as other:
        for table, row_id in rows:
            locked = other.execute(f"SELECT id FROM {table} WHERE id = %s FOR UPDATE NOWAIT", (row_id,))
            assert locked.fetchall() == [(row_id,)]
        other.rollback()


def left_at_the_bank(checkout: dict[str, Any]) -> None:
    """The payer chose a card that needs authentication and never answered the bank's page."""
    left = httpx.post(
        checkout["checkout_url"], data=card_form(AUTHENTICATE, renew_consent="yes"), timeout=30, verify=TLS
    )
    assert left.status_code == 303 and left.headers["location"] != SUCCESS_URL, left.text


def test_cancelling_a_subscription_voids_its_first_payment_holding_nothing_during_the_call(
    servers: Servers, api, db, bridge, tenant: TenantKeys, web_far_away
):
    """An incomplete subscription whose first payment was left at the bank's page: cancelling it cancels
    that payment at the processor in phases, with no transaction, row lock or busy connection held while
    the call is out. (Withdrawing a change runs in phases too, but cancels only a difference payment not
    yet confirmed, which holds no authorization: no processor call to watch.)"""
    enable_billing(bridge, api.keys)
    incomplete = subscribe(api, price(api, 900)["id"], customer(api)["id"])
    first = checkout_for(api, incomplete["id"])
    left_at_the_bank(first)
    payment_id = first["payment_intent"]
    assert api.get(f"/v1/payment-intents/{payment_id}").json()["status"] == "requires_action"
    path = f"/v1/subscriptions/{incomplete['id']}/cancel"
    with (
        nullcontext(web_far_away) as (url, web),
        httpx.Client(base_url=url, headers={"Authorization": f"Bearer {tenant.secret}"}, verify=TLS) as slow,
    ):
        thread, outcome = in_background(
            lambda: slow.post(path, json={}, headers={"Idempotency-Key": path}, timeout=60)
        )
        wait_for(lambda: claim_of(db, payment_id)[0] is not None or outcome, timeout=30)
        assert not outcome, outcome["response"].text  # answered before its call was even out
        assert [(pid, state) for pid, state, _ in backends_of(db, web.popen.pid) if state != "idle"] == []
        rows_lockable_now(servers, [("subscriptions", incomplete["id"]), ("payment_intents", payment_id)])
        assert api.get(f"/v1/subscriptions/{incomplete['id']}").json()["status"] == "incomplete"
        thread.join(60)
    canceled = outcome["response"]
    assert canceled.status_code == 200, canceled.text
    assert canceled.json()["status"] == "canceled"
    after = api.get(f"/v1/payment-intents/{payment_id}").json()
    assert (after["status"], after["cancellation_reason"]) == ("canceled", "abandoned")
    assert claim_of(db, payment_id) == (None, None)
    assert event_types(api, payment_id).count("payment_intent.canceled") == 1


def value_list(api: httpx.Client, item_type: str, action: str, value: str) -> None:
    created = api.post(
        "/v1/radar/value-lists",
        json={
            "alias": f"phases_{action}_{secrets.token_hex(4)}",
            "name": f"{action} in phases",
            "item_type": item_type,
            "action": action,
        },
    )
    assert created.status_code == 200, created.text
    added = api.post(f"/v1/radar/value-lists/{created.json()['id']}/items", json={"value": value})
    assert added.status_code == 200, added.text


def test_a_new_card_is_tokenized_screened_and_authorized_in_one_phase_holding_nothing_meanwhile(
    servers: Servers, api, db, tenant: TenantKeys, web_at_100ms, web_far_away
):
    """A confirm with a new card makes the processor's `tokenize_and_authorize` exchange in one phase, the
    step's risk screen run in between (its `card_risk` call, the customer's e-mail and the value lists
    read there): while the exchange is on the network the web process holds no transaction, lock or
    busy connection; a listed e-mail is declined as fraudulent with nothing authorized, another opens a
    review, and neither falls back to one call a phase."""
    tag = secrets.token_hex(4)
    blocked = api.post("/v1/customers", json={"email": f"blocked-{tag}@example.com"}).json()
    reviewed = api.post("/v1/customers", json={"email": f"reviewed-{tag}@example.com"}).json()
    value_list(api, "email", "block", blocked["email"])
    value_list(api, "email", "review", reviewed["email"])
    plain = create_payment(api, 2000, capture_method="manual")
    with nullcontext(web_far_away) as (url, web):
        logged_before = len(web.log_text())
        path = f"{url}/v1/payment-intents/{plain['id']}/confirm"
        headers = {"Authorization": f"Bearer {plain['publishable_key']}", "Idempotency-Key": "exchange-1"}
        body = {"client_secret": plain["client_secret"], "card": card()}
        thread, outcome = in_background(
            lambda: httpx.post(path, json=body, headers=headers, timeout=60, verify=TLS)
        )
        wait_for(lambda: claim_of(db, plain["id"])[0] is not None, timeout=30)
        backends = backends_of(db, web.popen.pid)
        assert [(pid, state) for pid, state, _ in backends if state != "idle"] == []
        held = db.execute(
            "SELECT locktype, mode FROM pg_locks WHERE pid = ANY(%s)", ([pid for pid, _, _ in backends],)
        ).fetchall()
        assert held == []
        thread.join(60)
    confirmed = outcome["response"]
    assert confirmed.status_code == 200, confirmed.text
    assert confirmed.json()["status"] == "requires_capture"
    assert claim_of(db, plain["id"]) == (None, None)
    assert authorizations(db, plain["id"]) == ["authorized"]
    with (
        nullcontext(web_at_100ms) as (url, near),
        httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {tenant.secret}"}, timeout=30, verify=TLS
        ) as slow,
    ):
        near_logged_before = len(near.log_text())
        listed = create_payment(slow, 2000, capture_method="manual", customer=blocked["id"])
        declined = confirm(slow, listed)
        assert declined.status_code == 402, declined.text
        assert declined.json()["error"]["decline_code"] == "fraudulent"
        assert authorizations(db, listed["id"]) == []
        held_payment = create_payment(slow, 2000, capture_method="manual", customer=reviewed["id"])
        under_review = confirm(slow, held_payment)
        assert under_review.status_code == 200, under_review.text
        assert authorizations(db, held_payment["id"]) == ["authorized"]
        reviews = api.get("/v1/radar/reviews", params={"limit": 100}).json()["data"]
        assert [r["status"] for r in reviews if r["payment_intent"] == held_payment["id"]] == ["open"]
    for made in (plain, listed, held_payment):
        assert claim_of(db, made["id"]) == (None, None)
    # what the shared processes logged during this test (a line is written and flushed as it is logged)
    assert "payment_exchange_stepwise" not in web.log_text()[logged_before:]
    assert "payment_exchange_stepwise" not in near.log_text()[near_logged_before:]


def test_a_step_that_needs_no_call_or_is_refused_leaves_no_claim_and_a_replay_claims_nothing(
    api, db, tenant, web_at_100ms
):
    """A phased step's first statement claims its payment; a step that then makes no call (a cancel
    before any authorization) is written under the payment's lock all the same, and one refused
    before its call (a capture of an unconfirmed payment) or on a payment that does not exist leaves
    nothing behind. A replay of a finished step answers as the first time and claims nothing."""
    unconfirmed = create_payment(api, 2000, capture_method="manual")
    to_cancel = create_payment(api, 2000, capture_method="manual")
    to_capture = authorized(api)
    with (
        nullcontext(web_at_100ms) as (url, _),
        httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {tenant.secret}"}, timeout=30, verify=TLS
        ) as slow,
    ):
        refused = slow.post(f"/v1/payment-intents/{unconfirmed['id']}/capture")
        assert refused.status_code == 409, refused.text
        assert refused.json()["error"]["code"] == "resource_state_invalid"
        missing = slow.post("/v1/payment-intents/pi_missing0000000000000000/capture")
        assert missing.status_code == 404, missing.text

        canceled = slow.post(
            f"/v1/payment-intents/{to_cancel['id']}/cancel", headers={"Idempotency-Key": "cancel-no-call"}
        )
        assert canceled.status_code == 200, canceled.text
        assert canceled.json()["status"] == "canceled"

        path = f"/v1/payment-intents/{to_capture['id']}/capture"
        captured = slow.post(path, headers={"Idempotency-Key": "capture-replayed"})
        assert captured.status_code == 200, captured.text
        replayed = slow.post(path, headers={"Idempotency-Key": "capture-replayed"})
        assert (replayed.status_code, replayed.json()) == (200, captured.json())
    for payment in (unconfirmed, to_cancel, to_capture):
        assert claim_of(db, payment["id"]) == (None, None)
    assert api.get(f"/v1/payment-intents/{unconfirmed['id']}").json()["status"] == "requires_payment_method"
    assert event_types(api, to_cancel["id"]).count("payment_intent.canceled") == 1
    assert event_types(api, to_capture["id"]).count("payment_intent.succeeded") == 1
    assert simulator_status(db, to_capture["id"]) == ("captured", 2000)


def test_a_saved_card_blocked_by_a_risk_list_is_declined_once_under_the_lock_and_leaves_no_claim(
    api, db, tenant, web_at_100ms
):
    """A saved card is screened before any call, in the run whose lock is the claim: a block keeps its
    effect (the decline), so that run is written again under the payment's lock, once."""
    token = secrets.token_hex(4)
    email = f"blocked-{token}@example.com"
    blocks = api.post(
        "/v1/radar/value-lists",
        json={"alias": f"blocked_{token}", "name": "blocked", "item_type": "email", "action": "block"},
    )
    assert blocks.status_code == 200, blocks.text
    added = api.post(f"/v1/radar/value-lists/{blocks.json()['id']}/items", json={"value": email})
    assert added.status_code == 200, added.text
    buyer = customer(api)
    first = confirm(api, create_payment(api, 1000, customer=buyer["id"]), save_payment_method=True)
    assert first.status_code == 200, first.text
    payment = create_payment(api, 2000, customer=buyer["id"], receipt_email=email)
    url, _ = web_at_100ms
    declined = httpx.post(
        f"{url}/v1/payment-intents/{payment['id']}/confirm",
        json={"client_secret": payment["client_secret"], "payment_method": first.json()["payment_method"]},
        headers={"Authorization": f"Bearer {payment['publishable_key']}"},
        timeout=30,
        verify=TLS,
    )
    assert declined.status_code == 402, declined.text
    assert declined.json()["error"]["decline_code"] == "fraudulent"
    assert claim_of(db, payment["id"]) == (None, None)
    read = api.get(f"/v1/payment-intents/{payment['id']}").json()
    assert read["status"] == "requires_payment_method"
    assert read["last_payment_error"]["decline_code"] == "fraudulent"
    assert event_types(api, payment["id"]).count("payment_intent.payment_failed") == 1


def test_steps_racing_for_one_payment_claim_it_once_and_the_processor_acts_once(
    servers: Servers, api, db, tenant, web_at_100ms
):
    """Captures and cancels sent at once, each with its own key: the claim is one UPDATE whose
    condition is checked again on the row another claimer left, so one step calls the processor and
    the others are refused (409) before any call of theirs."""
    payment = authorized(api)
    url, _ = web_at_100ms
    steps = [("capture", index) for index in range(3)] + [("cancel", index) for index in range(3)]
    start = threading.Barrier(len(steps))
    answers: list[httpx.Response] = []

    def send(step: str, index: int) -> None:
        headers = {"Authorization": f"Bearer {tenant.secret}", "Idempotency-Key": f"race-{step}-{index}"}
        start.wait(10)
        answers.append(
            httpx.post(
                f"{url}/v1/payment-intents/{payment['id']}/{step}", headers=headers, timeout=30, verify=TLS
            )
        )

    threads = [threading.Thread(target=send, args=step) for step in steps]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(answer.status_code for answer in answers) == [200, 409, 409, 409, 409, 409], [
        answer.text for answer in answers
    ]
    assert {answer.json()["error"]["code"] for answer in answers if answer.status_code == 409} == {
        "resource_state_invalid"
    }
    (won,) = [answer.json() for answer in answers if answer.status_code == 200]
    assert claim_of(db, payment["id"]) == (None, None)
    events = event_types(api, payment["id"])
    if won["status"] == "succeeded":
        assert simulator_status(db, payment["id"]) == ("captured", 2000)
        assert (events.count("payment_intent.succeeded"), events.count("payment_intent.canceled")) == (1, 0)
    else:
        assert won["status"] == "canceled"
        assert simulator_status(db, payment["id"]) == ("canceled", 0)
        assert (events.count("payment_intent.succeeded"), events.count("payment_intent.canceled")) == (0, 1)
    verify_ledger_as_an_operator_does(servers)
