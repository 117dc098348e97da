"""Group commit: concurrent `post_standalone` calls share one statement and one commit, and each caller
still gets its own answer (its transaction, its replay, its refusal)."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
import pytest

from moneyrail.kit.tenant import Tenant
from moneyrail.ledger import service as ledger
from moneyrail.ledger.errors import IdempotencyKeyConflict
from moneyrail.ledger.service import Posting
from tests.harness import AsyncBridge
from tests.helpers import count_rows
from tests.ledger.support import balance, ensure_accounts, verify

MERCHANT, FEES = "merchant:mer_a:available", "platform:fees"


def _fee(amount: int = 290, merchant: str = MERCHANT) -> list[Posting]:
    return [Posting(merchant, -amount, "usd"), Posting(FEES, amount, "usd")]


def _post_at_once(bridge: AsyncBridge, tenant: Tenant, calls: list[dict[str, Any]]) -> list[Any]:
    """Every call started in the same moment, as concurrent writers do; results or exceptions."""

    async def all_at_once() -> list[Any]:
        return await asyncio.gather(
            *(ledger.post_standalone(bridge.sessionmaker, tenant, kind="fee", **call) for call in calls),
            return_exceptions=True,
        )

    results: list[Any] = bridge.run(all_at_once())
    return results


def _commits(db: Any, installation_id: str) -> int:
    """Distinct database transactions that wrote the installation's journal."""
    row = db.execute(
        "SELECT count(DISTINCT txid) FROM journal_transactions WHERE installation_id = %s",
        (installation_id,),
    ).fetchone()
    return int(row[0])


def test_concurrent_postings_share_a_commit_and_each_caller_gets_its_own_transaction(bridge, db, tenant):
    ensure_accounts(bridge, tenant.tenant, MERCHANT, FEES)
    results = _post_at_once(bridge, tenant.tenant, [{"postings": _fee(n)} for n in range(1, 25)])

    assert [type(result).__name__ for result in results] == ["JournalRecord"] * 24
    assert len({result.id for result in results}) == 24
    assert count_rows(db, "journal_transactions", tenant.installation_id) == 24
    assert _commits(db, tenant.installation_id) <= 2  # one statement took what was queued
    # each caller got back its own transaction: its amount, its legs
    for amount, result in enumerate(results, 1):
        legs = db.execute(
            "SELECT amount FROM postings WHERE transaction_id = %s ORDER BY amount", (result.id,)
        ).fetchall()
        assert [leg[0] for leg in legs] == [-amount, amount]
    assert balance(bridge, tenant.tenant, FEES) == sum(range(1, 25))
    assert verify(bridge).ok


def test_a_new_account_and_a_used_key_take_the_single_path_and_the_rest_are_written_together(
    bridge, db, tenant
):
    ensure_accounts(bridge, tenant.tenant, MERCHANT, FEES)
    (earlier,) = _post_at_once(bridge, tenant.tenant, [{"postings": _fee(), "idempotency_key": "op_1"}])

    results = _post_at_once(
        bridge,
        tenant.tenant,
        [
            {"postings": _fee(merchant="merchant:mer_new:available")},  # first use of an account
            {"postings": _fee(), "idempotency_key": "op_1"},  # a retry: the first comes back
            {"postings": _fee(300), "idempotency_key": "op_1"},  # the same key, other legs: a bug
            *({"postings": _fee(), "idempotency_key": f"op_{n}"} for n in range(2, 7)),
        ],
    )

    new_account, replayed, conflicting, *plain = results
    assert new_account.kind == "fee" and balance(bridge, tenant.tenant, "merchant:mer_new:available") == -290
    assert replayed.id == earlier.id
    assert isinstance(conflicting, IdempotencyKeyConflict)
    assert len({journal.id for journal in plain}) == 5 and all(j.kind == "fee" for j in plain)
    # the earlier one, the new account's, and the five: the replay and the conflict wrote nothing
    assert count_rows(db, "journal_transactions", tenant.installation_id) == 7
    assert balance(bridge, tenant.tenant, FEES) == 290 * 7
    assert verify(bridge).ok


def test_the_same_key_twice_in_one_batch_is_one_transaction(bridge, db, tenant):
    ensure_accounts(bridge, tenant.tenant, MERCHANT, FEES)
    once, twice = _post_at_once(bridge, tenant.tenant, [{"postings": _fee(), "idempotency_key": "op_9"}] * 2)
    assert once.id == twice.id
    assert count_rows(db, "journal_transactions", tenant.installation_id) == 1
    assert balance(bridge, tenant.tenant, FEES) == 290


def test_a_transaction_the_database_refuses_sinks_only_itself(bridge, db, tenant):
    ensure_accounts(bridge, tenant.tenant, MERCHANT, FEES)
    # PostgreSQL's text cannot hold NUL: the server refuses the whole statement that carries it
    results = _post_at_once(
        bridge,
        tenant.tenant,
        [
            *({"postings": _fee(), "reference": f"op_{n}"} for n in range(3)),
            {"postings": _fee(), "reference": "op_\x00"},
            *({"postings": _fee(), "reference": f"op_{n}"} for n in range(3, 6)),
        ],
    )

    refused = results.pop(3)
    assert isinstance(refused, asyncpg.PostgresError)
    assert [journal.reference for journal in results] == [f"op_{n}" for n in range(6)]
    assert count_rows(db, "journal_transactions", tenant.installation_id) == 6
    assert balance(bridge, tenant.tenant, FEES) == 290 * 6
    assert verify(bridge).ok


def test_a_lone_refusal_reaches_its_caller(bridge, db, tenant):
    ensure_accounts(bridge, tenant.tenant, MERCHANT, FEES)
    with pytest.raises(asyncpg.PostgresError):
        bridge.run(
            ledger.post_standalone(
                bridge.sessionmaker, tenant.tenant, kind="fee", postings=_fee(), reference="op_\x00"
            )
        )
    assert count_rows(db, "journal_transactions", tenant.installation_id) == 0
