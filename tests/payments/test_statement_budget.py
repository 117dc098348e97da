"""The request path's SQL budget: statements per step of one payment, and per intake request.

A web process of its own talks to PostgreSQL through tests/sql_counter.py, a wire-protocol proxy that
counts every statement executed (BEGIN and COMMIT included) by the request's unit of work and by the
sandbox processor's own transactions. A feature that adds a round trip to these steps fails here: raise
the budget only with a reason, and record the new figure with bench/statements.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy.engine import make_url

from tests.harness import (
    OUTPUT_DIR,
    TLS,
    Process,
    Servers,
    TenantKeys,
    create_tenant,
    free_port,
    wait_until_ready,
)
from tests.payments.support import card
from tests.sql_counter import StatementCounter, Tally

# What each budget holds (BEGIN and COMMIT count; the sandbox processor's statements commit by themselves):
# - create: one self-committing statement: the key's claim, the payment, its event with a delivery to each
#   endpoint listening for it, and the stored answer;
# - confirm (a new card, manual capture): BEGIN; the key's claim with the payment's lock; the sandbox's
#   tokenizing and authorization; the card's row, the payment's UPDATE, its event and the stored answer;
#   COMMIT;
# - capture: BEGIN; the key's claim with the payment's lock; the payment's facts (every domain's question
#   about it, the fee shortfall, the ledger accounts); the sandbox's capture; the payment's UPDATE, its
#   event, the stored answer and the postings; COMMIT;
# - a customer: one statement, with a key (claim, INSERT, stored answer) or without.
BUDGET = {"create": 1, "confirm": 5, "capture": 6, "customer": 1, "customer_without_key": 1}


# The same steps on an outside processor (the sandbox behind its network model, 1 ms away), in atomic
# phases (payments/phases.py):
# - confirm: the payment claimed for the call behind the key's claim (one UPDATE that commits alone);
#   the sandbox's tokenizing and authorization, in one exchange; the last run (BEGIN, the key's claim
#   with the payment's lock, the one write that also ends the claim, COMMIT);
# - capture: the same, with the payment's facts asked in the claim's statement and read again (with
#   the ledger's outlook) in the last run, and the sandbox's capture between them.
PHASED_BUDGET = {"confirm": 6, "capture": 7}


@pytest.fixture(scope="module")
def counted_web(servers: Servers) -> Iterator[tuple[str, StatementCounter]]:
    yield from _counted_web(servers, "web-counted")


@pytest.fixture(scope="module")
def counted_phased_web(servers: Servers) -> Iterator[tuple[str, StatementCounter]]:
    yield from _counted_web(
        servers,
        "web-counted-phased",
        MONEYRAIL_SANDBOX_LATENCY_MS="1",
        MONEYRAIL_SANDBOX_LATENCY_JITTER_MS="0",
    )


def _counted_web(servers: Servers, log_name: str, **env: str) -> Iterator[tuple[str, StatementCounter]]:
    upstream = make_url(servers.database_url)
    # the embedded server is reached through its socket folder (`?host=`), the machine's over TCP
    socket_folder = upstream.query.get("host")
    upstream_host = socket_folder if isinstance(socket_folder, str) else upstream.host or "127.0.0.1"
    with StatementCounter(upstream_host, upstream.port or 5432) as counter:
        proxied = (
            upstream.set(host="127.0.0.1", port=counter.port)
            .difference_update_query(["host"])
            .render_as_string(hide_password=False)
        )
        port = free_port()
        # keys and the value lists stay remembered for the whole test (a slow machine may take longer
        # than the default 5 s between the warm-up and a counted step): the budget is that of a key
        # already looked up, and of lists read by an earlier confirmation
        process = Process.start(
            "web",
            servers,
            OUTPUT_DIR / f"{log_name}.log",
            MONEYRAIL_PORT=str(port),
            DATABASE_URL=proxied,
            MONEYRAIL_KEY_CACHE_SECONDS="600",
            **env,
        )
        base_url = f"http://127.0.0.1:{port}"
        try:
            wait_until_ready(base_url, process)
            yield base_url, counter
        finally:
            process.stop()


def post(base_url: str, path: str, key: str, idempotency_key: str | None, body: dict[str, Any] | None) -> Any:
    headers = {"Authorization": f"Bearer {key}"}
    if idempotency_key is not None:
        headers["Idempotency-Key"] = idempotency_key
    response = httpx.post(f"{base_url}{path}", json=body, headers=headers, timeout=30, verify=TLS)
    assert response.status_code == 200, response.text
    return response.json()


def payment_and_customer(
    base_url: str, keys: TenantKeys, counter: StatementCounter, tag: str
) -> dict[str, Tally]:
    counter.take()
    created = post(
        base_url,
        "/v1/payment-intents",
        keys.secret,
        f"{tag}-create",
        {"amount": 2000, "currency": "eur", "capture_method": "manual"},
    )
    tallies = {"create": counter.take()}
    path = f"/v1/payment-intents/{created['id']}"
    confirmed = post(
        base_url,
        f"{path}/confirm",
        created["publishable_key"],
        f"{tag}-confirm",
        {"client_secret": created["client_secret"], "card": card()},
    )
    assert confirmed["status"] == "requires_capture"
    tallies["confirm"] = counter.take()
    assert post(base_url, f"{path}/capture", keys.secret, f"{tag}-capture", None)["status"] == "succeeded"
    tallies["capture"] = counter.take()
    post(base_url, "/v1/customers", keys.secret, f"{tag}-customer", {"email": "budget@example.com"})
    tallies["customer"] = counter.take()
    post(base_url, "/v1/customers", keys.secret, None, {"email": "budget@example.com"})
    tallies["customer_without_key"] = counter.take()
    return tallies


def test_one_payment_and_one_customer_stay_within_the_recorded_statement_budget(
    counted_web: tuple[str, StatementCounter], bridge: Any
) -> None:
    base_url, counter = counted_web
    keys = create_tenant(bridge)
    payment_and_customer(base_url, keys, counter, "warm")  # the first request of a key looks it up
    measured = payment_and_customer(base_url, keys, counter, "counted")
    counts = {step: len(tally.statements) for step, tally in measured.items()}
    over = {step: counts[step] for step in BUDGET if counts[step] > BUDGET[step]}
    detail = {step: sorted(tally.by_text().items()) for step, tally in measured.items() if step in over}
    assert not over, f"statements per step {counts}, budget {BUDGET}: {detail}"
    # the count is real: confirm and capture run at least their transaction and their own write; a keyed
    # create and a keyed customer their one statement (the claim, the insert(s) and the stored answer),
    # a customer without a key its insert
    assert all(counts[step] >= 3 for step in ("confirm", "capture")), counts
    assert counts["create"] == 1, counts
    create = measured["create"].statements[0]
    for write in ("INSERT INTO payment_intents", "INSERT INTO events", "INSERT INTO idempotency_records"):
        assert write in create, create
    assert counts["customer"] == 1, counts
    for step in ("confirm", "capture"):
        texts = measured[step].statements
        # the key's claim rides in the payment's lock, its stored answer in the payment's UPDATE and event
        assert any("pg_try_advisory_xact_lock" in text and "FOR UPDATE OF p" in text for text in texts), texts
        assert any(
            "INSERT INTO idempotency_records" in text and 'UPDATE "payment_intents"' in text for text in texts
        ), texts
    # the capture's postings ride in the same last statement
    assert any(
        "INSERT INTO postings" in text and 'UPDATE "payment_intents"' in text
        for text in measured["capture"].statements
    ), measured["capture"].statements
    # the sandbox tokenizes and authorizes the new card in one statement
    assert any(
        "INSERT INTO sandbox_cards" in text and "INSERT INTO sandbox_authorizations" in text
        for text in measured["confirm"].statements
    ), measured["confirm"].statements
    # a new card's row rides in the confirmation's last statement
    assert any(
        "INSERT INTO payment_methods" in text and 'UPDATE "payment_intents"' in text
        for text in measured["confirm"].statements
    ), measured["confirm"].statements
    keyed = measured["customer"].statements[0]
    assert "INSERT INTO customers" in keyed and "INSERT INTO idempotency_records" in keyed, keyed
    assert counts["customer_without_key"] == 1, counts
    assert "INSERT INTO customers" in measured["customer_without_key"].statements[0]


def test_a_create_in_an_environment_with_a_listening_endpoint_is_one_statement(
    counted_web: tuple[str, StatementCounter], bridge: Any
) -> None:
    """Where an endpoint listens for `payment_intent.created` (almost every production environment), the
    one statement also schedules its delivery: the operation, the `webhook_deliveries` row and the relay's
    wake-up."""
    base_url, counter = counted_web
    keys = create_tenant(bridge)
    body = {"amount": 2000, "currency": "eur"}
    post(base_url, "/v1/payment-intents", keys.secret, None, body)  # the key and settings looked up
    post(
        base_url,
        "/v1/webhook-endpoints",
        keys.secret,
        None,
        {"url": "http://127.0.0.1:9/hook", "enabled_events": ["payment_intent.created"]},
    )
    for idempotency_key in ("listened-keyed", None):
        counter.take()
        post(base_url, "/v1/payment-intents", keys.secret, idempotency_key, body)
        (statement,) = counter.take().statements
        for write in ("INSERT INTO payment_intents", "INSERT INTO events", "INSERT INTO operations"):
            assert write in statement, statement
        assert "INSERT INTO webhook_deliveries" in statement and "pg_notify" in statement, statement


def test_a_create_without_a_key_is_one_statement(
    counted_web: tuple[str, StatementCounter], bridge: Any
) -> None:
    base_url, counter = counted_web
    keys = create_tenant(bridge)
    body = {"amount": 2000, "currency": "eur"}
    post(base_url, "/v1/payment-intents", keys.secret, None, body)  # the key and settings looked up
    counter.take()
    post(base_url, "/v1/payment-intents", keys.secret, None, body)
    (statement,) = counter.take().statements
    assert "INSERT INTO payment_intents" in statement and "INSERT INTO events" in statement, statement
    assert "idempotency_records" not in statement, statement


def test_a_payment_in_phases_claims_first_and_ends_the_claim_in_its_last_write(
    counted_phased_web: tuple[str, StatementCounter], bridge: Any
) -> None:
    """On an outside processor: a step's first statement claims the payment for its call (behind the
    key's claim) and commits alone; then the call; then one transaction locks the payment and records
    the answer, ending the claim in that write. Nothing is rolled back, and the claim's end costs no
    statement of its own (a new card's exchange with the processor is one call)."""
    base_url, counter = counted_phased_web
    keys = create_tenant(bridge)
    payment_and_customer(base_url, keys, counter, "warm")
    measured = payment_and_customer(base_url, keys, counter, "counted")
    for step, budget in PHASED_BUDGET.items():
        texts = measured[step].statements
        assert len(texts) <= budget, (step, len(texts), sorted(measured[step].by_text().items()))
        first = texts[0]
        assert "pg_try_advisory_xact_lock" in first, (step, texts)
        assert "UPDATE payment_intents AS p SET processor_call" in first, (step, texts)
        locked = [text for text in texts if "pg_try_advisory_xact_lock" in text and "FOR UPDATE OF p" in text]
        assert len(locked) == 1, (step, texts)
        call = next(index for index, text in enumerate(texts) if "sandbox_" in text)
        assert texts.index(locked[0]) > call, (step, texts)
        assert not [text for text in texts if text.startswith("ROLLBACK")], (step, texts)
        assert not [text for text in texts if "SET processor_call = NULL" in text], (step, texts)
        (last,) = [text for text in texts if "INSERT INTO idempotency_records" in text]
        assert "processor_call" in last, last
    # the sandbox tokenizes and authorizes the new card in one statement, as in one transaction
    assert any(
        "INSERT INTO sandbox_cards" in text and "INSERT INTO sandbox_authorizations" in text
        for text in measured["confirm"].statements
    ), measured["confirm"].statements
