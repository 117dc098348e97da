"""CONVENTIONS.md §4: replay, reuse, in flight, what is stored, retention."""

from __future__ import annotations

import concurrent.futures
import time

import httpx
import psycopg

from moneyrail.api.idempotency import advisory_lock_id
from tests.harness import TLS, libpq_url
from tests.helpers import assert_error, count_rows


def test_same_key_same_request_replays_the_stored_answer_without_a_second_effect(api, db):
    body = {"email": "first@example.com", "metadata": {"b": "2", "a": "1"}}
    first = api.post("/v1/customers", json=body, headers={"Idempotency-Key": "create-1"})
    assert first.status_code == 200
    assert "Idempotent-Replayed" not in first.headers
    # the same JSON with its keys in another order is the same request
    again = api.post(
        "/v1/customers",
        json={"metadata": {"a": "1", "b": "2"}, "email": "first@example.com"},
        headers={"Idempotency-Key": "create-1"},
    )
    assert again.status_code == 200
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.content == first.content
    assert count_rows(db, "customers", api.keys.installation_id) == 1


def test_same_key_with_another_body_or_path_is_refused(api, db):
    api.post("/v1/customers", json={"email": "a@example.com"}, headers={"Idempotency-Key": "k"})
    other_body = api.post("/v1/customers", json={"email": "b@example.com"}, headers={"Idempotency-Key": "k"})
    error = assert_error(other_body, 422, "idempotency_key_reused")
    assert error["type"] == "idempotency_error"
    assert count_rows(db, "customers", api.keys.installation_id) == 1


def test_a_key_in_flight_answers_409_and_is_free_once_the_first_request_ends(api, servers, db):
    with psycopg.connect(libpq_url(servers.database_url)) as holder:
        # play the part of a first request still running with this key
        holder.execute("SELECT pg_advisory_xact_lock(%s)", (advisory_lock_id(api.keys.tenant, "busy"),))
        response = api.post(
            "/v1/customers", json={"email": "a@example.com"}, headers={"Idempotency-Key": "busy"}
        )
        assert_error(response, 409, "idempotency_key_in_use")
        assert count_rows(db, "customers", api.keys.installation_id) == 0
        holder.rollback()
    response = api.post("/v1/customers", json={"email": "a@example.com"}, headers={"Idempotency-Key": "busy"})
    assert response.status_code == 200


def test_identical_concurrent_requests_with_one_key_create_one_customer(api, db):
    def create(_: int) -> httpx.Response:
        return api.post(
            "/v1/customers", json={"email": "race@example.com"}, headers={"Idempotency-Key": "race"}
        )

    with concurrent.futures.ThreadPoolExecutor(max_workers=12) as pool:
        responses = list(pool.map(create, range(24)))
    statuses = {response.status_code for response in responses}
    assert statuses <= {200, 409}, [r.text for r in responses]
    ids = {response.json()["id"] for response in responses if response.status_code == 200}
    assert len(ids) == 1
    assert count_rows(db, "customers", api.keys.installation_id) == 1


def test_keys_are_scoped_to_their_installation(make_api):
    one, two = make_api(), make_api()
    first = one.post("/v1/customers", json={"email": "a@example.com"}, headers={"Idempotency-Key": "shared"})
    second = two.post("/v1/customers", json={"email": "a@example.com"}, headers={"Idempotency-Key": "shared"})
    assert first.status_code == second.status_code == 200
    assert "Idempotent-Replayed" not in second.headers
    assert first.json()["id"] != second.json()["id"]


def test_validation_and_authentication_failures_leave_the_key_free(api, web):
    bad = api.post("/v1/customers", json={"email": "nope"}, headers={"Idempotency-Key": "retry-me"})
    assert_error(bad, 400, "parameter_invalid", "email")
    unauthenticated = httpx.post(
        f"{web.base_url}/v1/customers",
        json={"email": "ok@example.com"},
        headers={"Idempotency-Key": "retry-me", "Authorization": "Bearer sk_test_wrong"},
        verify=TLS,
    )
    assert_error(unauthenticated, 401, "invalid_api_key")
    good = api.post(
        "/v1/customers", json={"email": "ok@example.com"}, headers={"Idempotency-Key": "retry-me"}
    )
    assert good.status_code == 200
    assert "Idempotent-Replayed" not in good.headers


