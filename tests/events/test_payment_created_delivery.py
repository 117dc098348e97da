"""A payment created in one statement (payments/repository.py, `insert_created`) schedules its
`payment_intent.created` deliveries itself: a real worker delivers them, signed, as any other."""

from __future__ import annotations

import json

from standardwebhooks import Webhook

from tests.events.conftest import wait_for
from tests.events.receiver import receiver


def test_a_payment_created_in_one_statement_is_delivered_signed_by_a_real_worker(api, db, delivering_stack):
    with receiver() as hooks:
        endpoint = api.post(
            "/v1/webhook-endpoints", json={"url": hooks.url, "enabled_events": ["payment_intent.created"]}
        ).json()
        created = api.post(
            "/v1/payment-intents",
            json={"amount": 2500, "currency": "eur"},
            headers={"Idempotency-Key": "delivered"},
        )
        assert created.status_code == 200, created.text
        (answer_created_at,) = db.execute(
            "SELECT answer_created_at FROM idempotency_records WHERE installation_id = %s AND key = %s",
            (api.keys.installation_id, "delivered"),
        ).fetchone()
        assert (
            answer_created_at is not None
        )  # the one statement wrote it (the transactional path leaves none)
        wait_for(lambda: len(hooks.deliveries) == 1)
        delivery = hooks.deliveries[0]

    payload = Webhook(endpoint["secret"]).verify(delivery.body, delivery.headers)
    assert payload["type"] == "payment_intent.created"
    assert payload["data"]["object"]["id"] == created.json()["id"]
    assert payload["data"]["object"]["client_secret"] is None  # never sent to receivers
    assert delivery.headers["webhook-id"] == payload["id"]
    assert api.get(f"/v1/events/{payload['id']}").json() == json.loads(delivery.body)

    # the delivery's operation succeeds (recorded once the receiver answered) and the endpoint lists it
    def status() -> str:
        (status,) = db.execute(
            "SELECT o.status FROM webhook_deliveries d JOIN operations o ON o.id = d.id "
            "WHERE d.event_id = %s",
            (payload["id"],),
        ).fetchone()
        return str(status)

    wait_for(lambda: status() == "succeeded")
    listed = api.get(f"/v1/webhook-endpoints/{endpoint['id']}/deliveries").json()["data"]
    assert [(item["event"], item["status"]) for item in listed] == [(payload["id"], "succeeded")]
