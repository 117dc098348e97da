"""The events list, page by page (CONVENTIONS.md §5): newest first, every event once, a type filter that
pages too, and nothing of another environment."""

from __future__ import annotations

from tests.helpers import assert_error


def _pages(api, **params) -> tuple[list[str], int]:
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        page = api.get("/v1/events", params={**params, **({"cursor": cursor} if cursor else {})}).json()
        seen.extend(event["id"] for event in page["data"])
        pages += 1
        if not page["has_more"]:
            assert page["next_cursor"] is None
            return seen, pages
        cursor = page["next_cursor"]


def test_the_events_page_newest_first_through_every_one(api, make_api):
    payments = [
        api.post("/v1/payment-intents", json={"amount": 1000 + n, "currency": "eur"}).json()["id"]
        for n in range(5)
    ]
    everything = api.get("/v1/events", params={"limit": 100}).json()["data"]
    created = [e for e in everything if e["type"] == "payment_intent.created"]
    # newest first: the last payment's event leads
    assert [e["data"]["object"]["id"] for e in created] == list(reversed(payments))

    seen, pages = _pages(api, limit=2)
    assert seen == [e["id"] for e in everything]  # every event once, in the one order
    assert pages == -(-len(everything) // 2)

    only_created, created_pages = _pages(api, limit=2, type="payment_intent.created")
    assert only_created == [e["id"] for e in created] and created_pages == 3

    assert make_api().get("/v1/events").json()["data"] == []  # another installation sees none
    missing = make_api().get(f"/v1/events/{created[0]['id']}")
    assert_error(missing, 404, "resource_missing", "event")
    assert api.get(f"/v1/events/{created[0]['id']}").json() == created[0]


def test_an_endpoints_deliveries_page_newest_first(api):
    endpoint = api.post(
        "/v1/webhook-endpoints",
        json={"url": "http://127.0.0.1:9/hooks", "enabled_events": ["payment_intent.created"]},
    ).json()
    for n in range(5):  # each event's delivery is written with it, whatever becomes of the sending
        api.post("/v1/payment-intents", json={"amount": 1000 + n, "currency": "eur"})
    path = f"/v1/webhook-endpoints/{endpoint['id']}/deliveries"
    everything = api.get(path, params={"limit": 100}).json()["data"]
    events = [
        e["id"] for e in api.get("/v1/events", params={"type": "payment_intent.created"}).json()["data"]
    ]
    assert [d["event"] for d in everything] == events  # one each, newest first

    seen: list[str] = []
    cursor = None
    while True:
        page = api.get(path, params={"limit": 2, **({"cursor": cursor} if cursor else {})}).json()
        seen.extend(delivery["id"] for delivery in page["data"])
        if not page["has_more"]:
            break
        cursor = page["next_cursor"]
    assert seen == [d["id"] for d in everything]
    oldest = api.get(f"{path}/{everything[-1]['id']}").json()  # its status may move on (a worker may run)
    assert {key: oldest[key] for key in ("id", "event", "created")} == {
        key: everything[-1][key] for key in ("id", "event", "created")
    }
