"""Posting, as accounting worked examples: every movement balances, in every currency.

Sign convention: a positive leg adds to an account's balance, a negative leg takes from it.
"""

from __future__ import annotations

import psycopg
import pytest

from moneyrail.kit.ids import new_id
from moneyrail.ledger import service as ledger
from moneyrail.ledger.errors import IdempotencyKeyConflict, InvalidPosting, UnbalancedTransaction
from moneyrail.ledger.service import Posting
from tests.helpers import count_rows
from tests.ledger.support import (
    balance,
    ensure_accounts,
    post,
    seal_until_sealed,
    sum_of_postings,
    two_connections,
    verify,
)


def test_a_card_payment_moves_the_amount_from_customer_funds_to_the_merchant_and_the_platform_fee(
    bridge, tenant
):
    # A customer pays 100.00 USD; the platform keeps 2.90, the merchant gets 97.10.
    journal = post(
        bridge,
        tenant.tenant,
        ("customer_funds", -10_000, "usd"),
        ("merchant:mer_a:available", 9_710, "usd"),
        ("platform:fees", 290, "usd"),
        kind="payment",
        reference="pay_1",
    )
    assert journal.id.startswith("jtx_") and journal.kind == "payment" and journal.reference == "pay_1"
    assert balance(bridge, tenant.tenant, "customer_funds") == -10_000
    assert balance(bridge, tenant.tenant, "merchant:mer_a:available") == 9_710
    assert balance(bridge, tenant.tenant, "platform:fees") == 290


def test_a_currency_conversion_balances_in_each_currency_separately(bridge, tenant):
    # The customer pays 100.00 USD, the merchant is credited 92.00 EUR: the FX desk takes the dollars
    # and gives the euros. Each currency sums to zero on its own; "fx:desk" is two accounts.
    post(
        bridge,
        tenant.tenant,
        ("customer_funds", -10_000, "usd"),
        ("fx:desk", 10_000, "usd"),
        ("fx:desk", -9_200, "eur"),
        ("merchant:mer_a:available", 9_200, "eur"),
        kind="payment",
    )
    assert balance(bridge, tenant.tenant, "fx:desk", "usd") == 10_000
    assert balance(bridge, tenant.tenant, "fx:desk", "eur") == -9_200
    assert balance(bridge, tenant.tenant, "merchant:mer_a:available", "eur") == 9_200
    assert balance(bridge, tenant.tenant, "merchant:mer_a:available", "usd") == 0


def test_legs_that_balance_overall_but_not_per_currency_are_refused_before_any_write(bridge, db, tenant):
    with pytest.raises(UnbalancedTransaction, match="eur postings sum to 10000"):
        post(
            bridge,
            tenant.tenant,
            ("customer_funds", -10_000, "usd"),
            ("merchant:mer_a:available", 10_000, "eur"),
        )
    assert count_rows(db, "journal_transactions", tenant.installation_id) == 0
    assert count_rows(db, "ledger_accounts", tenant.installation_id) == 0


@pytest.mark.parametrize(
    ("legs", "error", "message"),
    [
        ([("a", 100, "usd"), ("b", -90, "usd")], UnbalancedTransaction, "usd postings sum to 10"),
        ([("a", 100, "usd")], UnbalancedTransaction, "at least 2 postings"),
        ([], UnbalancedTransaction, "at least 2 postings"),
        ([("a", 0, "usd"), ("b", 0, "usd")], InvalidPosting, "zero amount"),
        ([("a", 1.5, "usd"), ("b", -1.5, "usd")], InvalidPosting, "integer minor units"),
        ([("a", True, "usd"), ("b", -1, "usd")], InvalidPosting, "integer minor units"),
        ([("a", 100, "USD"), ("b", -100, "USD")], InvalidPosting, "ISO 4217"),
        ([("a", 2**63, "usd"), ("b", -(2**63), "usd")], InvalidPosting, "64 bits"),
        ([("", 100, "usd"), ("b", -100, "usd")], InvalidPosting, "account code"),
    ],
)
def test_python_refuses_what_cannot_be_posted(bridge, tenant, legs, error, message):
    with pytest.raises(error, match=message):
        post(bridge, tenant.tenant, *legs)


