"""Several journal transactions in one statement (ledger.post_many, what an allocation commit posts its
transfers with): each balanced and idempotent on its own, in the callers' order, whatever path each took."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.ledger import service as ledger
from moneyrail.ledger.repository import JournalRecord
from moneyrail.ledger.service import Entry, Posting
from tests.helpers import count_rows
from tests.ledger.support import balance, ensure_accounts, post, verify


def transfer(recipient: str, amount: int, key: str) -> Entry:
    return Entry(
        kind="transfer",
        reference=key,
        idempotency_key=key,
        postings=[Posting("balance:available", -amount, "eur"), Posting(recipient, amount, "eur")],
    )


def post_many(bridge, tenant, *entries: Entry) -> list[JournalRecord]:
    async def work(session: AsyncSession) -> list[JournalRecord]:
        return await ledger.post_many(session, tenant, entries)

    written: list[JournalRecord] = bridge.in_unit_of_work(work)
    return written


def test_four_transfers_are_four_balanced_transactions_in_order(bridge, db, tenant):
    ensure_accounts(bridge, tenant.tenant, "balance:available", "a", "b", "c", "d", currency="eur")
    written = post_many(
        bridge,
        tenant.tenant,
        *(
            transfer(code, amount, f"k{n}")
            for n, (code, amount) in enumerate(zip("abcd", (400, 300, 200, 100), strict=True))
        ),
    )
    assert [journal.idempotency_key for journal in written] == ["k0", "k1", "k2", "k3"]
    assert len({journal.id for journal in written}) == 4
    assert count_rows(db, "journal_transactions", tenant.installation_id) == 4
    assert [balance(bridge, tenant.tenant, code, "eur") for code in "abcd"] == [400, 300, 200, 100]
    assert balance(bridge, tenant.tenant, "balance:available", "eur") == -1000
    assert verify(bridge).ok


def test_a_first_used_account_and_a_key_posted_before_take_posts_path_and_nothing_is_posted_twice(
    bridge, db, tenant
):
    ensure_accounts(bridge, tenant.tenant, "balance:available", "a", currency="eur")
    earlier = post(
        bridge,
        tenant.tenant,
        ("balance:available", -50, "eur"),
        ("a", 50, "eur"),
        kind="transfer",
        reference="k0",
        idempotency_key="k0",
    )
    written = post_many(
        bridge,
        tenant.tenant,
        transfer("a", 50, "k0"),  # posted before: the first transaction comes back
        transfer("new_account", 70, "k1"),  # an account used for the first time: created, then posted
        transfer("a", 30, "k2"),
    )
    assert written[0].id == earlier.id
    assert [journal.idempotency_key for journal in written] == ["k0", "k1", "k2"]
    assert count_rows(db, "journal_transactions", tenant.installation_id) == 3
    assert balance(bridge, tenant.tenant, "a", "eur") == 80
    assert balance(bridge, tenant.tenant, "new_account", "eur") == 70
    # the whole batch again: every key answers with its first transaction, nothing more is written
    again = post_many(bridge, tenant.tenant, transfer("a", 50, "k0"), transfer("new_account", 70, "k1"))
    assert [journal.id for journal in again] == [written[0].id, written[1].id]
    assert count_rows(db, "journal_transactions", tenant.installation_id) == 3
    assert verify(bridge).ok
