"""The sandbox simulator reached over a simulated network (processor/sandbox/network.py): latency,
connection resets, lost requests and lost answers, as a real processor far away meets them.

Every probability here is 0 or 1, so no test depends on a draw; latencies are asserted as lower bounds
only (a loaded machine makes a call slower, never faster).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import psycopg
import pytest
from pydantic import ValidationError

from moneyrail.config import Settings
from moneyrail.processor.interface import ProcessorRefused, ProcessorUnavailable, operation_key
from moneyrail.processor.sandbox.network import NetworkConditions, NetworkDraws, SandboxNetwork
from tests.conftest import Api
from tests.engine.conftest import assert_ledger_verifies
from tests.harness import TLS, Servers, TenantKeys
from tests.helpers import count_rows
from tests.payments.support import card, create_payment, paid, wait_for
from tests.processor.network import Network
from tests.stacks import start_scheduler, start_worker
from tests.web_process import another_web_process

LATENCY_MS, JITTER_MS = 300, 100
FASTEST_CALL_S = (LATENCY_MS - JITTER_MS) / 1000  # no call's round trip is shorter


# the model itself ------------------------------------------------------------------------------------
def test_round_trips_stay_within_latency_and_jitter_and_a_seed_repeats_the_draws():
    conditions = NetworkConditions(latency_ms=150, jitter_ms=50, lost_answer_rate=0.5)
    first, again = NetworkDraws(conditions, seed=7), NetworkDraws(conditions, seed=7)
    draws = [first.next() for _ in range(500)]
    assert draws == [again.next() for _ in range(500)]
    assert all(0.100 <= seconds <= 0.200 for _, seconds in draws)
    assert {fate for fate, _ in draws} == {"delivered", "lost_answer"}


def test_each_certain_failure_is_drawn_every_time_and_none_without_rates():
    for fate in ("reset", "lost_request", "lost_answer"):
        draws = NetworkDraws(NetworkConditions(**{f"{fate}_rate": 1.0}))
        assert {draws.next() for _ in range(50)} == {(fate, 0.0)}
    assert {NetworkDraws(NetworkConditions(latency_ms=20)).next() for _ in range(50)} == {("delivered", 0.02)}


def test_the_network_is_absent_by_default_and_its_failure_rates_cannot_exceed_one_call():
    assert NetworkConditions.from_settings(Settings()).absent
    assert not NetworkConditions.from_settings(Settings(sandbox_latency_ms=1)).absent
    with pytest.raises(ValidationError, match="more than 1"):
        Settings(sandbox_reset_rate=0.5, sandbox_lost_request_rate=0.3, sandbox_lost_answer_rate=0.3)
    with pytest.raises(ValidationError):
        Settings(sandbox_lost_answer_rate=1.5)


# the simulator behind it -------------------------------------------------------------------------------
def behind(network: Network, **conditions: float) -> Network:
    """The same tenant's sandbox, called over a network with these conditions."""
    over = SandboxNetwork(network.processor, NetworkDraws(NetworkConditions(**conditions)))
    return Network(over, network.bridge, network.tenant)  # type: ignore[arg-type]


def refunds_recorded(db: psycopg.Connection, key: str) -> list[tuple[str, bool]]:
    return db.execute(
        "SELECT operation_type, succeeded FROM sandbox_processor_calls WHERE idempotency_key = %s", (key,)
    ).fetchall()


def amount_refunded(db: psycopg.Connection, authorization_id: str) -> int:
    row = db.execute(
        "SELECT amount_refunded FROM sandbox_authorizations WHERE id = %s", (authorization_id,)
    ).fetchone()
    assert row is not None
    return int(row[0])