def _insert_raw(db, installation_id, journal_id, legs):
    db.execute(
        "INSERT INTO journal_transactions (id, installation_id, livemode, kind)"
        " VALUES (%s, %s, false, 'raw')",
        (journal_id, installation_id),
    )
    for account_id, amount, currency in legs:
        db.execute(
            "INSERT INTO postings (transaction_id, account_id, currency, amount) VALUES (%s, %s, %s, %s)",
            (journal_id, account_id, currency, amount),
        )


def test_postgresql_refuses_an_unbalanced_transaction_when_it_commits(bridge, db, tenant):
    # Python is not the only guard: SQL written by hand meets the deferred constraint trigger.
    cash, fees = ensure_accounts(bridge, tenant.tenant, "customer_funds", "platform:fees")
    journal_id = new_id("jtx")
    with (
        pytest.raises(psycopg.errors.CheckViolation, match="does not balance: its usd postings sum to 10"),
        db.transaction(),
    ):
        _insert_raw(db, tenant.installation_id, journal_id, [(cash, -100, "usd"), (fees, 110, "usd")])
        # each INSERT was accepted: the check runs at COMMIT, when the whole transaction is there
    assert db.execute(
        "SELECT count(*) FROM journal_transactions WHERE id = %s", (journal_id,)
    ).fetchone() == (0,)


@pytest.mark.parametrize("legs", [0, 1])
def test_postgresql_refuses_a_transaction_with_fewer_than_two_postings(bridge, db, tenant, legs):
    (cash,) = ensure_accounts(bridge, tenant.tenant, "customer_funds")
    with pytest.raises(psycopg.errors.CheckViolation, match=f"has {legs} posting"), db.transaction():
        _insert_raw(db, tenant.installation_id, new_id("jtx"), [(cash, 100, "usd")][:legs])


def test_postgresql_refuses_a_posting_in_another_currency_than_its_account(bridge, db, tenant):
    cash, fees = ensure_accounts(bridge, tenant.tenant, "customer_funds", "platform:fees")
    with pytest.raises(psycopg.errors.ForeignKeyViolation), db.transaction():
        _insert_raw(db, tenant.installation_id, new_id("jtx"), [(cash, -100, "eur"), (fees, 100, "eur")])


def test_postgresql_refuses_a_posting_on_an_account_that_does_not_exist(bridge, db, tenant):
    (cash,) = ensure_accounts(bridge, tenant.tenant, "customer_funds")
    with (
        pytest.raises(psycopg.errors.ForeignKeyViolation, match=r"1 leg\(s\) on an account that does not"),
        db.transaction(),
    ):
        _insert_raw(
            db, tenant.installation_id, new_id("jtx"), [(cash, -100, "usd"), ("la_nowhere", 100, "usd")]
        )


def test_postgresql_refuses_a_posting_on_another_tenants_account(bridge, db, tenant, make_tenant):
    # Hand-written SQL cannot move money between installations: each leg's account is the journal's.
    other = make_tenant()
    (cash,) = ensure_accounts(bridge, tenant.tenant, "customer_funds")
    (theirs,) = ensure_accounts(bridge, other.tenant, "customer_funds")
    with (
        pytest.raises(psycopg.errors.ForeignKeyViolation, match="another installation's or environment's"),
        db.transaction(),
    ):
        _insert_raw(db, tenant.installation_id, new_id("jtx"), [(cash, -100, "usd"), (theirs, 100, "usd")])


async def _post_payment(session, tenant) -> None:
    """A payment posted on the caller's session, its transaction left to the caller."""
    await ledger.post(
        session,
        tenant,
        kind="payment",
        postings=[Posting("customer_funds", -100, "usd"), Posting("platform:fees", 100, "usd")],
    )


def test_posting_locks_neither_its_accounts_nor_its_installation(servers, bridge, db, tenant):
    # Every payment posts to the platform's few accounts: a row lock on them (a foreign key check
    # takes one) would queue concurrent payments behind each other.
    cash, fees = ensure_accounts(bridge, tenant.tenant, "customer_funds", "platform:fees")

    async def post_and_probe_while_open() -> None:
        async with two_connections(servers.database_url) as sessions, sessions() as session:
            await _post_payment(session, tenant.tenant)
            # the posting's transaction is still open: another one may still lock these rows at once
            for table, row_id in (
                ("ledger_accounts", cash),
                ("ledger_accounts", fees),
                ("installations", tenant.installation_id),
            ):
                db.execute(f"SELECT 1 FROM {table} WHERE id = %s FOR UPDATE NOWAIT", (row_id,))
            await session.commit()

    bridge.run(post_and_probe_while_open())
    assert verify(bridge).problems == []


