"""Webhooks an integrator can debug: event types checked against the registry, endpoints updated and
disabled, secrets rotated with an overlap, every delivery's attempts listed, deliveries resent."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from standardwebhooks import Webhook, WebhookVerificationError

from moneyrail.events.service import record_event
from moneyrail.events.types import EVENT_TYPES
from tests.engine.conftest import create_probe, wait_for_operation
from tests.events.conftest import wait_for
from tests.events.receiver import receiver
from tests.helpers import assert_error

OPERATING_GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "operating.md"


def new_endpoint(api, url: str, events: list[str] | None = None) -> dict:
    created = api.post("/v1/webhook-endpoints", json={"url": url, "enabled_events": events or ["*"]})
    assert created.status_code == 200, created.text
    return created.json()


def deliveries(api, endpoint_id: str) -> list[dict]:
    listed = api.get(f"/v1/webhook-endpoints/{endpoint_id}/deliveries")
    assert listed.status_code == 200, listed.text
    return listed.json()["data"]


def test_an_event_type_the_service_does_not_emit_is_refused(api, db):
    assert_error(
        api.post(
            "/v1/webhook-endpoints",
            json={"url": "http://127.0.0.1:9/x", "enabled_events": ["nonsense.event"]},
        ),
        400,
        "parameter_invalid",
        "enabled_events[0]",
    )
    row = db.execute(
        "SELECT count(*) FROM webhook_endpoints WHERE installation_id = %s", (api.keys.installation_id,)
    ).fetchone()
    assert row[0] == 0
    assert new_endpoint(api, "http://127.0.0.1:9/x", ["refund.updated", "payment_intent.succeeded"])


def test_the_event_types_are_one_registry_in_openapi_and_the_readme(web, api):
    spec = api.get("/openapi.json").json()
    enum_schemas = [schema for schema in spec["components"]["schemas"].values() if "enum" in schema]
    enabled = next(schema for schema in enum_schemas if "payment_intent.succeeded" in schema["enum"])
    assert set(enabled["enum"]) == {"*", *EVENT_TYPES}
    guide = OPERATING_GUIDE.read_text()
    section = guide[guide.index("### Event types") :]
    listed = set(re.findall(r"^\| `([a-z_.]+)` \|", section, flags=re.MULTILINE))
    assert listed == set(EVENT_TYPES)


def test_recording_an_unregistered_event_type_is_a_programming_error(bridge, tenant):
    async def work(session):
        await record_event(session, tenant.tenant, "nonsense.event", {})

    with pytest.raises(ValueError, match="registry"):
        bridge.in_unit_of_work(work)


def test_an_endpoint_is_updated_and_a_bad_update_changes_nothing(api):
    endpoint = new_endpoint(api, "http://127.0.0.1:9/old", ["refund.created"])
    path = f"/v1/webhook-endpoints/{endpoint['id']}"
    updated = api.post(
        path,
        json={"url": "http://127.0.0.1:9/new", "enabled_events": ["refund.updated"], "description": "ops"},
    )
    assert updated.status_code == 200, updated.text
    assert updated.json()["url"] == "http://127.0.0.1:9/new"
    assert updated.json()["enabled_events"] == ["refund.updated"]
    assert updated.json()["description"] == "ops" and updated.json()["secret"] is None
    for body, param in (
        ({"enabled_events": ["nonsense.event"]}, "enabled_events[0]"),
        ({"url": "ftp://example.com/x"}, "url"),
        ({"disabled": "yes"}, "disabled"),
        ({"secret": "whsec_mine"}, "secret"),
    ):
        assert_error(
            api.post(path, json=body),
            400,
            "parameter_unknown" if param == "secret" else "parameter_invalid",
            param,
        )
    shown = api.get(path).json()
    assert (shown["url"], shown["enabled_events"], shown["status"]) == (
        "http://127.0.0.1:9/new",
        ["refund.updated"],
        "enabled",
    )
    assert_error(
        api.post("/v1/webhook-endpoints/we_missing", json={"disabled": True}),
        404,
        "resource_missing",
        "webhook_endpoint",
    )


def test_a_disabled_endpoint_gets_no_deliveries_until_enabled(api, bridge, delivering_stack):
    with receiver() as hooks:
        endpoint = new_endpoint(api, hooks.url, ["operation.succeeded"])
        path = f"/v1/webhook-endpoints/{endpoint['id']}"
        assert api.post(path, json={"disabled": True}).json()["status"] == "disabled"
        wait_for_operation(api, create_probe(bridge, api.keys.tenant), {"succeeded"})
        time.sleep(1)
        assert hooks.deliveries == [] and deliveries(api, endpoint["id"]) == []

        assert api.post(path, json={"disabled": False}).json()["status"] == "enabled"
        wait_for_operation(api, create_probe(bridge, api.keys.tenant), {"succeeded"})
        wait_for(lambda: len(hooks.deliveries) == 1)


def test_each_attempt_shows_its_outcome_answer_code_and_latency(api, bridge, delivering_stack):
    with receiver() as hooks:
        hooks.statuses = [500]
        endpoint = new_endpoint(api, hooks.url, ["operation.succeeded"])
        operation_id = create_probe(bridge, api.keys.tenant)
        wait_for(lambda: len(hooks.deliveries) == 2)
        wait_for(lambda: deliveries(api, endpoint["id"])[0]["status"] == "succeeded")

    (delivery,) = deliveries(api, endpoint["id"])
    event = api.get(f"/v1/events/{delivery['event']}").json()
    assert event["data"]["object"]["id"] == operation_id and delivery["event_type"] == "operation.succeeded"
    assert delivery["id"].startswith("op_") and delivery["webhook_endpoint"] == endpoint["id"]
    first, second = delivery["attempts"]
    assert (first["number"], first["outcome"], first["response_status"]) == (1, "failed", 500)
    assert first["error"] == "endpoint answered HTTP 500"
    assert (second["number"], second["outcome"], second["response_status"], second["error"]) == (
        2,
        "succeeded",
        200,
        None,
    )
    assert all(attempt["latency_ms"] > 0 for attempt in delivery["attempts"])
    assert api.get(f"/v1/webhook-endpoints/{endpoint['id']}/deliveries/{delivery['id']}").json() == delivery


def test_a_receiver_that_is_down_shows_attempts_without_an_answer(api, bridge, delivering_stack):
    endpoint = new_endpoint(api, "http://127.0.0.1:9/nobody-listens", ["operation.succeeded"])
    create_probe(bridge, api.keys.tenant)
    wait_for(
        lambda: (
            deliveries(api, endpoint["id"]) and deliveries(api, endpoint["id"])[0]["status"] == "dead_letter"
        )
    )
    (delivery,) = deliveries(api, endpoint["id"])
    assert delivery["next_attempt_at"] is None  # dead-lettered: nothing more is due
    assert [a["outcome"] for a in delivery["attempts"]] == ["failed"] * 3
    assert {a["response_status"] for a in delivery["attempts"]} == {None}
    assert all(a["error"].startswith("delivery failed: ") for a in delivery["attempts"])


def test_a_delivery_is_resent_as_a_new_delivery_of_the_same_event(api, bridge, delivering_stack):
    with receiver() as hooks:
        endpoint = new_endpoint(api, hooks.url, ["operation.succeeded"])
        create_probe(bridge, api.keys.tenant)
        wait_for(lambda: len(hooks.deliveries) == 1)
        (first,) = deliveries(api, endpoint["id"])
        resent = api.post(f"/v1/webhook-endpoints/{endpoint['id']}/deliveries/{first['id']}/resend")
        assert resent.status_code == 200, resent.text
        assert resent.json()["resend_of"] == first["id"] and resent.json()["event"] == first["event"]
        assert resent.json()["id"] != first["id"] and resent.json()["status"] == "pending"
        assert resent.json()["operation"] == resent.json()["id"]  # it names its operation
        assert api.get(f"/v1/operations/{resent.json()['operation']}").json()["type"] == "webhook_delivery"
        assert abs(resent.json()["next_attempt_at"] - time.time()) < 30
        wait_for(lambda: len(hooks.deliveries) == 2)

    assert {d.headers["webhook-id"] for d in hooks.deliveries} == {first["event"]}
    listed = deliveries(api, endpoint["id"])
    assert [d["id"] for d in listed] == [resent.json()["id"], first["id"]]
    assert_error(
        api.post(f"/v1/webhook-endpoints/{endpoint['id']}/deliveries/op_missing/resend"),
        404,
        "resource_missing",
        "delivery",
    )
    api.post(f"/v1/webhook-endpoints/{endpoint['id']}", json={"disabled": True})
    assert_error(
        api.post(f"/v1/webhook-endpoints/{endpoint['id']}/deliveries/{first['id']}/resend"),
        409,
        "resource_state_invalid",
        "delivery",
    )


def test_a_sandbox_delivery_shows_its_times_on_the_sandbox_clock(api, bridge, delivering_stack):
    """Created, attempted, due again: on the sandbox clock, as its event (CONVENTIONS.md §11). The
    signed `webhook-timestamp` stays on the wall clock: receivers check it against their own."""
    week = 7 * 86_400
    clock_now = api.post("/v1/test-helpers/clock/advance", json={"seconds": week}).json()["now"]
    with receiver() as hooks:
        hooks.statuses = [500]
        endpoint = new_endpoint(api, hooks.url, ["operation.succeeded"])
        create_probe(bridge, api.keys.tenant)
        wait_for(
            lambda: (
                deliveries(api, endpoint["id"])
                and deliveries(api, endpoint["id"])[0]["status"] == "succeeded"
            )
        )
        (delivery,) = deliveries(api, endpoint["id"])
        resent = api.post(f"/v1/webhook-endpoints/{endpoint['id']}/deliveries/{delivery['id']}/resend").json()
        wait_for(lambda: len(hooks.deliveries) == 3)

    event = api.get(f"/v1/events/{delivery['event']}").json()
    assert abs(event["created"] - clock_now) < 120
    assert abs(delivery["created"] - event["created"]) <= 1
    assert [attempt["outcome"] for attempt in delivery["attempts"]] == ["failed", "succeeded"]
    assert all(0 <= attempt["attempted_at"] - delivery["created"] < 120 for attempt in delivery["attempts"])
    assert abs(resent["next_attempt_at"] - clock_now) < 120 and abs(resent["created"] - clock_now) < 120
    assert all(abs(int(hook.headers["webhook-timestamp"]) - time.time()) < 120 for hook in hooks.deliveries)


def test_another_installation_sees_no_endpoint_and_no_delivery(api, make_api):
    endpoint = new_endpoint(api, "http://127.0.0.1:9/x")
    other = make_api()
    for response in (
        other.get(f"/v1/webhook-endpoints/{endpoint['id']}/deliveries"),
        other.post(f"/v1/webhook-endpoints/{endpoint['id']}", json={"disabled": True}),
        other.post(f"/v1/webhook-endpoints/{endpoint['id']}/rotate-secret", json={}),
    ):
        assert_error(response, 404, "resource_missing", "webhook_endpoint")
    assert api.get(f"/v1/webhook-endpoints/{endpoint['id']}").json()["status"] == "enabled"


def test_during_a_rotation_overlap_both_secrets_sign_and_after_it_only_the_new_one(
    api, bridge, delivering_stack
):
    with receiver() as hooks:
        endpoint = new_endpoint(api, hooks.url, ["operation.succeeded"])
        path = f"/v1/webhook-endpoints/{endpoint['id']}/rotate-secret"
        rotated = api.post(path, json={"expire_previous_in_seconds": 3600}).json()
        assert rotated["secret"].startswith("whsec_") and rotated["secret"] != endpoint["secret"]
        assert abs(rotated["previous_secret_expires_at"] - (time.time() + 3600)) < 30
        create_probe(bridge, api.keys.tenant)
        wait_for(lambda: len(hooks.deliveries) == 1)

        at_once = api.post(path, json={"expire_previous_in_seconds": 0}).json()
        assert at_once["previous_secret_expires_at"] is None
        create_probe(bridge, api.keys.tenant)
        wait_for(lambda: len(hooks.deliveries) == 2)

    during, after = hooks.deliveries
    assert len(during.headers["webhook-signature"].split(" ")) == 2
    for secret in (endpoint["secret"], rotated["secret"]):  # a receiver on either secret verifies it
        Webhook(secret).verify(during.body, during.headers)
    Webhook(at_once["secret"]).verify(after.body, after.headers)
    for stale in (endpoint["secret"], rotated["secret"]):
        with pytest.raises(WebhookVerificationError):
            Webhook(stale).verify(after.body, after.headers)
    assert_error(
        api.post(path, json={"expire_previous_in_seconds": 8 * 86400}),
        400,
        "parameter_invalid",
        "expire_previous_in_seconds",
    )
