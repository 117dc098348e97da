"""A capture's postings written with its last statement: the fee shortfall and the
ledger accounts are asked with the payment's facts; the postings then ride in the statement of the
payment's UPDATE and event, or the capture takes the posting's own path (a shortfall to recover, an
account used for the first time). Either way the ledger gets the same journal transaction."""

from __future__ import annotations

from typing import Any

import pytest

from tests.payments.support import (
    COST_OF_10000,
    DAY,
    balance_of,
    confirm,
    create_payment,
    ledger_balance,
    paid,
    set_commission,
)

pytestmark = pytest.mark.usefixtures("ledger_verified_afterwards")


def authorized(api: Any, amount: int) -> dict[str, Any]:
    payment = create_payment(api, amount, capture_method="manual")
    confirmed = confirm(api, payment)
    assert confirmed.status_code == 200 and confirmed.json()["status"] == "requires_capture", confirmed.text
    return payment


def capture_journal(db: Any, payment_id: str) -> list[tuple[str, int]]:
    rows = db.execute(
        """
        SELECT a.code, p.amount FROM journal_transactions j
        JOIN postings p ON p.transaction_id = j.id JOIN ledger_accounts a ON a.id = p.account_id
        WHERE j.kind = 'payment_capture' AND j.reference = %s ORDER BY p.id
        """,
        (payment_id,),
    ).fetchall()
    return [(code, int(amount)) for code, amount in rows]


def test_the_first_capture_of_a_tenant_and_the_next_ones_post_the_same_legs(api, db):
    first = authorized(api, 3_000)  # no ledger account yet: the posting's own path creates them
    assert api.post(f"/v1/payment-intents/{first['id']}/capture").json()["status"] == "succeeded"
    second = authorized(api, 3_000)  # accounts there, no shortfall: the postings ride in the last statement
    assert api.post(f"/v1/payment-intents/{second['id']}/capture").json()["status"] == "succeeded"
    legs = [("world:card_network", -3_000), ("balance:pending", 3_000)]
    assert capture_journal(db, first["id"]) == legs
    assert capture_journal(db, second["id"]) == legs
    assert balance_of(api, "pending") == 6_000


def test_a_manual_capture_recovers_an_earlier_shortfall(api, bridge, db):
    set_commission(bridge, api.keys, basis_points=100, fixed_amount=50)  # 1% + 0.50
    authorized_before = authorized(api, 10_000)
    first = paid(api, 10_000)
    advanced = api.post("/v1/test-helpers/clock/advance", json={"seconds": 3 * DAY + 1})
    assert advanced.json()["work_done"]["payments.cost_reports"] == 1
    assert api.get(f"/v1/payment-intents/{first['id']}").json()["fees"]["outstanding"] == COST_OF_10000 - 150

    # authorized before the shortfall, captured after it: the capture recovers it
    captured = api.post(f"/v1/payment-intents/{authorized_before['id']}/capture")
    assert captured.status_code == 200, captured.text
    assert captured.json()["fees"]["prior_recovery"] == 170
    assert capture_journal(db, authorized_before["id"]) == [
        ("world:card_network", -10_000),
        ("balance:pending", 10_000 - 150 - 170),
        ("service:reserve", 150),
        ("fees:owed", 170),
    ]
    assert api.get("/v1/balance").json()["fees_outstanding"] == []
    assert ledger_balance(db, api.keys.installation_id, "fees:owed") == 0

    # nothing owed any more: the next one recovers nothing
    later = authorized(api, 10_000)
    assert api.post(f"/v1/payment-intents/{later['id']}/capture").json()["fees"]["prior_recovery"] == 0
    assert capture_journal(db, later["id"]) == [
        ("world:card_network", -10_000),
        ("balance:pending", 10_000 - 150),
        ("service:reserve", 150),
    ]


def test_postings_the_last_statement_cannot_write_leave_the_capture_undone(api, db):
    """The postings that ride in the last statement are written or the statement fails: here their
    journal's key is taken already (it never is outside a test), so the whole capture rolls back."""
    paid(api, 2_000)  # the tenant's accounts exist: the capture's postings go in its last statement
    payment = authorized(api, 2_000)
    taken = {"id": f"jtx_test_{payment['id']}", "installation": api.keys.installation_id}
    with db.transaction():
        db.execute(
            "INSERT INTO journal_transactions"
            " (id, installation_id, livemode, kind, reference, idempotency_key)"
            " VALUES (%(id)s, %(installation)s, false, 'adjustment', 'test', %(key)s)",
            taken | {"key": f"{payment['id']}:capture"},
        )
        db.execute(
            "INSERT INTO postings (transaction_id, account_id, currency, amount)"
            " SELECT %(id)s, a.id, 'eur', CASE a.code WHEN 'balance:pending' THEN 1 ELSE -1 END"
            " FROM ledger_accounts a WHERE a.installation_id = %(installation)s AND NOT a.livemode"
            " AND a.currency = 'eur' AND a.code IN ('balance:pending', 'world:card_network')",
            taken,
        )
    pending_before = balance_of(api, "pending")

    refused = api.post(f"/v1/payment-intents/{payment['id']}/capture")
    assert refused.status_code == 500, refused.text
    assert api.get(f"/v1/payment-intents/{payment['id']}").json()["status"] == "requires_capture"
    assert capture_journal(db, payment["id"]) == []
    assert balance_of(api, "pending") == pending_before
