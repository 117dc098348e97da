"""Sandbox helpers (CONVENTIONS.md §11): the installation's clock and processor fault injection."""

from __future__ import annotations

import time

import httpx

from tests.harness import TLS, add_key
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


def test_an_advance_under_an_idempotency_key_moves_the_clock_once(api):
    """With a key the advance is one transaction (its stored answer commits with the whole effect):
    a retry replays the answer, the clock moved once."""
    headers = {"Idempotency-Key": "advance-once"}
    first = api.post("/v1/test-helpers/clock/advance", json={"seconds": 3600}, headers=headers)
    again = api.post("/v1/test-helpers/clock/advance", json={"seconds": 3600}, headers=headers)
    assert first.status_code == again.status_code == 200, again.text
    assert again.headers.get("Idempotent-Replayed") == "true" and again.json() == first.json()
    assert api.get("/v1/test-helpers/clock").json()["offset_seconds"] == 3600


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
    live = httpx.Client(base_url=web.base_url, headers={"Authorization": f"Bearer {live_key}"}, verify=TLS)
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


def test_a_batch_of_transfers_is_one_call_whose_faults_concern_it_whole(api, bridge, db):
    """A group's commit asks for its transfers in one call: each transfer is still recorded (and replayed)
    under its own key, a transient fault makes none of them, a repeated batch key answers the same ids,
    and a permanent fault refuses only what was not answered before under its own key."""
    from moneyrail.processor.interface import ProcessorUnavailable, TransferRequest
    from moneyrail.processor.sandbox import SandboxProcessor

    tenant = api.keys.tenant
    requests = [TransferRequest(f"op_b:alloc_{n}", 100 + n, "eur", f"acct_{n}") for n in range(3)]

    def transfer_records():
        rows = db.execute(
            "SELECT idempotency_key, succeeded FROM sandbox_processor_calls"
            " WHERE installation_id = %s AND operation_type = 'transfer' ORDER BY idempotency_key",
            (api.keys.installation_id,),
        )
        return [(row[0], row[1]) for row in rows]

    async def batch(key, transfers):
        return await SandboxProcessor(bridge._sessionmaker).create_transfers(
            tenant, idempotency_key=key, transfers=transfers
        )

    api.post(
        "/v1/test-helpers/processor-faults",
        json={"operation_type": "transfer", "mode": "transient", "count": 1},
    )
    try:
        bridge.run(batch("op_b:transfers", requests))
        raise AssertionError("the injected transient fault did not reach the batch")
    except ProcessorUnavailable:
        pass
    assert transfer_records() == []  # nothing made: the whole call is asked again

    first = bridge.run(batch("op_b:transfers", requests))
    again = bridge.run(batch("op_b:transfers", requests))
    assert [answer.status for answer in first] == ["paid"] * 3
    assert first == again and len({answer.processor_id for answer in first}) == 3
    assert transfer_records() == [(request.idempotency_key, True) for request in requests]
    # the reconciliation domain's view: every transfer of the batch, as its own record
    listed = {
        record.processor_id: record
        for record in bridge.run(SandboxProcessor(bridge._sessionmaker).list_transfers(tenant))
    }
    assert {listed[answer.processor_id].amount for answer in first} == {100, 101, 102}

    # another batch (an operator's retry): the first two answer from their own keys, the new one is refused
    api.post(
        "/v1/test-helpers/processor-faults",
        json={"operation_type": "transfer", "mode": "permanent", "count": 1},
    )
    retried = [*requests[:2], TransferRequest("op_b:alloc_3", 50, "eur", "acct_3")]
    answers = bridge.run(batch("op_b:transfers:other", retried))
    assert [(a.status, a.processor_id) for a in answers[:2]] == [("paid", a.processor_id) for a in first[:2]]
    assert (answers[2].status, answers[2].failure_code) == ("refused", "processor_error")
    assert ("op_b:alloc_3", False) in transfer_records() and len(transfer_records()) == 4
