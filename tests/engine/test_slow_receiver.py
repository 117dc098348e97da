"""A slow webhook receiver holds none of a worker's database pool: a delivery's POST is made with no
transaction or pooled connection held (events/service.py `prepare_delivery`, in phases), so a worker
whose pool is one connection runs its other operations while a receiver keeps the POST open, and
records the attempt once the receiver answers."""

from __future__ import annotations

import threading
from typing import Any

from tests.engine.conftest import create_probe, wait_for_operation
from tests.events.conftest import FAST_RETRIES, wait_for
from tests.events.receiver import receiver
from tests.harness import Servers
from tests.stacks import start_scheduler, start_worker


def delivery_attempts(db: Any, endpoint_id: str) -> list[tuple[str, int | None]]:
    rows = db.execute(
        "SELECT a.outcome, a.response_status FROM webhook_delivery_attempts a"
        " JOIN operations o ON o.id = a.delivery_id"
        " WHERE o.type = 'webhook_delivery' AND o.payload->>'endpoint' = %s",
        (endpoint_id,),
    ).fetchall()
    return [(row[0], row[1]) for row in rows]


def test_a_receiver_holding_a_delivery_open_keeps_no_connection_from_the_other_operations(
    api, bridge, db, servers: Servers
):
    pool_of_one = {"MONEYRAIL_DB_POOL_SIZE": "1", **FAST_RETRIES}
    worker = start_worker(servers, name="worker-slow-receiver", **pool_of_one)
    scheduler = start_scheduler(servers, name="scheduler-slow-receiver", **pool_of_one)
    try:
        with receiver() as hooks:
            hooks.hold = threading.Event()
            endpoint = api.post(
                "/v1/webhook-endpoints", json={"url": hooks.url, "enabled_events": ["operation.succeeded"]}
            ).json()
            first = create_probe(bridge, api.keys.tenant)
            wait_for_operation(api, first, {"succeeded"})
            wait_for(lambda: hooks.arrived >= 1)  # its event's delivery is at the receiver, unanswered
            second = create_probe(bridge, api.keys.tenant)
            wait_for_operation(api, second, {"succeeded"}, timeout=20)  # beside the held POST
            assert hooks.deliveries == []  # still held: nothing answered
            assert delivery_attempts(db, endpoint["id"]) == []
            hooks.hold.set()
            wait_for(lambda: len(delivery_attempts(db, endpoint["id"])) >= 2)
        assert set(delivery_attempts(db, endpoint["id"])) == {("succeeded", 200)}
    finally:
        worker.stop()
        scheduler.stop()
