"""One clock in a sandbox's answers (CONVENTIONS.md §11, issue 30.4): after an advance, an operation is
created and updated on the sandbox clock, like the object it carries out and the events about both, on
every path that writes operations (one by one, in a batch, inside a route's single statement)."""

from __future__ import annotations

import time
from typing import Any

import httpx

from moneyrail.engine.service import create_operations
from tests.connect.support import create_account
from tests.engine.probe import PROBE_ACTOR, PROBE_TYPE
from tests.payments.support import create_payment, paid

SEVEN_DAYS = 7 * 86_400


def advance_a_week(api: httpx.Client) -> int:
    advanced = api.post("/v1/test-helpers/clock/advance", json={"seconds": SEVEN_DAYS})
    assert advanced.status_code == 200, advanced.text
    clock_now: int = advanced.json()["now"]
    assert clock_now - time.time() > SEVEN_DAYS - 120
    return clock_now


def same_second(first: int, second: int) -> bool:
    """Equal to the second: two rows stamped milliseconds apart may straddle a second's edge."""
    return abs(first - second) <= 1


def operation(api: httpx.Client, operation_id: str) -> dict[str, Any]:
    answer = api.get(f"/v1/operations/{operation_id}")
    assert answer.status_code == 200, answer.text
    read: dict[str, Any] = answer.json()
    return read


def events_about(api: httpx.Client, object_id: str) -> list[dict[str, Any]]:
    events = api.get("/v1/events", params={"limit": 100}).json()["data"]
    return [event for event in events if event["data"]["object"].get("id") == object_id]


def test_a_transfer_its_operation_and_their_events_are_on_one_sandbox_clock(make_api):
    platform = make_api(kind="platform")
    clock_now = advance_a_week(platform)
    account = create_account(platform)
    payment = paid(platform)
    answer = platform.post(
        "/v1/transfers",
        json={"destination": account["id"], "amount": 500, "source_transaction": payment["id"]},
    )
    assert answer.status_code == 200, answer.text
    transfer = answer.json()
    assert same_second(transfer["created"], clock_now) or transfer["created"] >= clock_now

    group = platform.get(f"/v1/allocation-groups/{transfer['allocation_group']}").json()
    carried_by = operation(platform, transfer.get("operation") or group["operation"])
    assert same_second(carried_by["created"], transfer["created"]), (carried_by, transfer)
    assert carried_by["updated"] >= carried_by["created"]
    events = events_about(platform, transfer["id"])
    assert events, "a transfer's creation writes its event"
    assert all(same_second(event["created"], transfer["created"]) for event in events)


def test_a_refund_answers_an_operation_created_with_it(api):
    advance_a_week(api)
    payment = paid(api)
    answer = api.post("/v1/refunds", json={"payment_intent": payment["id"], "amount": 500})
    assert answer.status_code == 200, answer.text
    refund = answer.json()
    carried_by = operation(api, refund["operation"])
    assert same_second(carried_by["created"], refund["created"]), (carried_by, refund)
    assert same_second(carried_by["updated"], refund["created"])
    assert all(same_second(event["created"], refund["created"]) for event in events_about(api, refund["id"]))


def test_a_webhook_delivery_written_in_the_routes_own_statement_is_on_the_clock_too(api):
    endpoint = api.post(
        "/v1/webhook-endpoints", json={"url": "http://127.0.0.1:9/hook", "enabled_events": ["*"]}
    ).json()
    advance_a_week(api)
    payment = create_payment(api)
    deliveries = api.get(f"/v1/webhook-endpoints/{endpoint['id']}/deliveries").json()["data"]
    created_event = next(event for event in events_about(api, payment["id"]))
    delivery = next(item for item in deliveries if item["event"] == created_event["id"])
    carried_by = operation(api, delivery["id"])  # a delivery is its operation
    assert same_second(carried_by["created"], payment["created"]), (carried_by, payment)
    assert same_second(delivery["created"], payment["created"])
    assert same_second(created_event["created"], payment["created"])


def test_operations_written_in_a_batch_are_on_the_clock_too(api, bridge):
    clock_now = advance_a_week(api)

    async def work(session: Any) -> list[str]:
        return await create_operations(
            session,
            api.keys.tenant,
            operation_type=PROBE_TYPE,
            actor_name=PROBE_ACTOR,
            work=[("probe", {"amount": 1}), ("probe", {"amount": 2})],
        )

    for operation_id in bridge.in_unit_of_work(work):
        read = operation(api, operation_id)
        assert abs(read["created"] - clock_now) < 120, (read, clock_now)
        assert same_second(read["updated"], read["created"])


def test_live_operations_keep_the_wall_clock(make_api, bridge):
    live = make_api(livemode=True)

    async def work(session: Any) -> list[str]:
        return await create_operations(
            session, live.keys.tenant, operation_type=PROBE_TYPE, actor_name=PROBE_ACTOR, work=[("probe", {})]
        )

    (operation_id,) = bridge.in_unit_of_work(work)
    assert abs(operation(live, operation_id)["created"] - time.time()) < 120