def test_malformed_keys_are_refused(api, db):
    for key in (b"x" * 256, b"tab\there", "é-accent".encode()):
        response = api.post("/v1/customers", json={}, headers={"Idempotency-Key": key})
        assert_error(response, 400, "idempotency_key_invalid")
    assert api.post("/v1/customers", json={}, headers={"Idempotency-Key": "x" * 255}).status_code == 200
    assert count_rows(db, "customers", api.keys.installation_id) == 1


def test_a_key_past_its_retention_window_is_free_again(api, db):
    first = api.post("/v1/customers", json={"email": "a@example.com"}, headers={"Idempotency-Key": "old"})
    db.execute(
        "UPDATE idempotency_records SET created_at = now() - interval '25 hours' "
        "WHERE installation_id = %s AND key = 'old'",
        (api.keys.installation_id,),
    )
    again = api.post("/v1/customers", json={"email": "a@example.com"}, headers={"Idempotency-Key": "old"})
    assert again.status_code == 200
    assert "Idempotent-Replayed" not in again.headers
    assert again.json()["id"] != first.json()["id"]


def test_a_first_answer_committed_during_the_one_statement_intake_keeps_the_key(api, servers, db):
    """The keyed create is one statement (claim, customer, stored answer). A first request's answer
    that commits after that statement's snapshot, without holding the key's lock, is invisible to its
    claim: the answer's INSERT then fails on the key, the whole statement (its customer too) goes, and
    the transactional path claims again and sees the first answer (here another body: 422)."""
    # the key and its rate limit remembered: no lookup begins a transaction before the one statement
    assert api.get("/v1/customers").status_code == 200
    with psycopg.connect(libpq_url(servers.database_url)) as first:
        first.execute(
            "INSERT INTO idempotency_records (installation_id, livemode, key, fingerprint, status_code, "
            "response_body) VALUES (%s, false, 'raced', 'another request', 200, %s)",
            (api.keys.installation_id, b"sealed elsewhere"),
        )
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            pending = pool.submit(
                api.post, "/v1/customers", json={"name": "second"}, headers={"Idempotency-Key": "raced"}
            )
            # the second request's answer waits on the first's uncommitted key, then the first commits
            wait_for_a_lock_wait(db)
            first.commit()
            response = pending.result(timeout=30)
    assert_error(response, 422, "idempotency_key_reused")
    assert count_rows(db, "customers", api.keys.installation_id) == 0
    (fingerprint,) = db.execute(
        "SELECT fingerprint FROM idempotency_records WHERE installation_id = %s AND key = 'raced'",
        (api.keys.installation_id,),
    ).fetchone()
    assert fingerprint == "another request"


def wait_for_a_lock_wait(db: psycopg.Connection) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        waiting = db.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock' AND query LIKE '%INSERT INTO idempotency_records%'"
        ).fetchone()
        if waiting is not None and waiting[0] > 0:
            return
        time.sleep(0.02)
    raise AssertionError("the second request never waited on the first's key")


def test_the_purge_job_deletes_only_expired_records(api, db, bridge):
    from datetime import timedelta

    from moneyrail.api.idempotency import purge_expired

    api.post("/v1/customers", json={}, headers={"Idempotency-Key": "fresh"})
    api.post("/v1/customers", json={}, headers={"Idempotency-Key": "stale"})
    db.execute(
        "UPDATE idempotency_records SET created_at = now() - interval '2 days' "
        "WHERE installation_id = %s AND key = 'stale'",
        (api.keys.installation_id,),
    )
    bridge.in_unit_of_work(lambda session: purge_expired(session, timedelta(hours=24)))
    keys = {
        row[0]
        for row in db.execute(
            "SELECT key FROM idempotency_records WHERE installation_id = %s", (api.keys.installation_id,)
        )
    }
    assert keys == {"fresh"}


def test_a_refusal_after_the_request_ran_is_stored_and_replayed(api):
    """4xx from business rules are stored (CONVENTIONS.md §4): the same request gets the same refusal."""
    path = "/v1/webhook-endpoints/we_000000000000000000000000"
    first = api.delete(path, headers={"Idempotency-Key": "refused"})
    assert_error(first, 404, "resource_missing", "webhook_endpoint")
    assert "Idempotent-Replayed" not in first.headers
    again = api.delete(path, headers={"Idempotency-Key": "refused"})
    assert again.status_code == 404
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.content == first.content
    # the key now belongs to that refusal: another request under it is refused as reuse
    assert_error(
        api.post("/v1/customers", json={}, headers={"Idempotency-Key": "refused"}),
        422,
        "idempotency_key_reused",
    )
