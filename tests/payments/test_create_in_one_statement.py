"""A plain payment's create is one self-committing statement: the key's claim, the payment, its
`payment_intent.created` event, a delivery to each endpoint listening for it and the stored answer.
What it answers, stores, announces and schedules must be what the transactional path does for the
same request; the cases it cannot settle alone (more endpoints listening than it made operation ids
for, a record under the key, a refusal to store) take that path and keep nothing of the attempt.
"""

from __future__ import annotations

import re
import threading
from typing import Any

import psycopg
import pytest

from moneyrail.api.idempotency import advisory_lock_id
from moneyrail.engine.repository import NOTIFY_CHANNEL
from moneyrail.kit.tenant import Tenant
from moneyrail.payments.service import DELIVERIES_IN_ONE_STATEMENT
from tests.harness import use_stripe
from tests.helpers import assert_error, count_rows
from tests.payments.support import set_commission

BODY = {
    "amount": 2500,
    "currency": "eur",
    "capture_method": "manual",
    "description": "Commande n° 42 \u2028 «spéciale» </script>",
    "external_reference": "order-42",
    "receipt_email": "ada@example.com",
    # keys in the order jsonb keeps them (shorter first), so that the row read back shows them alike
    "metadata": {"note": 'é"\\/\t☃', "order": "42"},
}
# the caller's order, which an answer rendered from the request keeps (both paths alike)
UNSORTED_BODY = {**BODY, "metadata": {"order": "42", "note": 'é"\\/\t☃'}}
TEN_DAYS = 10 * 86_400


def _warmed(api: Any) -> Any:
    """The web process remembers the environment's publishable key and commission terms; a
    create that must look them up first does so in lone statements of their own. The tests of the one
    statement look them up beforehand, as every create but one per lifetime finds them."""
    assert api.get("/v1/payment-intents").status_code == 200  # the publishable key
    assert api.post("/v1/payment-quotes", json={"amount": 100_000, "currency": "eur"}).status_code == 200
    return api


def _answer_created_at(db: Any, installation_id: str, key: str) -> Any:
    (answer_created_at,) = db.execute(
        "SELECT answer_created_at FROM idempotency_records WHERE installation_id = %s AND key = %s",
        (installation_id, key),
    ).fetchone()
    return answer_created_at


def _advance(api: Any, seconds: int) -> int | None:
    if not seconds:
        return None
    response = api.post("/v1/test-helpers/clock/advance", json={"seconds": seconds})
    assert response.status_code == 200, response.text
    now: int = response.json()["now"]
    return now


def _event_of(db: Any, installation_id: str, payment_id: str) -> str:
    rows = db.execute(
        "SELECT id FROM events WHERE installation_id = %s AND type = 'payment_intent.created' "
        "AND data->'object'->>'id' = %s",
        (installation_id, payment_id),
    ).fetchall()
    assert len(rows) == 1, rows  # one event, whichever path wrote it
    return str(rows[0][0])


def _deliveries_of(db: Any, event_id: str) -> int:
    (count,) = db.execute(
        "SELECT count(*) FROM webhook_deliveries WHERE event_id = %s", (event_id,)
    ).fetchone()
    return int(count)


def _listen(
    api: Any, endpoints: int, enabled_events: tuple[str, ...] = ("payment_intent.created",)
) -> list[str]:
    ids = []
    for number in range(endpoints):
        listening = api.post(
            "/v1/webhook-endpoints",
            json={"url": f"http://127.0.0.1:9/hook-{number}", "enabled_events": list(enabled_events)},
        )
        assert listening.status_code == 200, listening.text
        ids.append(listening.json()["id"])
    return ids


def _without_client_secret(answer: bytes, client_secret: str) -> bytes:
    shown = b'"client_secret":"' + client_secret.encode() + b'"'
    assert answer.count(shown) == 1
    return answer.replace(shown, b'"client_secret":null')


