"""Sealing chains the journal into blocks; verification finds any change made behind the triggers' back.

Verification is global, so every test that tampers puts the row back as it was before it ends.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from datetime import UTC, datetime

from moneyrail.db.migrate import MIGRATIONS_DIR
from moneyrail.ledger import service as ledger
from moneyrail.ledger.chain import GENESIS_HASH, EntryPosting, JournalEntry, block_hash, canonical_line
from moneyrail.ledger.verification import FUNCTION_SOURCES_SHA256
from tests.ledger.support import (
    block_of,
    ensure_accounts,
    post,
    seal_until_sealed,
    tampered,
    verify,
    without_ledger_triggers,
)


def _payment(bridge, tenant, merchant="mer_a", amount=10_000, fee=290, **options):
    return post(
        bridge,
        tenant.tenant,
        ("customer_funds", -amount, "usd"),
        (f"merchant:{merchant}:available", amount - fee, "usd"),
        ("platform:fees", fee, "usd"),
        kind="payment",
        **options,
    )


def _recomputed_hash(db, height):
    """The block's hash from its rows alone, the way an auditor with a SQL export would do it."""
    previous_hash = db.execute(
        "SELECT previous_hash FROM ledger_blocks WHERE height = %s", (height,)
    ).fetchone()[0]
    entries = []
    for transaction_id, installation_id, livemode, kind, reference, created_at in db.execute(
        "SELECT j.id, j.installation_id, j.livemode, j.kind, j.reference, j.created_at"
        " FROM ledger_block_entries e JOIN journal_transactions j ON j.id = e.transaction_id"
        " WHERE e.block_height = %s ORDER BY e.position",
        (height,),
    ).fetchall():
        postings = db.execute(
            "SELECT account_id, amount, currency FROM postings WHERE transaction_id = %s ORDER BY id",
            (transaction_id,),
        ).fetchall()
        entries.append(
            JournalEntry(
                transaction_id,
                installation_id,
                livemode,
                kind,
                reference,
                created_at,
                tuple(EntryPosting(*posting) for posting in postings),
            )
        )
    return block_hash(previous_hash, entries)


def test_settled_entries_are_sealed_in_insertion_order_into_a_hash_chain(bridge, db, tenant):
    journals = [_payment(bridge, tenant, amount=1_000 * n, fee=29 * n) for n in range(1, 6)]
    seal_until_sealed(bridge, db, [journal.id for journal in journals])

    placed = [
        db.execute(
            "SELECT block_height, position FROM ledger_block_entries WHERE transaction_id = %s", (journal.id,)
        ).fetchone()
        for journal in journals
    ]
    assert placed == sorted(placed)  # seq order, across and within blocks
    blocks = db.execute(
        "SELECT height, previous_hash, block_hash, entry_count FROM ledger_blocks ORDER BY height"
    )
    previous_hash = GENESIS_HASH
    for expected_height, (height, block_previous_hash, stored_hash, entry_count) in enumerate(
        blocks, start=1
    ):
        assert height == expected_height
        assert block_previous_hash == previous_hash
        assert _recomputed_hash(db, height) == stored_hash
        count = db.execute("SELECT count(*) FROM ledger_block_entries WHERE block_height = %s", (height,))
        assert count.fetchone()[0] == entry_count
        previous_hash = stored_hash
    assert verify(bridge).problems == []


def test_sealing_again_with_nothing_settled_writes_no_block(bridge, db, tenant):
    seal_until_sealed(bridge, db, [_payment(bridge, tenant).id])
    before = db.execute("SELECT count(*) FROM ledger_blocks").fetchone()
    assert bridge.in_unit_of_work(ledger.seal_pending) == 0
    assert db.execute("SELECT count(*) FROM ledger_blocks").fetchone() == before


