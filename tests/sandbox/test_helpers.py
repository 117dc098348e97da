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


def test_the_sandbox_processor_answers_a_repeated_key_with_its_first_answer(api, bridge):
    """What makes a re-driven attempt harmless: same key, same answer, one call on the processor's books."""
    from moneyrail.processor.interface import ProcessorRefused
    from moneyrail.processor.sandbox import CLOSED_BANK_ACCOUNT, SandboxProcessor

    tenant = api.keys.tenant

    async def calls(session):
        processor = SandboxProcessor(bridge._sessionmaker)
        first = await processor.create_transfer(
            tenant, idempotency_key="op_x:transfer", amount=500, currency="eur", destination="acct_1"
        )
        again = await processor.create_transfer(
            tenant, idempotency_key="op_x:transfer", amount=500, currency="eur", destination="acct_1"
        )
        refusals = []
        for _ in range(2):  # a stored refusal is replayed as the same refusal
            try:
                await processor.create_payout(
                    tenant,
                    idempotency_key="op_y:payout",
                    amount=100,
                    currency="eur",
                    bank_account=CLOSED_BANK_ACCOUNT,
                )
            except ProcessorRefused as refused:
                refusals.append(refused.code)
        try:
            await processor.create_transfer(
                tenant, idempotency_key="op_x:transfer", amount=999, currency="eur", destination="acct_1"
            )
        except ProcessorRefused as refused:
            refusals.append(refused.code)
        return first, again, refusals

    first, again, refusals = bridge.in_unit_of_work(calls)
    assert first == again and first.processor_id.startswith("sbx_tr_")
    assert refusals == ["account_closed", "account_closed", "idempotency_key_reused"]
