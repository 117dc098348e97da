"""Injected processor faults can be listed and cleared (sandbox helpers, CONVENTIONS.md §11)."""

from __future__ import annotations

import httpx

from tests.harness import TLS, add_key
from tests.helpers import assert_error

FAULTS = "/v1/test-helpers/processor-faults"


def inject(api, operation_type: str, mode: str, count: int) -> None:
    response = api.post(FAULTS, json={"operation_type": operation_type, "mode": mode, "count": count})
    assert response.status_code == 200, response.text


def armed(api) -> list[tuple[str, str, int]]:
    listed = api.get(FAULTS)
    assert listed.status_code == 200, listed.text
    assert listed.json()["object"] == "list" and listed.json()["has_more"] is False
    return [(f["operation_type"], f["mode"], f["count"]) for f in listed.json()["data"]]


def test_armed_faults_are_listed_and_cleared_one_type_or_all(api):
    assert armed(api) == []
    inject(api, "transfer", "transient", 2)
    inject(api, "payout", "permanent", 1)
    assert armed(api) == [("payout", "permanent", 1), ("transfer", "transient", 2)]

    cleared = api.delete(FAULTS, params={"operation_type": "payout"})
    assert cleared.status_code == 200, cleared.text
    assert [f["operation_type"] for f in cleared.json()["data"]] == ["payout"]
    assert armed(api) == [("transfer", "transient", 2)]

    cleared_all = api.delete(FAULTS).json()["data"]
    assert [(f["operation_type"], f["count"]) for f in cleared_all] == [("transfer", 2)]
    assert armed(api) == [] and api.delete(FAULTS).json()["data"] == []


def test_clearing_a_type_that_does_not_exist_is_refused_and_clears_nothing(api):
    inject(api, "transfer", "transient", 1)
    assert_error(
        api.delete(FAULTS, params={"operation_type": "teleport"}), 400, "parameter_invalid", "operation_type"
    )
    assert armed(api) == [("transfer", "transient", 1)]


def test_faults_of_one_installation_are_invisible_to_another(api, make_api):
    inject(api, "transfer", "transient", 3)
    other = make_api()
    assert armed(other) == [] and other.delete(FAULTS).json()["data"] == []
    assert armed(api) == [("transfer", "transient", 3)]


def test_a_live_key_finds_no_fault_listing(web, api, bridge):
    live_key = add_key(bridge, type(api.keys.tenant)(api.keys.installation_id, True), ("*",))
    with httpx.Client(
        base_url=web.base_url, headers={"Authorization": f"Bearer {live_key}"}, verify=TLS
    ) as live:
        assert_error(live.get(FAULTS), 404, "resource_missing")
        assert_error(live.delete(FAULTS), 404, "resource_missing")
