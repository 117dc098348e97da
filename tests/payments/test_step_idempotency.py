"""CONVENTIONS.md §4 on the payment steps (confirm, capture), whose Idempotency-Key claim runs in the
payment's lock statement and whose stored answer is written by the payment's UPDATE and event statement:
the same answers as when the gate claimed the key first and the route stored the answer after."""

from __future__ import annotations

import concurrent.futures
from typing import Any

import httpx
import psycopg

from moneyrail.api.idempotency import advisory_lock_id
from tests.api.test_idempotency import wait_for_a_lock_wait
from tests.harness import TLS, libpq_url
from tests.helpers import assert_error
from tests.payments.support import GENERIC_DECLINE, card, create_payment


def confirm_with_key(api: Any, payment: dict[str, Any], key: str, **fields: Any) -> httpx.Response:
    body = {"client_secret": payment["client_secret"], "card": card(), **fields}
    headers = {"Authorization": f"Bearer {payment['publishable_key']}", "Idempotency-Key": key}
    return httpx.post(
        f"{api.base_url}/v1/payment-intents/{payment['id']}/confirm",
        json=body,
        headers=headers,
        timeout=30,
        verify=TLS,
    )


def payment_row(db: Any, payment_id: str) -> tuple[Any, ...]:
    row = db.execute(
        "SELECT status, confirmations, amount_received, updated_at FROM payment_intents WHERE id = %s",
        (payment_id,),
    ).fetchone()
    assert row is not None
    return tuple(row)


def test_a_step_whose_key_is_in_flight_answers_409_at_once_though_the_payment_is_locked(api, servers, db):
    payment = create_payment(api, capture_method="manual")
    assert confirm_with_key(api, payment, "confirm-1").status_code == 200
    with psycopg.connect(libpq_url(servers.database_url)) as holder:
        # a first capture with this key still running: it holds the key's lock and the payment's row
        holder.execute("SELECT pg_advisory_xact_lock(%s)", (advisory_lock_id(api.keys.tenant, "busy"),))
        holder.execute("SELECT 1 FROM payment_intents WHERE id = %s FOR UPDATE", (payment["id"],))
        # were the payment locked before the claim was looked at, this would wait for the holder (timeout)
        response = api.post(
            f"/v1/payment-intents/{payment['id']}/capture", headers={"Idempotency-Key": "busy"}, timeout=10
        )
        assert_error(response, 409, "idempotency_key_in_use")
        holder.rollback()
    assert payment_row(db, payment["id"])[0] == "requires_capture"
    # the key was not stored: once the first request is gone, it captures
    response = api.post(f"/v1/payment-intents/{payment['id']}/capture", headers={"Idempotency-Key": "busy"})
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "succeeded"


def test_a_confirmation_whose_key_is_in_flight_answers_409_and_changes_nothing(api, servers, db):
    payment = create_payment(api)
    before = payment_row(db, payment["id"])
    with psycopg.connect(libpq_url(servers.database_url)) as holder:
        holder.execute("SELECT pg_advisory_xact_lock(%s)", (advisory_lock_id(api.keys.tenant, "busy-c"),))
        holder.execute("SELECT 1 FROM payment_intents WHERE id = %s FOR UPDATE", (payment["id"],))
        assert_error(confirm_with_key(api, payment, "busy-c"), 409, "idempotency_key_in_use")
        holder.rollback()
    assert payment_row(db, payment["id"]) == before
    assert confirm_with_key(api, payment, "busy-c").json()["status"] == "succeeded"


def test_steps_replay_byte_identical_answers_without_a_second_effect(api, db):
    payment = create_payment(api, capture_method="manual")
    confirmed = confirm_with_key(api, payment, "confirm-replay")
    assert confirmed.status_code == 200, confirmed.text
    after_confirm = payment_row(db, payment["id"])
    again = confirm_with_key(api, payment, "confirm-replay")
    assert again.status_code == 200
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.content == confirmed.content
    assert payment_row(db, payment["id"]) == after_confirm

    path = f"/v1/payment-intents/{payment['id']}/capture"
    captured = api.post(path, headers={"Idempotency-Key": "capture-replay"})
    assert captured.status_code == 200, captured.text
    after_capture = payment_row(db, payment["id"])
    replayed = api.post(path, headers={"Idempotency-Key": "capture-replay"})
    assert replayed.status_code == 200
    assert replayed.headers["Idempotent-Replayed"] == "true"
    assert replayed.content == captured.content
    assert payment_row(db, payment["id"]) == after_capture
    transactions = db.execute(
        "SELECT count(*) FROM journal_transactions WHERE installation_id = %s AND kind = 'payment_capture'",
        (api.keys.installation_id,),
    ).fetchone()
    assert transactions is not None and transactions[0] == 1  # captured, and posted, once


def test_a_key_reused_on_a_step_with_another_body_is_refused_and_changes_nothing(api, db):
    payment = create_payment(api, capture_method="manual")
    assert confirm_with_key(api, payment, "confirm-once").status_code == 200
    after_confirm = payment_row(db, payment["id"])
    path = f"/v1/payment-intents/{payment['id']}/capture"
    reused = api.post(path, json={"amount_to_capture": 2000}, headers={"Idempotency-Key": "confirm-once"})
    assert_error(reused, 422, "idempotency_key_reused")
    assert payment_row(db, payment["id"]) == after_confirm


