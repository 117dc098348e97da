"""`post_standalone`: a journal transaction that is a whole unit of work commits on its own."""

from __future__ import annotations

import asyncpg
import pytest

from moneyrail.db.raw import autocommit_connection
from moneyrail.ledger import repository
from moneyrail.ledger import service as ledger
from moneyrail.ledger.errors import IdempotencyKeyConflict, UnbalancedTransaction
from moneyrail.ledger.service import Posting
from tests.helpers import count_rows
from tests.ledger.support import balance, ensure_accounts, verify

FEE = [Posting("merchant:mer_a:available", -290, "usd"), Posting("platform:fees", 290, "usd")]


def _post_standalone(bridge, tenant, postings, **options):
    return bridge.run(
        ledger.post_standalone(bridge.sessionmaker, tenant, kind="fee", postings=postings, **options)
    )


def test_it_creates_accounts_on_first_use_then_posts_in_one_statement_and_both_are_committed(
    bridge, db, tenant
):
    first = _post_standalone(bridge, tenant.tenant, FEE)  # no accounts yet: the general path
    second = _post_standalone(bridge, tenant.tenant, FEE)  # the single statement
    assert first.id != second.id and first.kind == second.kind == "fee"
    # read from another connection: both are committed, nothing is left open
    assert count_rows(db, "journal_transactions", tenant.installation_id) == 2
    assert balance(bridge, tenant.tenant, "platform:fees") == 580
    assert balance(bridge, tenant.tenant, "merchant:mer_a:available") == -580
    assert verify(bridge).ok


def test_a_repeated_idempotency_key_returns_the_first_transaction_and_other_legs_raise(bridge, db, tenant):
    ensure_accounts(bridge, tenant.tenant, "merchant:mer_a:available", "platform:fees")
    first = _post_standalone(bridge, tenant.tenant, FEE, idempotency_key="op_1:fee")
    again = _post_standalone(bridge, tenant.tenant, list(reversed(FEE)), idempotency_key="op_1:fee")
    assert again.id == first.id
    with pytest.raises(IdempotencyKeyConflict, match="other postings"):
        _post_standalone(
            bridge,
            tenant.tenant,
            [Posting("merchant:mer_a:available", -300, "usd"), Posting("platform:fees", 300, "usd")],
            idempotency_key="op_1:fee",
        )
    assert count_rows(db, "journal_transactions", tenant.installation_id) == 1
    assert balance(bridge, tenant.tenant, "platform:fees") == 290


def test_python_refuses_unbalanced_legs_before_any_write(bridge, db, tenant):
    with pytest.raises(UnbalancedTransaction, match="usd postings sum to 10"):
        _post_standalone(
            bridge,
            tenant.tenant,
            [Posting("merchant:mer_a:available", -290, "usd"), Posting("platform:fees", 300, "usd")],
        )
    assert count_rows(db, "journal_transactions", tenant.installation_id) == 0


def test_the_statement_alone_still_meets_the_commit_time_balance_check(bridge, db, tenant):
    # Past Python's checks, straight to the statement outside any transaction: PostgreSQL commits it
    # by itself, and the deferred trigger refuses it at that commit, before the statement returns.
    ensure_accounts(bridge, tenant.tenant, "merchant:mer_a:available", "platform:fees")

    async def unbalanced() -> None:
        async with autocommit_connection(bridge.sessionmaker) as connection:
            await repository.insert_transaction(
                connection,
                repository.NewJournalTransaction(
                    "jtx_unbalanced",
                    tenant.tenant,
                    "fee",
                    None,
                    None,
                    [("merchant:mer_a:available", -290, "usd"), ("platform:fees", 300, "usd")],
                ),
            )

    with pytest.raises(asyncpg.CheckViolationError, match="does not balance: its usd postings sum to 10"):
        bridge.run(unbalanced())
    assert count_rows(db, "journal_transactions", tenant.installation_id) == 0
