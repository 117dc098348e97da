"""A card number goes to the processor and nowhere else: no table, no log line (CONVENTIONS.md §6)."""

from __future__ import annotations

import time

from tests.helpers import assert_error
from tests.payment_methods.support import (
    card,
    confirm,
    new_customer,
    new_setup_intent,
    publishable,
)

SAVED = "4000000000000259"
REFUSED = "4000056655665556"  # Luhn-valid, not a sandbox card


def _tables(db) -> list[str]:
    rows = db.execute(
        "SELECT table_name FROM information_schema.tables "
        "WHERE table_schema = 'public' AND table_type = 'BASE TABLE'"
    ).fetchall()
    return [row[0] for row in rows]


def _tables_holding(db, text: str) -> list[str]:
    """Tables with a row whose text (bytea shown in hex) holds `text`, in plain or hex form."""
    patterns = (f"%{text}%", f"%{text.encode().hex()}%")
    holding = []
    for table in _tables(db):
        (found,) = db.execute(
            f'SELECT count(*) FROM "{table}" AS t WHERE t::text LIKE %s OR t::text LIKE %s', patterns
        ).fetchone()
        if found:
            holding.append(table)
    return holding


def test_card_numbers_reach_no_table_and_no_log_line(api, web, db):
    customer = new_customer(api)
    with publishable(api) as client:
        saved = confirm(client, new_setup_intent(api, customer), SAVED, **{"Idempotency-Key": "saved"})
        assert saved.status_code == 200, saved.text
        setup_intent = new_setup_intent(api, customer)
        refused = client.post(
            f"/v1/setup-intents/{setup_intent['id']}/confirm",
            json={"client_secret": setup_intent["client_secret"], "card": card(REFUSED)},
            headers={"Idempotency-Key": "refused"},
        )
        assert_error(refused, 402, "card_declined", "card[number]")
        malformed = client.post(
            f"/v1/setup-intents/{setup_intent['id']}/confirm",
            json={"client_secret": setup_intent["client_secret"], "card": {**card(REFUSED), "cvc": "x"}},
        )
        assert_error(malformed, 400, "parameter_invalid", "card[cvc]")
    for response in (saved, refused, malformed):
        assert SAVED not in response.text and REFUSED not in response.text
    assert _tables_holding(db, SAVED) == []
    assert _tables_holding(db, REFUSED) == []
    request_ids = [response.headers["Request-Id"] for response in (saved, refused, malformed)]
    deadline = time.monotonic() + 5
    log = web.process.log_text()
    while not all(request_id in log for request_id in request_ids) and time.monotonic() < deadline:
        time.sleep(0.05)
        log = web.process.log_text()
    assert all(request_id in log for request_id in request_ids)
    assert SAVED not in log and REFUSED not in log
    assert SAVED[-4:] in api.get(f"/v1/customers/{customer}/payment-methods").text  # last4 is kept