def test_a_step_on_an_unknown_payment_stores_its_404_under_the_key(api):
    path = "/v1/payment-intents/pi_000000000000000000000000/capture"
    first = api.post(path, headers={"Idempotency-Key": "unknown"})
    assert_error(first, 404, "resource_missing", "payment_intent")
    again = api.post(path, headers={"Idempotency-Key": "unknown"})
    assert again.status_code == 404
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.content == first.content


def test_a_step_of_another_tenant_with_the_same_key_is_its_own(make_api, api, db):
    payment = create_payment(api, capture_method="manual")
    assert confirm_with_key(api, payment, "shared").status_code == 200
    other = make_api()
    # the other tenant's key of the same name locks nothing of this tenant's and finds no such payment
    response = other.post(
        f"/v1/payment-intents/{payment['id']}/capture", headers={"Idempotency-Key": "shared"}
    )
    assert_error(response, 404, "resource_missing", "payment_intent")
    assert payment_row(db, payment["id"])[0] == "requires_capture"


def stored_fingerprint(db: Any, installation_id: str, key: str) -> str | None:
    row = db.execute(
        "SELECT fingerprint FROM idempotency_records WHERE installation_id = %s AND key = %s",
        (installation_id, key),
    ).fetchone()
    return None if row is None else str(row[0])


def test_a_record_past_its_retention_under_the_key_is_replaced_by_the_steps_answer(api, db):
    assert api.post("/v1/customers", json={}, headers={"Idempotency-Key": "old"}).status_code == 200
    customer_fingerprint = stored_fingerprint(db, api.keys.installation_id, "old")
    db.execute(
        "UPDATE idempotency_records SET created_at = now() - interval '25 hours' "
        "WHERE installation_id = %s AND key = 'old'",
        (api.keys.installation_id,),
    )
    payment = create_payment(api)
    confirmed = confirm_with_key(api, payment, "old")
    assert confirmed.status_code == 200, confirmed.text
    assert stored_fingerprint(db, api.keys.installation_id, "old") != customer_fingerprint
    again = confirm_with_key(api, payment, "old")
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.content == confirmed.content


def test_a_first_answer_committed_while_the_step_ran_keeps_the_key_and_undoes_the_step(api, servers, db):
    """A first request's answer that commits after the step's claim looked (without holding the key's
    lock) is invisible to it: the step's answer, written by its last statement, fails on the key; the
    step rolls back whole and answers 409, and its retry sees the first answer."""
    payment = create_payment(api, capture_method="manual")
    assert confirm_with_key(api, payment, "confirm-raced").status_code == 200
    before = payment_row(db, payment["id"])
    path = f"/v1/payment-intents/{payment['id']}/capture"
    with psycopg.connect(libpq_url(servers.database_url)) as first:
        first.execute(
            "INSERT INTO idempotency_records (installation_id, livemode, key, fingerprint, status_code, "
            "response_body) VALUES (%s, false, 'raced', 'another request', 200, %s)",
            (api.keys.installation_id, b"sealed elsewhere"),
        )
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            pending = pool.submit(api.post, path, headers={"Idempotency-Key": "raced"})
            wait_for_a_lock_wait(db)  # the capture's last statement waits on the first's key
            first.commit()
            response = pending.result(timeout=30)
    assert_error(response, 409, "idempotency_key_in_use")
    assert payment_row(db, payment["id"]) == before  # not captured: nothing of the step stayed
    assert stored_fingerprint(db, api.keys.installation_id, "raced") == "another request"
    transactions = db.execute(
        "SELECT count(*) FROM journal_transactions WHERE installation_id = %s AND kind = 'payment_capture'",
        (api.keys.installation_id,),
    ).fetchone()
    assert transactions is not None and transactions[0] == 0
    assert_error(api.post(path, headers={"Idempotency-Key": "raced"}), 422, "idempotency_key_reused")
    assert api.post(path, headers={"Idempotency-Key": "raced-retry"}).json()["status"] == "succeeded"


def test_a_declined_confirmation_is_stored_with_its_decline_and_replayed(api, db):
    payment = create_payment(api)
    body = {"client_secret": payment["client_secret"], "card": card(GENERIC_DECLINE)}
    headers = {"Authorization": f"Bearer {payment['publishable_key']}", "Idempotency-Key": "declined"}
    url = f"{api.base_url}/v1/payment-intents/{payment['id']}/confirm"
    declined = httpx.post(url, json=body, headers=headers, timeout=30, verify=TLS)
    assert_error(declined, 402, "card_declined")
    after = payment_row(db, payment["id"])
    assert after[0] == "requires_payment_method"
    again = httpx.post(url, json=body, headers=headers, timeout=30, verify=TLS)
    assert again.status_code == 402
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.content == declined.content
    assert payment_row(db, payment["id"]) == after