@pytest.mark.parametrize("advanced", [0, TEN_DAYS], ids=["clock-now", "clock-advanced"])
def test_a_keyed_create_answers_replays_and_announces_what_its_stored_row_renders(api, db, advanced):
    """The answer is sealed before the database stamps `created`: the replay, the row read back through
    the ordinary GET (FastAPI's own serialization of the ORM row) and the event agree byte for byte."""
    clock_now = _advance(_warmed(api), advanced)
    headers = {"Idempotency-Key": f"one-statement-{advanced}"}
    first = api.post("/v1/payment-intents", json=BODY, headers=headers)
    assert first.status_code == 200, first.text
    answer = first.json()
    assert (
        answer["status"] == "requires_payment_method"
        and answer["publishable_key"] == api.keys.publishable_key
    )
    if clock_now is not None:
        assert abs(answer["created"] - clock_now) < 120  # on the tenant's clock, not the wall clock

    again = api.post("/v1/payment-intents", json=BODY, headers=headers)
    assert again.status_code == 200 and again.headers["Idempotent-Replayed"] == "true"
    assert again.content == first.content

    read = api.get(f"/v1/payment-intents/{answer['id']}")
    assert read.status_code == 200
    assert _without_client_secret(first.content, answer["client_secret"]) == read.content

    stamped = _answer_created_at(db, api.keys.installation_id, headers["Idempotency-Key"])
    assert stamped is not None and int(stamped.timestamp()) == answer["created"]  # the one statement's

    event_id = _event_of(db, api.keys.installation_id, answer["id"])
    event = api.get(f"/v1/events/{event_id}").json()
    assert event["data"]["object"] == read.json()  # the event shows the stored row, its `created` too
    assert answer["created"] <= event["created"] <= answer["created"] + 60
    assert _deliveries_of(db, event_id) == 0
    assert count_rows(db, "payment_intents", api.keys.installation_id) == 1


def _normalized(content: bytes, *values: str) -> bytes:
    for number, value in enumerate(values):
        content = content.replace(value.encode(), f"<{number}>".encode())
    return re.sub(rb'"created":\d+', b'"created":0', content)


@pytest.mark.parametrize("advanced", [0, TEN_DAYS], ids=["clock-now", "clock-advanced"])
def test_the_one_statement_and_the_transactional_create_answer_and_announce_the_same_bytes(api, db, advanced):
    """Twin requests, the first in one statement, the second on the transactional path (more endpoints
    listen for the event than the one statement schedules deliveries for): answer, replay, read and
    event differ only in the payment's id, secret and moment."""
    _advance(_warmed(api), advanced)
    results = []
    for twin in ("one-statement", "transactional"):
        if twin == "transactional":
            _listen(api, DELIVERIES_IN_ONE_STATEMENT + 1)
        headers = {"Idempotency-Key": f"twin-{twin}-{advanced}"}
        first = api.post("/v1/payment-intents", json=UNSORTED_BODY, headers=headers)
        assert first.status_code == 200, first.text
        answer = first.json()
        again = api.post("/v1/payment-intents", json=UNSORTED_BODY, headers=headers)
        assert again.headers["Idempotent-Replayed"] == "true" and again.content == first.content
        event_id = _event_of(db, api.keys.installation_id, answer["id"])
        assert _deliveries_of(db, event_id) == (
            DELIVERIES_IN_ONE_STATEMENT + 1 if twin == "transactional" else 0
        )
        results.append(
            [
                _normalized(content, answer["client_secret"], answer["id"], event_id)
                for content in (
                    first.content,
                    api.get(f"/v1/payment-intents/{answer['id']}").content,
                    api.get(f"/v1/events/{event_id}").content,
                )
            ]
        )
        answer_created_at = _answer_created_at(db, api.keys.installation_id, headers["Idempotency-Key"])
        # only the one statement stores a template with its moment beside it
        assert (answer_created_at is None) == (twin == "transactional")
    one_statement, transactional = results
    assert one_statement == transactional
    assert count_rows(db, "payment_intents", api.keys.installation_id) == 2


