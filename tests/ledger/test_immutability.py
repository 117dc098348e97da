"""The journal cannot be changed or deleted: PostgreSQL refuses, whoever asks (ARCHITECTURE.md §2)."""

from __future__ import annotations

import psycopg
import pytest

from moneyrail.kit.ids import new_id
from tests.ledger.support import balance, ensure_accounts, post, seal_until_sealed

REFUSED = "ledger is append-only; post a reversing entry"


@pytest.fixture
def sealed_payment(bridge, db, tenant):
    journal = post(
        bridge,
        tenant.tenant,
        ("customer_funds", -10_000, "usd"),
        ("merchant:mer_a:available", 9_710, "usd"),
        ("platform:fees", 290, "usd"),
        kind="payment",
    )
    seal_until_sealed(bridge, db, [journal.id])
    return journal


# one row of each ledger table that belongs to the sealed payment
ROW_OF = {
    "journal_transactions": "id = %(jtx)s",
    "postings": "transaction_id = %(jtx)s",
    "ledger_accounts": "id IN (SELECT account_id FROM postings WHERE transaction_id = %(jtx)s)",
    "ledger_block_entries": "transaction_id = %(jtx)s",
    "ledger_blocks": (
        "height = (SELECT block_height FROM ledger_block_entries WHERE transaction_id = %(jtx)s)"
    ),
}
CHANGE_OF = {
    "journal_transactions": "kind = 'refund'",
    "postings": "amount = amount * 2",
    "ledger_accounts": "code = 'someone:else'",
    "ledger_block_entries": "position = position + 1",
    "ledger_blocks": "block_hash = repeat('0', 64)",
}


@pytest.mark.parametrize("table", sorted(ROW_OF))
def test_update_is_refused(db, sealed_payment, table):
    with pytest.raises(
        psycopg.errors.IntegrityConstraintViolation, match=f"{REFUSED} \\(UPDATE on {table}\\)"
    ):
        db.execute(f"UPDATE {table} SET {CHANGE_OF[table]} WHERE {ROW_OF[table]}", {"jtx": sealed_payment.id})


@pytest.mark.parametrize("table", sorted(ROW_OF))
def test_delete_is_refused(db, sealed_payment, table):
    with pytest.raises(
        psycopg.errors.IntegrityConstraintViolation, match=f"{REFUSED} \\(DELETE on {table}\\)"
    ):
        db.execute(f"DELETE FROM {table} WHERE {ROW_OF[table]}", {"jtx": sealed_payment.id})


@pytest.mark.parametrize(
    "table",
    [
        "journal_transactions",
        "postings",
        "ledger_accounts",
        "ledger_blocks",
        "ledger_block_entries",
        "ledger_balance_checkpoints",
    ],
)
def test_truncate_is_refused(db, sealed_payment, table):
    with pytest.raises(
        psycopg.errors.IntegrityConstraintViolation, match=f"{REFUSED} \\(TRUNCATE on {table}\\)"
    ):
        db.execute(f"TRUNCATE {table} CASCADE")


def test_an_unsealed_entry_is_just_as_immutable(bridge, db, tenant):
    journal = post(bridge, tenant.tenant, ("customer_funds", -100, "usd"), ("platform:fees", 100, "usd"))
    with pytest.raises(psycopg.errors.IntegrityConstraintViolation, match=REFUSED):
        db.execute("UPDATE postings SET amount = -amount WHERE transaction_id = %s", (journal.id,))
    assert balance(bridge, tenant.tenant, "platform:fees") == 100


def test_a_row_claiming_another_transaction_id_is_refused(bridge, db, tenant):
    # The sealer orders by txid: a row claiming an old one (to hide below the sealed horizon, where
    # nothing is ever sealed again) is refused when its transaction commits.
    cash, fees = ensure_accounts(bridge, tenant.tenant, "customer_funds", "platform:fees")
    with (
        pytest.raises(psycopg.errors.IntegrityConstraintViolation, match="with that transaction's own txid"),
        db.transaction(),
    ):
        db.execute(
            "INSERT INTO journal_transactions (id, installation_id, livemode, kind, txid)"
            " VALUES (%s, %s, false, 'forged', 3)",
            (new_id("jtx"), tenant.installation_id),
        )
        journal_id = db.execute(
            "SELECT id FROM journal_transactions WHERE kind = 'forged' AND txid = 3"
        ).fetchone()[0]
        for account_id, amount in ((cash, -100), (fees, 100)):
            db.execute(
                "INSERT INTO postings (transaction_id, account_id, currency, amount, txid)"
                " VALUES (%s, %s, 'usd', %s, 3)",
                (journal_id, account_id, amount),
            )