def test_a_large_backlog_is_sealed_in_blocks_of_at_most_max_entries(bridge, db, tenant):
    journals = [_payment(bridge, tenant, amount=100 + n, fee=1) for n in range(7)]
    ids = [journal.id for journal in journals]
    for _ in range(200):
        bridge.in_unit_of_work(lambda session: ledger.seal_pending(session, max_entries=2))
        heights = [
            row[0]
            for row in db.execute(
                "SELECT block_height FROM ledger_block_entries WHERE transaction_id = ANY(%s)", (ids,)
            ).fetchall()
        ]
        if len(heights) == len(ids):
            break
    sizes = db.execute(
        "SELECT max(entry_count) FROM ledger_blocks WHERE height IN"
        " (SELECT block_height FROM ledger_block_entries WHERE transaction_id = ANY(%s))",
        (ids,),
    ).fetchone()
    assert sizes[0] <= 2
    assert [block_of(db, i) for i in ids] == sorted(block_of(db, i) for i in ids)
    assert verify(bridge).problems == []


def test_the_canonical_line_of_an_entry_is_stable():
    entry = JournalEntry(
        "jtx_1",
        "inst_1",
        False,
        "payment",
        None,
        datetime(2026, 11, 22, 8, 0, 0, 1234, tzinfo=UTC),
        (EntryPosting("la_a", -100, "usd"), EntryPosting("la_b", 100, "usd")),
    )
    line = canonical_line(entry)
    assert line == (
        b'["jtx_1","inst_1",false,"payment",null,"2026-11-22T08:00:00.001234Z",'
        b'[["la_a",-100,"usd"],["la_b",100,"usd"]]]\n'
    )
    assert block_hash(GENESIS_HASH, [entry]) == hashlib.sha256(GENESIS_HASH.encode() + line).hexdigest()


def test_a_clean_ledger_verifies(bridge, db, tenant):
    seal_until_sealed(bridge, db, [_payment(bridge, tenant).id])
    _payment(bridge, tenant, merchant="mer_b")  # an unsealed entry is fine too
    report = verify(bridge)
    assert report.ok and report.problems == []
    assert report.transactions >= 2 and report.blocks >= 1 and report.sealed >= 1


def test_verify_finds_an_amount_changed_in_a_sealed_block(bridge, db, tenant):
    # A superuser switches the triggers off, takes a cent from the fee, and switches them back on.
    journal = _payment(bridge, tenant)
    seal_until_sealed(bridge, db, [journal.id])
    height = block_of(db, journal.id)
    fee_leg = "UPDATE postings SET amount = amount {} 1 WHERE transaction_id = %s AND amount = {}"
    with tampered(db, "postings", fee_leg.format("-", 290), fee_leg.format("+", 289), (journal.id,)):
        problems = verify(bridge).problems
        assert f"transaction {journal.id} does not balance: its usd postings sum to -1" in problems
        assert any(p.startswith(f"block {height}: hash mismatch") for p in problems), problems
    assert verify(bridge).problems == []


def test_verify_finds_a_rewritten_entry_even_when_it_still_balances(bridge, db, tenant):
    # A relabelled entry (what the money was for) keeps every sum at zero: only the chain shows it.
    journal = _payment(bridge, tenant)
    seal_until_sealed(bridge, db, [journal.id])
    height = block_of(db, journal.id)
    change = "UPDATE journal_transactions SET reference = 'innocent' WHERE id = %s"
    undo = "UPDATE journal_transactions SET reference = NULL WHERE id = %s"
    with tampered(db, "journal_transactions", change, undo, (journal.id,)):
        problems = verify(bridge).problems
        assert len(problems) == 1 and problems[0].startswith(f"block {height}: hash mismatch"), problems
    assert verify(bridge).problems == []


def test_verify_finds_a_posting_moved_to_another_tenants_account(bridge, db, tenant, make_tenant):
    journal = _payment(bridge, tenant)
    (own_fees,) = ensure_accounts(bridge, tenant.tenant, "platform:fees")
    (foreign_fees,) = ensure_accounts(bridge, make_tenant().tenant, "platform:fees")
    move = "UPDATE postings SET account_id = %s WHERE transaction_id = %s AND account_id = %s"
    without_ledger_triggers(db, "postings", move, (foreign_fees, journal.id, own_fees))
    try:
        problems = verify(bridge).problems
    finally:
        without_ledger_triggers(db, "postings", move, (own_fees, journal.id, foreign_fees))
    assert len(problems) == 1, problems
    assert problems[0].endswith(
        f"of transaction {journal.id}: account {foreign_fees}"
        " is missing, in another currency, or another tenant's"
    )
    assert verify(bridge).problems == []