def test_a_live_create_in_one_statement_replays_and_reads_the_same(make_api, bridge, db):
    live = make_api(livemode=True)
    use_stripe(bridge, live.keys.tenant)  # live mode needs a processor; creating calls none
    _warmed(live)
    headers = {"Idempotency-Key": "live-one"}
    first = live.post("/v1/payment-intents", json=BODY, headers=headers)
    assert first.status_code == 200, first.text
    answer = first.json()
    assert answer["livemode"] is True
    again = live.post("/v1/payment-intents", json=BODY, headers=headers)
    assert again.headers["Idempotent-Replayed"] == "true" and again.content == first.content
    read = live.get(f"/v1/payment-intents/{answer['id']}")
    assert _without_client_secret(first.content, answer["client_secret"]) == read.content
    event_id = _event_of(db, live.keys.installation_id, answer["id"])
    assert live.get(f"/v1/events/{event_id}").json()["data"]["object"] == read.json()
    assert _answer_created_at(db, live.keys.installation_id, "live-one") is not None  # the one statement's


@pytest.mark.parametrize("advanced", [0, TEN_DAYS], ids=["clock-now", "clock-advanced"])
def test_a_keyless_create_writes_the_payment_and_its_event_in_one_statement(api, db, advanced):
    clock_now = _advance(_warmed(api), advanced)
    created = api.post("/v1/payment-intents", json=BODY)
    assert created.status_code == 200, created.text
    answer = created.json()
    if clock_now is not None:
        assert abs(answer["created"] - clock_now) < 120
    read = api.get(f"/v1/payment-intents/{answer['id']}")
    assert _without_client_secret(created.content, answer["client_secret"]) == read.content
    event_id = _event_of(db, api.keys.installation_id, answer["id"])
    assert api.get(f"/v1/events/{event_id}").json()["data"]["object"] == read.json()
    assert count_rows(db, "idempotency_records", api.keys.installation_id) == 0


def test_a_stale_record_under_the_key_fails_the_one_statement_and_leaves_one_payment(api, db):
    """The one statement cannot replace a record past its retention (no ON CONFLICT): it fails whole,
    payment and event with it, and the transactional path replaces the record."""
    key = "stale-key"
    _warmed(api)
    db.execute(
        "INSERT INTO idempotency_records (installation_id, livemode, key, fingerprint, status_code, "
        "response_body, created_at) VALUES (%s, false, %s, 'old', 200, 'old', now() - interval '30 days')",
        (api.keys.installation_id, key),
    )
    first = api.post("/v1/payment-intents", json=BODY, headers={"Idempotency-Key": key})
    assert first.status_code == 200, first.text
    again = api.post("/v1/payment-intents", json=BODY, headers={"Idempotency-Key": key})
    assert again.headers["Idempotent-Replayed"] == "true" and again.content == first.content
    assert count_rows(db, "payment_intents", api.keys.installation_id) == 1
    _event_of(db, api.keys.installation_id, first.json()["id"])  # exactly one
    (fingerprint,) = db.execute(
        "SELECT fingerprint FROM idempotency_records WHERE installation_id = %s AND key = %s",
        (api.keys.installation_id, key),
    ).fetchone()
    assert fingerprint != "old"
    assert _answer_created_at(db, api.keys.installation_id, key) is None  # stored by the transactional path