def test_switching_the_check_to_immediate_lets_no_extra_leg_through(bridge, db, tenant):
    cash, fees = ensure_accounts(bridge, tenant.tenant, "customer_funds", "platform:fees")
    journal_id = new_id("jtx")
    with (
        pytest.raises(psycopg.errors.CheckViolation, match="does not balance: its usd postings sum to 5"),
        db.transaction(),
    ):
        _insert_raw(db, tenant.installation_id, journal_id, [(cash, -100, "usd"), (fees, 100, "usd")])
        db.execute("SET CONSTRAINTS ALL IMMEDIATE")  # the balanced transaction passes its check here
        db.execute(
            "INSERT INTO postings (transaction_id, account_id, currency, amount) VALUES (%s, %s, 'usd', 5)",
            (journal_id, fees),
        )


def test_a_posting_rolled_back_with_its_unit_of_work_leaves_nothing(servers, bridge, db, tenant):
    # post() is often a unit of work's first statement: it must run inside that transaction.
    async def post_then_roll_back():
        async with two_connections(servers.database_url) as sessions, sessions() as session:
            await _post_payment(session, tenant.tenant)
            await session.rollback()

    bridge.run(post_then_roll_back())
    assert count_rows(db, "journal_transactions", tenant.installation_id) == 0


def test_postgresql_refuses_new_legs_on_a_committed_transaction(bridge, db, tenant):
    # Two more legs that balance each other would still change what was posted (and sealed).
    journal = post(bridge, tenant.tenant, ("customer_funds", -500, "usd"), ("platform:fees", 500, "usd"))
    cash, fees = ensure_accounts(bridge, tenant.tenant, "customer_funds", "platform:fees")
    with (
        pytest.raises(
            psycopg.errors.IntegrityConstraintViolation, match="must be written by one database transaction"
        ),
        db.transaction(),
    ):
        for account_id, amount in ((cash, -1_000_000), (fees, 1_000_000)):
            db.execute(
                "INSERT INTO postings (transaction_id, account_id, currency, amount)"
                " VALUES (%s, %s, 'usd', %s)",
                (journal.id, account_id, amount),
            )
    assert balance(bridge, tenant.tenant, "platform:fees") == 500


def test_posting_again_with_the_same_idempotency_key_returns_the_first_transaction(bridge, db, tenant):
    # An actor retried after a crash posts the fee again with the key derived from its operation.
    legs = (("merchant:mer_a:available", -290, "usd"), ("platform:fees", 290, "usd"))
    first = post(bridge, tenant.tenant, *legs, kind="fee", idempotency_key="op_1:fee")
    again = post(bridge, tenant.tenant, *reversed(legs), kind="fee", idempotency_key="op_1:fee")
    assert again.id == first.id and again.seq == first.seq
    assert count_rows(db, "journal_transactions", tenant.installation_id) == 1
    assert balance(bridge, tenant.tenant, "platform:fees") == 290


def test_the_same_idempotency_key_with_other_postings_is_a_bug_and_raises(bridge, tenant):
    post(bridge, tenant.tenant, ("a", -290, "usd"), ("platform:fees", 290, "usd"), idempotency_key="k")
    with pytest.raises(IdempotencyKeyConflict, match="other postings"):
        post(bridge, tenant.tenant, ("a", -300, "usd"), ("platform:fees", 300, "usd"), idempotency_key="k")


def test_idempotency_keys_are_per_tenant(bridge, tenant, make_tenant):
    other = make_tenant()
    legs = (("a", -1, "usd"), ("b", 1, "usd"))
    assert (
        post(bridge, tenant.tenant, *legs, idempotency_key="k").id
        != post(bridge, other.tenant, *legs, idempotency_key="k").id
    )