def test_verify_finds_a_removed_block_entry(bridge, db, tenant):
    journal = _payment(bridge, tenant)
    seal_until_sealed(bridge, db, [journal.id])
    height, position = db.execute(
        "SELECT block_height, position FROM ledger_block_entries WHERE transaction_id = %s", (journal.id,)
    ).fetchone()
    without_ledger_triggers(
        db,
        "ledger_block_entries",
        "DELETE FROM ledger_block_entries WHERE transaction_id = %s",
        (journal.id,),
    )
    try:
        problems = verify(bridge).problems
        assert (
            f"transaction {journal.id} is below the sealed horizon but in no block"
            " (inserted out of turn, or its block entry removed)" in problems
        )
        assert any(p.startswith(f"block {height}:") for p in problems)
    finally:
        db.execute(
            "INSERT INTO ledger_block_entries (transaction_id, block_height, position) VALUES (%s, %s, %s)",
            (journal.id, height, position),
        )
    assert verify(bridge).problems == []


def test_verify_finds_a_changed_balance_checkpoint(bridge, db, tenant, monkeypatch):
    monkeypatch.setattr(ledger, "CHECKPOINT_MAX_BLOCKS", 1)
    journals = [_payment(bridge, tenant, merchant="mer_c") for _ in range(2)]
    seal_until_sealed(bridge, db, [journal.id for journal in journals])
    account_id, height, stored = db.execute(
        "SELECT c.account_id, c.block_height, c.balance FROM ledger_balance_checkpoints c"
        " JOIN ledger_accounts a ON a.id = c.account_id"
        " WHERE a.installation_id = %s AND a.code = 'platform:fees' ORDER BY c.block_height DESC LIMIT 1",
        (tenant.installation_id,),
    ).fetchone()
    assert stored == 580
    change = (
        "UPDATE ledger_balance_checkpoints SET balance = balance + {}"
        " WHERE account_id = %s AND block_height = %s"
    )
    with tampered(
        db,
        "ledger_balance_checkpoints",
        change.format(1_000_000),
        change.format(-1_000_000),
        (account_id, height),
    ):
        problems = verify(bridge).problems
        assert (
            f"balance checkpoint of account {account_id} at block {height} is 1000580,"
            " its postings sum to 580" in problems
        )
    assert verify(bridge).problems == []


def test_verify_reports_a_disabled_immutability_trigger(bridge, db):
    db.execute("ALTER TABLE journal_transactions DISABLE TRIGGER ledger_append_only")
    try:
        problems = verify(bridge).problems
    finally:
        db.execute("ALTER TABLE journal_transactions ENABLE TRIGGER ledger_append_only")
    assert problems == [
        "trigger ledger_append_only on journal_transactions is disabled: the table is not protected"
    ]
    assert verify(bridge).problems == []


def test_verify_reports_a_replaced_trigger_function(bridge, db):
    original = _migration_0002().REFUSE_CHANGE
    replace = (
        "CREATE OR REPLACE FUNCTION ledger_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $body${}$body$"
    )
    db.execute(replace.format("BEGIN RETURN NULL; END"))  # silently skips every UPDATE and DELETE
    try:
        problems = verify(bridge).problems
    finally:
        db.execute(replace.format(original))
    assert (
        "trigger ledger_append_only on postings:"
        " function ledger_refuse_change() was replaced (its source changed)" in problems
    )
    assert verify(bridge).problems == []


def test_the_pinned_function_fingerprints_are_those_the_migrations_leave():
    functions = {**_migration_0002().FUNCTIONS, **_migration("0007_no_locks_on_hot_rows").FUNCTIONS}
    assert {name: hashlib.sha256(source.encode()).hexdigest() for name, source in functions.items()} == (
        FUNCTION_SOURCES_SHA256
    )


def test_the_report_is_json_ready(bridge):
    assert json.loads(json.dumps(verify(bridge).as_dict()))["ok"] is True


def _migration_0002():
    return _migration("0002_ledger")


def _migration(name):
    spec = importlib.util.spec_from_file_location(
        f"migration_{name}", MIGRATIONS_DIR / "versions" / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