def test_a_key_in_flight_is_refused_by_the_one_statement_and_writes_nothing(api, db):
    key = "in-flight"
    _warmed(api)
    lock = advisory_lock_id(Tenant(api.keys.installation_id, False), key)
    holder = psycopg.connect(db.info.dsn)
    try:
        holder.execute("SELECT pg_advisory_xact_lock(%s)", (lock,))  # another request holds the key
        refused = api.post("/v1/payment-intents", json=BODY, headers={"Idempotency-Key": key})
        assert_error(refused, 409, "idempotency_key_in_use")
        assert count_rows(db, "payment_intents", api.keys.installation_id) == 0
        assert count_rows(db, "events", api.keys.installation_id) == 0
    finally:
        holder.rollback()
        holder.close()
    retried = api.post("/v1/payment-intents", json=BODY, headers={"Idempotency-Key": key})
    assert retried.status_code == 200, retried.text
    assert count_rows(db, "payment_intents", api.keys.installation_id) == 1


def test_a_key_reused_with_another_body_is_refused_and_writes_nothing(api, db):
    headers = {"Idempotency-Key": "reused"}
    _warmed(api)
    assert api.post("/v1/payment-intents", json=BODY, headers=headers).status_code == 200
    other = api.post("/v1/payment-intents", json={**BODY, "amount": 2600}, headers=headers)
    assert_error(other, 422, "idempotency_key_reused")
    assert count_rows(db, "payment_intents", api.keys.installation_id) == 1
    assert count_rows(db, "events", api.keys.installation_id) == 1


def test_refusals_of_the_transactional_path_are_stored_under_the_key(api, bridge, db):
    """An amount below its commission and an unknown customer are refused after the key's claim, as when
    the gate claimed it: the refusal is stored and replayed, and nothing is written."""
    set_commission(bridge, api.keys, basis_points=0, fixed_amount=5_000)  # before the web process reads it
    _warmed(api)
    for name, body, code, param in (
        ("below-commission", {**BODY, "amount": 1_000}, "amount_invalid", "amount"),
        (
            "unknown-customer",
            {**BODY, "amount": 9_000, "customer": "cus_" + "0" * 24},
            "resource_missing",
            "customer",
        ),
    ):
        headers = {"Idempotency-Key": name}
        refused = api.post("/v1/payment-intents", json=body, headers=headers)
        assert_error(refused, 400, code, param)
        again = api.post("/v1/payment-intents", json=body, headers=headers)
        assert again.headers["Idempotent-Replayed"] == "true" and again.content == refused.content
    assert count_rows(db, "payment_intents", api.keys.installation_id) == 0
    assert count_rows(db, "events", api.keys.installation_id) == 0
    covered = api.post(
        "/v1/payment-intents", json={**BODY, "amount": 9_000}, headers={"Idempotency-Key": "ok"}
    )
    assert covered.status_code == 200 and covered.json()["fees"]["reserve"] == 5_000


