"""A confirmation with a new card when the network faults at tokenizing or at authorizing, or a risk rule
holds the card: what the payer is answered, what the payment records, what the network was asked, which
rows are written (SPEED.md §25: the card's row and the network's calls moved between statements;
these answers and effects must not)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers import assert_error
from tests.payments.support import RISK_REVIEW, SUCCEEDS, confirm, create_payment, event_types
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
        # as before SPEED.md §25: a refusal of the tokenizing that is no card decline is not
        # mapped to an API error (internal_error, everything rolled back)
        assert_error(refused, 500, "internal_error")
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
    assert_error(confirm(api, payment, SUCCEEDS), 503, "processor_unavailable")
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