@pytest.mark.parametrize("fate", ["reset", "lost_request"])
def test_a_reset_or_a_lost_request_does_nothing_and_the_retry_does_it_once(network, db, fate):
    authorization = network.captured(1000)
    key = f"op_{fate}:refund"
    with pytest.raises(ProcessorUnavailable, match="sandbox network"):
        behind(network, **{f"{fate}_rate": 1.0}).call(
            "refund", key=key, authorization_id=authorization.id, amount=400
        )
    assert refunds_recorded(db, key) == []
    assert amount_refunded(db, authorization.id) == 0
    network.call("refund", key=key, authorization_id=authorization.id, amount=400)
    assert refunds_recorded(db, key) == [("refund", True)]
    assert amount_refunded(db, authorization.id) == 400


def test_a_lost_answer_leaves_the_effect_and_the_retry_under_its_key_replays_it(network, db):
    authorization = network.captured(1000)
    key = "op_lost_answer:refund"
    lossy = behind(network, lost_answer_rate=1.0)
    for _ in range(3):  # every answer lost: the processor refunded once, and only once
        with pytest.raises(ProcessorUnavailable, match="answer was lost"):
            lossy.call("refund", key=key, authorization_id=authorization.id, amount=400)
    assert refunds_recorded(db, key) == [("refund", True)]
    assert amount_refunded(db, authorization.id) == 400
    answered = network.call("refund", key=key, authorization_id=authorization.id, amount=400)
    stored = db.execute(
        "SELECT response->>'id' FROM sandbox_processor_calls WHERE idempotency_key = %s", (key,)
    ).fetchone()
    assert stored is not None and answered.processor_id == stored[0]
    assert amount_refunded(db, authorization.id) == 400


def test_a_refusal_that_crosses_the_network_is_the_simulators_own(network):
    authorization = network.captured(1000)
    slow = behind(network, latency_ms=50)
    started = time.monotonic()
    with pytest.raises(ProcessorRefused) as refused:
        slow.call("refund", authorization_id=authorization.id, amount=5000)
    assert refused.value.code == "amount_too_large"
    assert time.monotonic() - started >= 0.05


# a web process over the network ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def slow_web(servers: Servers) -> Iterator[str]:
    with another_web_process(
        servers,
        "web-slow-processor",
        MONEYRAIL_SANDBOX_LATENCY_MS=str(LATENCY_MS),
        MONEYRAIL_SANDBOX_LATENCY_JITTER_MS=str(JITTER_MS),
    ) as base_url:
        yield base_url


@pytest.fixture(scope="module")
def unreachable_web(servers: Servers) -> Iterator[str]:
    with another_web_process(servers, "web-processor-resets", MONEYRAIL_SANDBOX_RESET_RATE="1") as base_url:
        yield base_url


def timed_post(client: httpx.Client, path: str, **options: object) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    response = client.post(path, **options)  # type: ignore[arg-type]
    return response, time.monotonic() - started


def test_a_payment_over_a_slow_network_answers_as_usual_and_each_processor_step_waits_a_round_trip(
    slow_web, tenant: TenantKeys
):
    with Api(slow_web, tenant) as api:
        payment = create_payment(api, 2000, capture_method="manual")
        assert payment["status"] == "requires_payment_method"
        confirmed, confirm_s = timed_post(
            api,
            f"/v1/payment-intents/{payment['id']}/confirm",
            json={"client_secret": payment["client_secret"], "card": card()},
            headers={"Authorization": f"Bearer {payment['publishable_key']}"},
        )
        assert confirmed.status_code == 200, confirmed.text
        assert confirmed.json()["status"] == "requires_capture"
        captured, capture_s = timed_post(api, f"/v1/payment-intents/{payment['id']}/capture")
        assert captured.status_code == 200, captured.text
        assert (captured.json()["status"], captured.json()["amount_received"]) == ("succeeded", 2000)
    assert confirm_s >= FASTEST_CALL_S
    assert capture_s >= FASTEST_CALL_S