def test_concurrent_creates_with_one_key_make_one_payment_and_one_event(api, db):
    headers = {"Idempotency-Key": "race"}
    _warmed(api)
    answers: list[Any] = []

    def create() -> None:
        answers.append(api.post("/v1/payment-intents", json=BODY, headers=headers))

    threads = [threading.Thread(target=create) for _ in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    succeeded = [answer for answer in answers if answer.status_code == 200]
    assert succeeded and all(answer.status_code in {200, 409} for answer in answers)
    assert len({answer.content for answer in succeeded}) == 1
    assert count_rows(db, "payment_intents", api.keys.installation_id) == 1
    assert count_rows(db, "events", api.keys.installation_id) == 1


def _operations_of(db: Any, event_id: str) -> list[str]:
    rows = db.execute("SELECT id FROM webhook_deliveries WHERE event_id = %s", (event_id,)).fetchall()
    return [row[0] for row in rows]


def _scheduled(db: Any, event_id: str) -> list[dict[str, Any]]:
    """The event's deliveries and their operations, what either path writes for them: each row's own
    ids and moments checked against each other, then left out (they differ between twins)."""
    rows = db.execute(
        "SELECT to_jsonb(d) AS delivery, to_jsonb(o) AS operation FROM webhook_deliveries d "
        "JOIN operations o ON o.id = d.id WHERE d.event_id = %s ORDER BY d.endpoint_id",
        (event_id,),
    ).fetchall()
    scheduled = []
    for delivery, operation in rows:
        assert operation["resource"] == event_id
        assert operation["payload"] == {"event": event_id, "endpoint": delivery["endpoint_id"]}
        assert delivery["created_at"] == operation["created_at"]
        for column in ("id", "created_at"):
            delivery.pop(column)
        delivery.pop("event_id")
        for column in (
            "id",
            "created_at",
            "updated_at",
            "accepted_at",
            "next_attempt_at",
            "resource",
            "payload",
        ):
            operation.pop(column)
        scheduled.append({"delivery": delivery, "operation": operation})
    return scheduled


@pytest.mark.parametrize("listening", [1, 2], ids=["one-endpoint", "two-endpoints"])
def test_a_create_with_listening_endpoints_schedules_in_one_statement_what_the_transactional_path_does(
    api, db, listening
):
    """Beside the listening endpoints, a disabled one and one for another type get nothing. Twins: a plain
    create (one statement: its answer's moment is stored beside the template) and one for a customer
    (the transactional path: `announce`, then `_schedule_deliveries`) write the same
    deliveries and operations, each endpoint one."""
    _warmed(api)
    listeners = _listen(api, listening)
    (disabled,) = _listen(api, 1)
    assert api.post(f"/v1/webhook-endpoints/{disabled}", json={"disabled": True}).status_code == 200
    _listen(api, 1, ("payment_intent.succeeded",))
    customer = api.post("/v1/customers", json={"name": "Ada"}).json()["id"]
    twins = []
    for twin, body in (("one-statement", BODY), ("transactional", {**BODY, "customer": customer})):
        with psycopg.connect(db.info.dsn, autocommit=True) as relay:
            relay.execute(f"LISTEN {NOTIFY_CHANNEL}")
            created = api.post("/v1/payment-intents", json=body, headers={"Idempotency-Key": twin})
            assert created.status_code == 200, created.text
            # the relay is woken for each operation, at commit (create_operation's notify_relay)
            woken = {notice.payload for notice in relay.notifies(timeout=2, stop_after=listening)}
        event_id = _event_of(db, api.keys.installation_id, created.json()["id"])
        assert woken == set(_operations_of(db, event_id))
        assert (_answer_created_at(db, api.keys.installation_id, twin) is None) == (twin == "transactional")
        twins.append(_scheduled(db, event_id))
    one_statement, transactional = twins
    assert [row["delivery"]["endpoint_id"] for row in one_statement] == sorted(listeners)
    assert one_statement == transactional
    assert one_statement[0]["operation"]["status"] == "pending"


def test_more_listening_endpoints_than_operation_ids_take_the_transactional_path(api, db):
    """The one statement writes nothing (no payment, no event, no delivery, the key free); the
    transactional path then schedules every endpoint's delivery."""
    _warmed(api)
    listeners = _listen(api, DELIVERIES_IN_ONE_STATEMENT + 1)
    created = api.post("/v1/payment-intents", json=BODY, headers={"Idempotency-Key": "many"})
    assert created.status_code == 200, created.text
    assert _answer_created_at(db, api.keys.installation_id, "many") is None  # the transactional path's
    event_id = _event_of(db, api.keys.installation_id, created.json()["id"])
    scheduled = _scheduled(db, event_id)
    assert [row["delivery"]["endpoint_id"] for row in scheduled] == sorted(listeners)
    assert count_rows(db, "payment_intents", api.keys.installation_id) == 1
    assert count_rows(db, "events", api.keys.installation_id) == 1
    again = api.post("/v1/payment-intents", json=BODY, headers={"Idempotency-Key": "many"})
    assert again.headers["Idempotent-Replayed"] == "true" and again.content == created.content
    assert count_rows(db, "webhook_deliveries", api.keys.installation_id) == DELIVERIES_IN_ONE_STATEMENT + 1
