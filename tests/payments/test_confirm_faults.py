"""A confirmation with a new card when the network faults at tokenizing or at authorizing, or a risk rule
holds the card: what the payer is answered, what the payment records, what the network was asked, which
rows are written. The card's row rides in the payment's last statement and the network tokenizes and
authorizes in one statement in the usual case: none of what is checked here depends on that split."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.harness import TLS
from tests.helpers import assert_error
from tests.payments.support import RISK_REVIEW, SUCCEEDS, card, confirm, create_payment, event_types
from tests.risk.test_risk import processor_calls, value_list


def arm(api: Any, operation_type: str, mode: str) -> None:
    armed = api.post(
        "/v1/test-helpers/processor-faults",
        json={"operation_type": operation_type, "mode": mode, "count": 1},
    )
    assert armed.status_code == 200, armed.text


def cards_saved(db: Any, installation_id: str) -> int:
    row = db.execute(
        "SELECT count(*) FROM payment_methods WHERE installation_id = %s", (installation_id,)
    ).fetchone()
    return int(row[0])


def reviews_of(db: Any, payment_id: str) -> int:
    row = db.execute(
        "SELECT count(*) FROM risk_reviews WHERE payment_intent_id = %s", (payment_id,)
    ).fetchone()
    return int(row[0])


@pytest.mark.parametrize("mode", ["transient", "permanent"])
def test_a_tokenize_fault_authorizes_nothing_saves_no_card_and_opens_no_review(api, db, mode):
    installation = api.keys.installation_id
    payment = create_payment(api, capture_method="manual")
    arm(api, "tokenize", mode)
    refused = confirm(api, payment, RISK_REVIEW)
    if mode == "transient":
        assert_error(refused, 503, "processor_unavailable")
    else:
        # the network's refusal for good, no card decline: a card error the payer can act on, as a
        # refused authorization answers (Stripe's processing_error), never a 500
        error = assert_error(refused, 402, "card_declined")
        assert error["type"] == "card_error" and error["decline_code"] == "processing_error"
    after = api.get(f"/v1/payment-intents/{payment['id']}").json()
    assert after["status"] == "requires_payment_method" and after["payment_method"] is None
    assert processor_calls(db, installation, "authorize") == 0
    assert cards_saved(db, installation) == 0
    assert reviews_of(db, payment["id"]) == 0
    # the fault is used up: the same confirmation then goes through (held for review: the risk card)
    retried = confirm(api, payment, RISK_REVIEW)
    assert retried.status_code == 200, retried.text
    assert retried.json()["status"] == "requires_capture"
    assert processor_calls(db, installation, "authorize") == 1
    assert cards_saved(db, installation) == 1
    assert reviews_of(db, payment["id"]) == 1


def keyed_confirm(api: Any, payment: dict[str, Any], idempotency_key: str) -> httpx.Response:
    return httpx.post(
        f"{api.base_url}/v1/payment-intents/{payment['id']}/confirm",
        json={"client_secret": payment["client_secret"], "card": card(SUCCEEDS)},
        headers={
            "Authorization": f"Bearer {payment['publishable_key']}",
            "Idempotency-Key": idempotency_key,
        },
        timeout=30,
        verify=TLS,
    )


def logged_events(web: Any, request_id: str) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in web.process.log_text().splitlines() if line.startswith("{")]
    return [line for line in lines if line.get("request_id") == request_id]


def test_a_permanent_tokenize_refusal_is_stored_under_its_key_and_logged_once_without_a_trace(api, db, web):
    installation = api.keys.installation_id
    payment = create_payment(api, capture_method="manual")
    arm(api, "tokenize", "permanent")
    refused = keyed_confirm(api, payment, "tokenize-refused")
    error = assert_error(refused, 402, "card_declined")
    assert error["decline_code"] == "processing_error"
    logged = logged_events(web, refused.headers["Request-Id"])
    assert [line["event"] for line in logged if line["level"] != "info"] == ["card_tokenizing_refused"]
    assert not any("exception" in line or "exc_info" in line for line in logged)
    # a decline is a business answer (CONVENTIONS.md §4): the same key answers it again, the network
    # is not asked again (the fault was used up: a new call would have gone through)
    replayed = keyed_confirm(api, payment, "tokenize-refused")
    assert replayed.status_code == 402 and replayed.headers["Idempotent-Replayed"] == "true"
    assert replayed.json()["error"]["decline_code"] == "processing_error"
    assert cards_saved(db, installation) == 0
    assert api.get(f"/v1/payment-intents/{payment['id']}").json()["status"] == "requires_payment_method"
    assert keyed_confirm(api, payment, "tokenize-again").json()["status"] == "requires_capture"


def test_a_transient_tokenize_fault_is_not_stored_so_the_same_key_goes_through(api, db):
    installation = api.keys.installation_id
    payment = create_payment(api, capture_method="manual")
    arm(api, "tokenize", "transient")
    assert_error(keyed_confirm(api, payment, "tokenize-fault"), 503, "processor_unavailable")
    assert cards_saved(db, installation) == 0
    retried = keyed_confirm(api, payment, "tokenize-fault")  # a 5xx is not stored: the key is free
    assert retried.status_code == 200, retried.text
    assert "Idempotent-Replayed" not in retried.headers
    assert retried.json()["status"] == "requires_capture"
    assert cards_saved(db, installation) == 1


def test_an_authorize_refusal_declines_with_the_card_saved_and_recorded(api, db):
    installation = api.keys.installation_id
    payment = create_payment(api, capture_method="manual")
    arm(api, "authorize", "permanent")
    declined = confirm(api, payment, SUCCEEDS)
    assert_error(declined, 402, "card_declined")
    after = api.get(f"/v1/payment-intents/{payment['id']}").json()
    error = after["last_payment_error"]
    assert after["status"] == "requires_payment_method" and error["decline_code"] == "processing_error"
    assert error["payment_method"].startswith("pm_") and after["payment_method"] == error["payment_method"]
    assert cards_saved(db, installation) == 1
    assert event_types(api, payment["id"])[-1] == "payment_intent.payment_failed"
    assert confirm(api, payment, SUCCEEDS).json()["status"] == "requires_capture"


def test_an_authorize_outage_answers_503_and_writes_nothing_of_the_request(api, db):
    installation = api.keys.installation_id
    payment = create_payment(api, capture_method="manual")
    arm(api, "authorize", "transient")
    refused = confirm(api, payment, SUCCEEDS)
    assert_error(refused, 503, "processor_unavailable")
    assert int(refused.headers["Retry-After"]) > 0  # as a real processor's outage answers
    after = api.get(f"/v1/payment-intents/{payment['id']}").json()
    assert after["status"] == "requires_payment_method" and after["payment_method"] is None
    assert cards_saved(db, installation) == 0  # rolled back with the request
    assert processor_calls(db, installation, "authorize") == 0
    assert confirm(api, payment, SUCCEEDS).json()["status"] == "requires_capture"
    assert cards_saved(db, installation) == 1


def test_a_blocked_card_is_saved_declined_fraudulent_and_never_authorized(api, db):
    installation = api.keys.installation_id
    payment = create_payment(api, capture_method="manual")
    first = confirm(api, payment, SUCCEEDS)  # to learn the card's fingerprint
    assert first.status_code == 200, first.text
    fingerprint = db.execute(
        "SELECT fingerprint FROM payment_methods WHERE id = %s", (first.json()["payment_method"],)
    ).fetchone()[0]
    value_list(api, "card_fingerprint", "block", fingerprint)
    blocked_payment = create_payment(api, capture_method="manual")
    blocked = confirm(api, blocked_payment, SUCCEEDS)
    assert_error(blocked, 402, "card_declined")
    after = api.get(f"/v1/payment-intents/{blocked_payment['id']}").json()
    error = after["last_payment_error"]
    assert error["decline_code"] == "fraudulent" and error["payment_method"].startswith("pm_")
    assert cards_saved(db, installation) == 2
    assert processor_calls(db, installation, "authorize") == 1  # the first payment's only