def test_an_unreachable_processor_answers_503_with_retry_after_and_records_nothing(
    unreachable_web, api, db, tenant: TenantKeys
):
    payment = create_payment(api, 2000)
    body = {"client_secret": payment["client_secret"], "card": card()}
    headers = {"Authorization": f"Bearer {payment['publishable_key']}", "Idempotency-Key": "confirm-once"}
    path = f"/v1/payment-intents/{payment['id']}/confirm"
    refused = httpx.post(f"{unreachable_web}{path}", json=body, headers=headers, timeout=30, verify=TLS)
    assert refused.status_code == 503, refused.text
    error = refused.json()["error"]
    assert (error["type"], error["code"]) == ("api_error", "processor_unavailable")
    assert int(refused.headers["Retry-After"]) >= 1
    assert api.get(f"/v1/payment-intents/{payment['id']}").json()["status"] == "requires_payment_method"
    for table in (
        "sandbox_processor_calls",
        "sandbox_cards",
        "sandbox_authorizations",
        "journal_transactions",
    ):
        assert count_rows(db, table, tenant.installation_id) == 0, table
    # the processor reachable again, the same request with the same key charges once
    retried = httpx.post(f"{api.base_url}{path}", json=body, headers=headers, timeout=30, verify=TLS)
    assert retried.status_code == 200, retried.text
    assert retried.json()["status"] == "succeeded"
    assert count_rows(db, "sandbox_authorizations", tenant.installation_id) == 1


# a worker over the network ----------------------------------------------------------------------------
def test_a_refund_whose_answers_are_lost_refunds_once_and_succeeds_once_the_network_heals(
    servers: Servers, api, db, tenant: TenantKeys
):
    """Every refund attempt of a worker on a network that loses every answer reaches the processor:
    the first refunds, the next replay that refund under the operation's key and lose the answer
    again. A healthy worker then finishes the operation with the stored answer: one refund in all."""
    payment = paid(api, 3000)
    scheduler = start_scheduler(servers, name="scheduler-lost-answers")
    lossy = start_worker(servers, name="worker-lost-answers", MONEYRAIL_SANDBOX_LOST_ANSWER_RATE="1")
    healthy = None
    try:
        created = api.post("/v1/refunds", json={"payment_intent": payment["id"], "amount": 1200})
        assert created.status_code == 200, created.text
        operation_id = created.json()["operation"]
        wait_for(lambda: lost_answers(db, operation_id) >= 2, timeout=60)
        lossy.stop()
        key = operation_key(operation_id, "refund")
        assert refunds_recorded(db, key) == [("refund", True)]  # done at the first attempt, once
        healthy = start_worker(servers, name="worker-network-healed")
        wait_for(lambda: operation_status(db, operation_id) == "succeeded", timeout=60)
    finally:
        for process in (lossy, healthy, scheduler):
            if process is not None:
                process.stop()
    refund = api.get(f"/v1/refunds/{created.json()['id']}").json()
    assert refund["status"] == "succeeded"
    assert api.get(f"/v1/payment-intents/{payment['id']}").json()["amount_refunded"] == 1200
    assert refunds_recorded(db, key) == [("refund", True)]
    authorization = db.execute(
        "SELECT processor_authorization FROM payment_intents WHERE id = %s", (payment["id"],)
    ).fetchone()
    assert authorization is not None and amount_refunded(db, authorization[0]) == 1200
    refund_postings = db.execute(
        "SELECT count(*) FROM journal_transactions WHERE installation_id = %s AND kind = 'refund'",
        (tenant.installation_id,),
    ).fetchone()
    assert refund_postings == (1,)
    assert_ledger_verifies(servers)


def lost_answers(db: psycopg.Connection, operation_id: str) -> int:
    row = db.execute(
        "SELECT count(*) FROM operation_attempts WHERE operation_id = %s AND outcome = 'retry'"
        " AND error LIKE %s",
        (operation_id, "%answer was lost%"),
    ).fetchone()
    assert row is not None
    return int(row[0])


def operation_status(db: psycopg.Connection, operation_id: str) -> str:
    row = db.execute("SELECT status FROM operations WHERE id = %s", (operation_id,)).fetchone()
    assert row is not None
    return str(row[0])
