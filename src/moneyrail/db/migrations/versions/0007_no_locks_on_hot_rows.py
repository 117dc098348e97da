"""no row locks on hot rows: the ledger's commit-time check proves what its foreign keys did, and more;
events no longer lock their installation

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-22 14:30:00.000000

A foreign key check takes FOR KEY SHARE on the row it points to. Every posting pointed at its account
and every journal transaction at its installation, so concurrent payments all locked the same few
rows (the platform's fee account, the installation): each new locker rewrites the row's lock as a
multixact, WAL-logged, under the page's exclusive lock, on every operation that writes money.

Those locks protected nothing here: accounts and journal rows are append-only (ledger_append_only
refuses UPDATE and DELETE), so a row once seen cannot go away. The deferred check that already runs at
commit for every journal transaction now also proves each leg's account exists in the leg's currency
and belongs to the journal's installation and environment (a check the foreign keys never made).
The journal's installation follows: its accounts reference it. The posting's journal row was already
proven (same database transaction, same txid). `moneyrail ledger verify` pins the new function source.

Events: every operation's outcome and every payment step writes one, and each locked the installation
row the same way. Events are written only by the events service, for the tenant that made the change,
and installations are never deleted; the lock bought nothing.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

CHECK_TRANSACTION = """
DECLARE
    current_txid bigint := pg_current_xact_id()::text::bigint;
    journal_id text;
    journal_txid bigint;
    journal_installation text;
    journal_livemode boolean;
    missing_accounts bigint;
    foreign_accounts bigint;
    horizon bigint;
    legs bigint;
    off_currency text;
    off_total numeric;
BEGIN
    IF TG_TABLE_NAME = 'journal_transactions' THEN
        IF NOT EXISTS (SELECT FROM postings WHERE transaction_id = NEW.id) THEN
            RAISE EXCEPTION 'journal transaction % has 0 posting(s); it needs at least 2', NEW.id
                USING ERRCODE = 'check_violation';
        END IF;
        RETURN NULL;
    END IF;
    journal_id := NEW.transaction_id;
    IF NEW.txid <> current_txid THEN
        RAISE EXCEPTION 'journal transaction % refused: its rows must be written by one database '
            'transaction, with that transaction''s own txid', journal_id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    IF EXISTS (SELECT FROM postings WHERE transaction_id = journal_id AND id > NEW.id) THEN
        RETURN NULL;
    END IF;
    SELECT txid, installation_id, livemode INTO journal_txid, journal_installation, journal_livemode
      FROM journal_transactions WHERE id = journal_id;
    IF journal_txid IS DISTINCT FROM current_txid THEN
        RAISE EXCEPTION 'journal transaction % refused: its rows must be written by one database '
            'transaction, with that transaction''s own txid', journal_id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    SELECT txid_horizon INTO horizon FROM ledger_blocks ORDER BY height DESC LIMIT 1;
    IF current_txid < horizon THEN
        RAISE EXCEPTION 'transaction id % is below the sealed horizon % of the ledger: the xid counter '
            'went back (restored from a logical dump?); raise the xid epoch (pg_resetwal -e) first',
            current_txid, horizon
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    SELECT coalesce(sum(per_currency.legs), 0),
           coalesce(sum(per_currency.missing_accounts), 0),
           coalesce(sum(per_currency.foreign_accounts), 0),
           (array_agg(per_currency.currency ORDER BY per_currency.currency)
               FILTER (WHERE per_currency.total <> 0))[1],
           (array_agg(per_currency.total ORDER BY per_currency.currency)
               FILTER (WHERE per_currency.total <> 0))[1]
      INTO legs, missing_accounts, foreign_accounts, off_currency, off_total
      FROM (SELECT leg.currency, count(*) AS legs, sum(leg.amount) AS total,
                   count(*) FILTER (WHERE leg.owned IS NULL) AS missing_accounts,
                   count(*) FILTER (WHERE NOT leg.owned) AS foreign_accounts
              FROM (SELECT p.currency, p.amount,
                           -- a subquery per leg (one primary-key lookup), never a join the planner
                           -- could turn into a scan of every account
                           (SELECT a.installation_id = journal_installation AND a.livemode = journal_livemode
                              FROM ledger_accounts a
                             WHERE a.id = p.account_id AND a.currency = p.currency) AS owned
                      FROM postings p
                     WHERE p.transaction_id = journal_id) AS leg
             GROUP BY leg.currency) AS per_currency;
    IF legs < 2 THEN
        RAISE EXCEPTION 'journal transaction % has % posting(s); it needs at least 2', journal_id, legs
            USING ERRCODE = 'check_violation';
    END IF;
    IF missing_accounts > 0 THEN
        RAISE EXCEPTION 'journal transaction % refused: % leg(s) on an account that does not exist in '
            'the leg''s currency', journal_id, missing_accounts
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    IF foreign_accounts > 0 THEN
        RAISE EXCEPTION 'journal transaction % refused: % leg(s) on another installation''s or '
            'environment''s account', journal_id, foreign_accounts
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    IF off_currency IS NOT NULL THEN
        RAISE EXCEPTION 'journal transaction % does not balance: its % postings sum to %',
            journal_id, off_currency, off_total
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END
"""

FUNCTIONS = {"ledger_check_transaction": CHECK_TRANSACTION}

DROPPED_FOREIGN_KEYS = (
    ("postings", "fk_postings_account_id_ledger_accounts"),
    ("postings", "fk_postings_transaction_id_journal_transactions"),
    ("journal_transactions", "fk_journal_transactions_installation_id_installations"),
    ("events", "fk_events_installation_id_installations"),
)


def upgrade() -> None:
    for name, body in FUNCTIONS.items():
        op.execute(
            f"CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $body${body}$body$"
        )
    for table, constraint in DROPPED_FOREIGN_KEYS:
        op.drop_constraint(constraint, table, type_="foreignkey")


def downgrade() -> None:
    op.create_foreign_key(
        "fk_events_installation_id_installations", "events", "installations", ["installation_id"], ["id"]
    )
    op.create_foreign_key(
        "fk_journal_transactions_installation_id_installations",
        "journal_transactions",
        "installations",
        ["installation_id"],
        ["id"],
    )
    op.create_foreign_key(
        "fk_postings_transaction_id_journal_transactions",
        "postings",
        "journal_transactions",
        ["transaction_id"],
        ["id"],
    )
    op.create_foreign_key(
        "fk_postings_account_id_ledger_accounts",
        "postings",
        "ledger_accounts",
        ["account_id", "currency"],
        ["id", "currency"],
    )
    previous = _migration_0002_check()
    op.execute(
        "CREATE OR REPLACE FUNCTION ledger_check_transaction() RETURNS trigger LANGUAGE plpgsql"
        f" AS $body${previous}$body$"
    )


def _migration_0002_check() -> str:
    import importlib.util
    from pathlib import Path

    path = Path(__file__).with_name("0002_ledger.py")
    spec = importlib.util.spec_from_file_location("migration_0002", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module.CHECK_TRANSACTION)
