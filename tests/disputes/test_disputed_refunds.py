"""Refunds of a disputed payment, over HTTP with a real worker and scheduler: refused while the dispute is
open (a lost dispute's amount is taken back by the network, a refund would pay it twice), refused for
the lost amount, allowed again once the dispute is won. Each refusal writes nothing."""

from __future__ import annotations

import httpx

from tests.engine.conftest import assert_ledger_verifies, wait_for_operation
from tests.helpers import assert_error, count_rows
from tests.payments.support import ledger_balance, paid

from .support import FEE, HOUR, advance, disputed


def refund(api: httpx.Client, payment_id: str, **fields: object) -> httpx.Response:
    return api.post("/v1/refunds", json={"payment_intent": payment_id, **fields})


def refunded(api: httpx.Client, payment_id: str, **fields: object) -> dict:
    """A refund accepted and carried out by the worker."""
    created = refund(api, payment_id, **fields)
    assert created.status_code == 200, created.text
    wait_for_operation(api, created.json()["operation"], {"succeeded", "failed", "dead_letter"}, timeout=60)
    done: dict = api.get(f"/v1/refunds/{created.json()['id']}").json()
    assert done["status"] == "succeeded", done
    return done


def assert_refund_refused_and_nothing_written(api, db, payment_id: str, **fields: object) -> dict:
    before = count_rows(db, "refunds", api.keys.installation_id)
    error = assert_error(refund(api, payment_id, **fields), 409, "resource_state_invalid")
    assert count_rows(db, "refunds", api.keys.installation_id) == before
    return error


def test_a_payment_with_an_open_dispute_is_not_refunded_until_the_dispute_is_won(
    api, db, servers, money_stack
):
    payment = paid(api, 4000)
    dispute = disputed(api, payment["id"])
    error = assert_refund_refused_and_nothing_written(api, db, payment["id"])
    assert dispute["id"] in error["message"] and "open dispute" in error["message"]
    assert_refund_refused_and_nothing_written(api, db, payment["id"], amount=100)

    body = {"evidence": {"uncategorized_text": "winning_evidence"}, "submit": True}
    assert api.post(f"/v1/disputes/{dispute['id']}/evidence", json=body).json()["status"] == "under_review"
    assert_refund_refused_and_nothing_written(api, db, payment["id"])  # under review: still open
    assert api.get(f"/v1/payment-intents/{payment['id']}").json()["amount_refunded"] == 0

    advance(api, 25 * HOUR)
    assert api.get(f"/v1/disputes/{dispute['id']}").json()["status"] == "won"
    # won: the amount came back, so the payment is refundable again, up to what was captured
    assert refunded(api, payment["id"], amount=1000)["amount"] == 1000
    assert_error(refund(api, payment["id"], amount=3001), 400, "amount_invalid", "amount")
    assert refunded(api, payment["id"])["amount"] == 3000
    assert api.get(f"/v1/payment-intents/{payment['id']}").json()["amount_refunded"] == 4000
    # the books: paid 4000, refunded 4000, the fee spent and nothing else
    installation = api.keys.installation_id
    assert ledger_balance(db, installation, "world:dispute_fees") == FEE
    assert ledger_balance(db, installation, "world:card_network") == 0
    assert_ledger_verifies(servers)


def test_a_lost_dispute_holds_back_its_amount_and_the_rest_can_be_refunded(api, db, servers, money_stack):
    payment = paid(api, 5000)
    dispute = disputed(api, payment["id"], amount=3000)
    assert_refund_refused_and_nothing_written(api, db, payment["id"], amount=500)
    closed = api.post(f"/v1/disputes/{dispute['id']}/close")
    assert closed.status_code == 200, closed.text
    assert closed.json()["status"] == "lost"

    over = refund(api, payment["id"], amount=2001)
    error = assert_error(over, 400, "amount_invalid", "amount")
    assert dispute["id"] in error["message"] and "lost" in error["message"]
    assert refunded(api, payment["id"])["amount"] == 2000  # what the dispute did not take
    error = assert_refund_refused_and_nothing_written(api, db, payment["id"])
    assert dispute["id"] in error["message"] and "lost" in error["message"]
    assert api.get(f"/v1/payment-intents/{payment['id']}").json()["amount_refunded"] == 2000
    assert_ledger_verifies(servers)


def test_a_payment_disputed_and_lost_in_full_is_never_refunded(api, db, money_stack):
    payment = paid(api, 2500)
    dispute = disputed(api, payment["id"])
    body = {"evidence": {"uncategorized_text": "it was delivered"}, "submit": True}
    assert api.post(f"/v1/disputes/{dispute['id']}/evidence", json=body).status_code == 200
    advance(api, 25 * HOUR)
    assert api.get(f"/v1/disputes/{dispute['id']}").json()["status"] == "lost"
    error = assert_refund_refused_and_nothing_written(api, db, payment["id"])
    assert dispute["id"] in error["message"] and "2500" in error["message"]
    assert api.get(f"/v1/payment-intents/{payment['id']}").json()["amount_refunded"] == 0
