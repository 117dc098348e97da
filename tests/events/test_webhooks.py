"""Events and signed webhook deliveries to a real receiver (CONVENTIONS.md §10)."""

from __future__ import annotations

import json
import time

import pytest
from standardwebhooks import Webhook, WebhookVerificationError

from tests.engine.conftest import create_probe, wait_for_operation
from tests.events.conftest import wait_for
from tests.events.receiver import receiver
from tests.harness import TLS, add_key
from tests.helpers import assert_error


def test_an_endpoint_secret_is_shown_once(api):
    created = api.post(
        "/v1/webhook-endpoints",
        json={"url": "http://127.0.0.1:9/hooks", "enabled_events": ["operation.succeeded"]},
    )
    assert created.status_code == 200, created.text
    endpoint = created.json()
    assert endpoint["id"].startswith("we_") and endpoint["secret"].startswith("whsec_")
    assert api.get(f"/v1/webhook-endpoints/{endpoint['id']}").json()["secret"] is None
    listed = api.get("/v1/webhook-endpoints").json()["data"]
    assert [e["id"] for e in listed] == [endpoint["id"]] and listed[0]["secret"] is None
    deleted = api.delete(f"/v1/webhook-endpoints/{endpoint['id']}")
    assert deleted.json() == {"id": endpoint["id"], "object": "webhook_endpoint", "deleted": True}
    assert_error(
        api.get(f"/v1/webhook-endpoints/{endpoint['id']}"), 404, "resource_missing", "webhook_endpoint"
    )


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"url": "ftp://example.com/x", "enabled_events": ["*"]}, "url"),
        ({"url": "not a url", "enabled_events": ["*"]}, "url"),
        ({"url": "http://user:pw@example.com/x", "enabled_events": ["*"]}, "url"),
        ({"url": "http://127.0.0.1/x", "enabled_events": []}, "enabled_events"),
        ({"url": "http://127.0.0.1/x", "enabled_events": ["Bad Type"]}, "enabled_events[0]"),
    ],
)
def test_bad_endpoints_are_refused(api, db, body, param):
    assert_error(api.post("/v1/webhook-endpoints", json=body), 400, "parameter_invalid", param)
    row = db.execute(
        "SELECT count(*) FROM webhook_endpoints WHERE installation_id = %s", (api.keys.installation_id,)
    )
    assert row.fetchone()[0] == 0


def test_live_endpoints_must_be_https_and_public(web, api, bridge):
    import httpx

    live_key = add_key(bridge, type(api.keys.tenant)(api.keys.installation_id, True), ("*",))
    live = httpx.Client(base_url=web.base_url, headers={"Authorization": f"Bearer {live_key}"}, verify=TLS)
    for url in (
        "http://example.com/hooks",
        "https://127.0.0.1/hooks",
        "https://localhost/hooks",
        "https://10.1.2.3/x",
    ):
        assert_error(
            live.post("/v1/webhook-endpoints", json={"url": url, "enabled_events": ["*"]}),
            400,
            "parameter_invalid",
            "url",
        )
    live.close()


def test_an_event_is_delivered_signed_and_verifiable_with_the_standard_library(api, bridge, delivering_stack):
    with receiver() as hooks:
        endpoint = api.post(
            "/v1/webhook-endpoints", json={"url": hooks.url, "enabled_events": ["operation.succeeded"]}
        ).json()
        operation_id = create_probe(bridge, api.keys.tenant)
        wait_for_operation(api, operation_id, {"succeeded"})
        wait_for(lambda: len(hooks.deliveries) == 1)
        delivery = hooks.deliveries[0]

    payload = Webhook(endpoint["secret"]).verify(delivery.body, delivery.headers)
    assert payload["type"] == "operation.succeeded"
    assert payload["data"]["object"]["id"] == operation_id
    assert payload["data"]["object"]["status"] == "succeeded"
    assert delivery.headers["webhook-id"] == payload["id"]
    # the same event as the API shows it
    assert api.get(f"/v1/events/{payload['id']}").json() == json.loads(delivery.body)
    # a forged signature fails the receiver's check
    forged = {**delivery.headers, "webhook-signature": "v1,AAAA"}
    with pytest.raises(WebhookVerificationError):
        Webhook(endpoint["secret"]).verify(delivery.body, forged)


def test_a_failing_receiver_is_retried_until_it_accepts(api, bridge, delivering_stack):
    with receiver() as hooks:
        hooks.statuses = [500, 503]
        api.post("/v1/webhook-endpoints", json={"url": hooks.url, "enabled_events": ["*"]})
        create_probe(bridge, api.keys.tenant)
        wait_for(lambda: len(hooks.deliveries) == 3)
        time.sleep(0.5)
        assert len(hooks.deliveries) == 3  # accepted on the third try, then no more
    event_ids = {d.headers["webhook-id"] for d in hooks.deliveries}
    assert len(event_ids) == 1  # the same event each time: receivers dedupe by its id


def test_a_receiver_that_never_accepts_dead_letters_the_delivery(api, bridge, db, delivering_stack):
    with receiver() as hooks:
        hooks.statuses = [500] * 10
        api.post("/v1/webhook-endpoints", json={"url": hooks.url, "enabled_events": ["operation.succeeded"]})
        create_probe(bridge, api.keys.tenant)

        def dead_lettered():
            row = db.execute(
                "SELECT status FROM operations WHERE installation_id = %s AND type = 'webhook_delivery'",
                (api.keys.installation_id,),
            ).fetchone()
            return row is not None and row[0] == "dead_letter"

        wait_for(dead_lettered)
        assert len(hooks.deliveries) == 3


def test_events_are_listed_newest_first_and_isolated(api, make_api, bridge, delivering_stack):
    first = create_probe(bridge, api.keys.tenant)
    wait_for_operation(api, first, {"succeeded"})
    api.post(
        "/v1/test-helpers/processor-faults",
        json={"operation_type": "transfer", "mode": "permanent", "count": 1},
    )
    second = create_probe(bridge, api.keys.tenant)
    wait_for_operation(api, second, {"failed"})
    events = api.get("/v1/events").json()["data"]
    assert [(e["type"], e["data"]["object"]["id"]) for e in events] == [
        ("operation.failed", second),
        ("operation.succeeded", first),
    ]
    assert [e["id"] for e in api.get("/v1/events", params={"type": "operation.failed"}).json()["data"]] == [
        events[0]["id"]
    ]
    assert make_api().get("/v1/events").json()["data"] == []
    assert_error(make_api().get(f"/v1/events/{events[0]['id']}"), 404, "resource_missing", "event")
