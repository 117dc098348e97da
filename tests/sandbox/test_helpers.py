"""Sandbox helpers (CONVENTIONS.md §11): the installation's clock and processor fault injection."""

from __future__ import annotations

import time

import httpx

from tests.harness import add_key
from tests.helpers import assert_error


def test_the_sandbox_clock_starts_at_real_time_and_advances(api):
    clock = api.get("/v1/test-helpers/clock").json()
    assert clock["object"] == "test_clock" and clock["offset_seconds"] == 0
    assert abs(clock["now"] - time.time()) < 5
    advanced = api.post("/v1/test-helpers/clock/advance", json={"seconds": 86_400}).json()
    assert advanced["offset_seconds"] == 86_400
    assert abs(advanced["now"] - (time.time() + 86_400)) < 5
    again = api.post("/v1/test-helpers/clock/advance", json={"seconds": 60}).json()
    assert again["offset_seconds"] == 86_460


def test_one_installation_s_clock_does_not_move_another_s(make_api):
    one, two = make_api(), make_api()
    one.post("/v1/test-helpers/clock/advance", json={"seconds": 3600})
    assert two.get("/v1/test-helpers/clock").json()["offset_seconds"] == 0


def test_bad_advances_are_refused_and_change_nothing(api):
    for seconds in (0, -5, 10**12):
        assert_error(
            api.post("/v1/test-helpers/clock/advance", json={"seconds": seconds}),
            400,
            "parameter_invalid",
            "seconds",
        )
    assert_error(
        api.post("/v1/test-helpers/clock/advance", json={"seconds": "60"}),
        400,
        "parameter_invalid",
        "seconds",
    )
    assert api.get("/v1/test-helpers/clock").json()["offset_seconds"] == 0


def test_fault_injection_validates_its_input(api):
    created = api.post(
        "/v1/test-helpers/processor-faults",
        json={"operation_type": "payout", "mode": "permanent", "count": 2},
    )
    assert created.json() == {
        "object": "processor_fault",
        "operation_type": "payout",
        "mode": "permanent",
        "count": 2,
    }
    bad_type = api.post(
        "/v1/test-helpers/processor-faults",
        json={"operation_type": "teleport", "mode": "transient", "count": 1},
    )
    assert_error(bad_type, 400, "parameter_invalid", "operation_type")
    bad_mode = api.post(
        "/v1/test-helpers/processor-faults",
        json={"operation_type": "payout", "mode": "sometimes", "count": 1},
    )
    assert_error(bad_mode, 400, "parameter_invalid", "mode")
    bad_count = api.post(
        "/v1/test-helpers/processor-faults",
        json={"operation_type": "payout", "mode": "transient", "count": 0},
    )
    assert_error(bad_count, 400, "parameter_invalid", "count")


def test_a_live_key_finds_no_test_helpers(web, api, bridge):
    live_key = add_key(bridge, type(api.keys.tenant)(api.keys.installation_id, True), ("*",))
    live = httpx.Client(base_url=web.base_url, headers={"Authorization": f"Bearer {live_key}"})
    assert_error(live.get("/v1/test-helpers/clock"), 404, "resource_missing")
    assert_error(live.post("/v1/test-helpers/clock/advance", json={"seconds": 60}), 404, "resource_missing")
    assert_error(
        live.post(
            "/v1/test-helpers/processor-faults",
            json={"operation_type": "payout", "mode": "transient", "count": 1},
        ),
        404,
        "resource_missing",
    )
    live.close()