def test_a_balance_is_the_sum_of_its_postings_before_and_after_checkpoints(bridge, db, tenant, monkeypatch):
    # A checkpoint at every sealing that touches an account, so a few payments cross several.
    monkeypatch.setattr(ledger, "CHECKPOINT_MAX_BLOCKS", 1)
    sealed = []
    for n in range(1, 8):
        journal = post(
            bridge,
            tenant.tenant,
            ("customer_funds", -1_000 * n, "usd"),
            ("merchant:mer_a:available", 1_000 * n - 29 * n, "usd"),
            ("platform:fees", 29 * n, "usd"),
        )
        sealed.append(journal.id)
        if n in (3, 6):
            seal_until_sealed(bridge, db, sealed)
    checkpoints = db.execute(
        "SELECT count(*) FROM ledger_balance_checkpoints c JOIN ledger_accounts a ON a.id = c.account_id"
        " WHERE a.installation_id = %s",
        (tenant.installation_id,),
    ).fetchone()
    assert checkpoints[0] >= 3  # each of the three accounts passed 3 postings
    for code in ("customer_funds", "merchant:mer_a:available", "platform:fees"):
        assert balance(bridge, tenant.tenant, code) == sum_of_postings(db, tenant.tenant, code)
    assert balance(bridge, tenant.tenant, "platform:fees") == 29 * sum(range(1, 8))
    assert verify(bridge).problems == []


def test_a_correction_is_a_reversing_entry(bridge, tenant):
    charge = post(
        bridge, tenant.tenant, ("customer_funds", -5_000, "usd"), ("merchant:mer_a:available", 5_000, "usd")
    )
    post(
        bridge,
        tenant.tenant,
        ("merchant:mer_a:available", -5_000, "usd"),
        ("customer_funds", 5_000, "usd"),
        kind="reversal",
        reference=charge.id,
    )
    assert balance(bridge, tenant.tenant, "merchant:mer_a:available") == 0


def test_accounts_are_created_once_and_per_tenant(bridge, tenant, make_tenant):
    first = ensure_accounts(bridge, tenant.tenant, "platform:fees", "platform:fees")
    assert first[0] == first[1] and first[0].startswith("la_")
    assert ensure_accounts(bridge, tenant.tenant, "platform:fees", currency="eur") != first[:1]
    assert ensure_accounts(bridge, make_tenant().tenant, "platform:fees") != first[:1]
    with pytest.raises(InvalidPosting):
        ensure_accounts(bridge, tenant.tenant, "spaces are not allowed")


def test_posting_is_a_frozen_value():
    posting = Posting("platform:fees", 290, "usd")
    with pytest.raises(AttributeError):
        posting.amount = 1  # type: ignore[misc]


def post_if_not_negative(bridge, tenant, guard, *legs, idempotency_key=None):
    async def work(session):
        return await ledger.post_if_not_negative(
            session,
            tenant,
            guard=guard,
            kind="guarded",
            postings=[Posting(code, amount, currency) for code, amount, currency in legs],
            idempotency_key=idempotency_key,
        )

    return bridge.in_unit_of_work(work)


def test_a_guarded_posting_is_written_only_while_its_guard_account_is_not_negative(bridge, db, tenant):
    owner = tenant.tenant
    legs = (("world:in", -500, "usd"), ("balance:in", 500, "usd"))
    # the guard account does not exist yet (0), nor do the legs' accounts: written all the same
    first = post_if_not_negative(bridge, owner, ("owed", "usd"), *legs, idempotency_key="g1")
    assert first is not None and balance(bridge, owner, "balance:in") == 500
    # a repeated key replays the first transaction
    again = post_if_not_negative(bridge, owner, ("owed", "usd"), *legs, idempotency_key="g1")
    assert again is not None and again.id == first.id and balance(bridge, owner, "balance:in") == 500
    post(bridge, owner, ("owed", -1, "usd"), ("lender", 1, "usd"))
    before = count_rows(db, "journal_transactions", owner.installation_id)
    assert post_if_not_negative(bridge, owner, ("owed", "usd"), *legs, idempotency_key="g2") is None
    assert count_rows(db, "journal_transactions", owner.installation_id) == before
    assert balance(bridge, owner, "balance:in") == 500
    # the guard is per currency and per tenant: the account in euros owes nothing
    assert post_if_not_negative(bridge, owner, ("owed", "eur"), *legs, idempotency_key="g3") is not None
    post(bridge, owner, ("owed", 1, "usd"), ("lender", -1, "usd"))
    assert post_if_not_negative(bridge, owner, ("owed", "usd"), *legs, idempotency_key="g4") is not None
    assert balance(bridge, owner, "balance:in") == 1_500
