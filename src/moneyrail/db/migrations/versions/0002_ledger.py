"""ledger: accounts, the append-only journal, postings, sealed blocks and balance checkpoints

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 09:00:00.000000

PostgreSQL itself keeps the money invariants (ARCHITECTURE.md): a deferred constraint trigger refuses
a journal transaction that does not balance per currency or has fewer than two postings, and checks
that every row carries its database transaction's id (the sealer's safe order); row and TRUNCATE
triggers refuse every change to the ledger's tables. `moneyrail ledger verify` checks that these
triggers are present, enabled and unchanged (moneyrail/ledger/verification.py pins the fingerprints
of the function bodies below: change both together).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APPEND_ONLY_TABLES = (
    "ledger_accounts",
    "journal_transactions",
    "postings",
    "ledger_blocks",
    "ledger_block_entries",
    "ledger_balance_checkpoints",
)

REFUSE_CHANGE = """
BEGIN
    RAISE EXCEPTION 'ledger is append-only; post a reversing entry (% on %)', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'integrity_constraint_violation';
END
"""

# Deferred to commit, for every journal row and posting the committing transaction inserted. The
# transaction's last posting checks it whole, once (the others only their own txid), and the journal
# row only that it has a posting at all; legs added after SET CONSTRAINTS ... IMMEDIATE have their own
# last posting, checked again. Besides balance and leg count it proves:
# - every row carries this transaction's own txid (the sealer orders by it: no backdating);
# - a posting joins a journal transaction only in the database transaction that created it, so a
#   committed (perhaps sealed) transaction never gains legs;
# - the txid is not below the last block's horizon: below it means the xid counter went back (a
#   logical dump restored into a new cluster) and the row would hide below the sealed horizon, never
#   sealed and missed by the balance checkpoints.
CHECK_TRANSACTION = """
DECLARE
    current_txid bigint := pg_current_xact_id()::text::bigint;
    journal_id text;
    journal_txid bigint;
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
    SELECT txid INTO journal_txid FROM journal_transactions WHERE id = journal_id;
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
           (array_agg(per_currency.currency ORDER BY per_currency.currency)
               FILTER (WHERE per_currency.total <> 0))[1],
           (array_agg(per_currency.total ORDER BY per_currency.currency)
               FILTER (WHERE per_currency.total <> 0))[1]
      INTO legs, off_currency, off_total
      FROM (SELECT currency, count(*) AS legs, sum(amount) AS total
              FROM postings WHERE transaction_id = journal_id GROUP BY currency) AS per_currency;
    IF legs < 2 THEN
        RAISE EXCEPTION 'journal transaction % has % posting(s); it needs at least 2', journal_id, legs
            USING ERRCODE = 'check_violation';
    END IF;
    IF off_currency IS NOT NULL THEN
        RAISE EXCEPTION 'journal transaction % does not balance: its % postings sum to %',
            journal_id, off_currency, off_total
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END
"""

FUNCTIONS = {
    "ledger_refuse_change": REFUSE_CHANGE,
    "ledger_check_transaction": CHECK_TRANSACTION,
}


def upgrade() -> None:
    op.create_table(
        "ledger_accounts",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("code", sa.String(), nullable=False),
        sa.Column("currency", sa.String(), nullable=False),
        sa.Column("installation_id", sa.String(), nullable=False),
        sa.Column("livemode", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("currency ~ '^[a-z]{3}$'", name=op.f("ck_ledger_accounts_currency")),
        sa.ForeignKeyConstraint(
            ["installation_id"],
            ["installations.id"],
            name=op.f("fk_ledger_accounts_installation_id_installations"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ledger_accounts")),
        sa.UniqueConstraint("id", "currency", name=op.f("uq_ledger_accounts_id_currency")),
        sa.UniqueConstraint(
            "installation_id",
            "livemode",
            "code",
            "currency",
            name=op.f("uq_ledger_accounts_installation_id_livemode_code_currency"),
        ),
    )
    op.create_table(
        "journal_transactions",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("reference", sa.String(), nullable=True),
        sa.Column("idempotency_key", sa.String(), nullable=True),
        sa.Column("seq", sa.BigInteger(), sa.Identity(always=True), nullable=False),
        sa.Column(
            "txid",
            sa.BigInteger(),
            server_default=sa.text("(pg_current_xact_id())::text::bigint"),
            nullable=False,
        ),
        sa.Column("installation_id", sa.String(), nullable=False),
        sa.Column("livemode", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.ForeignKeyConstraint(
            ["installation_id"],
            ["installations.id"],
            name=op.f("fk_journal_transactions_installation_id_installations"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_journal_transactions")),
    )
    op.create_index("ix_journal_transactions_txid", "journal_transactions", ["txid"], unique=False)
    op.create_index(
        "uq_journal_transactions_idempotency_key",
        "journal_transactions",
        ["installation_id", "livemode", "idempotency_key"],
        unique=True,
        postgresql_where=sa.text("idempotency_key IS NOT NULL"),
    )
    op.create_table(
        "postings",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=True), nullable=False),
        sa.Column("transaction_id", sa.String(), nullable=False),
        sa.Column("account_id", sa.String(), nullable=False),
        sa.Column("currency", sa.String(), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column(
            "txid",
            sa.BigInteger(),
            server_default=sa.text("(pg_current_xact_id())::text::bigint"),
            nullable=False,
        ),
        sa.CheckConstraint("amount <> 0", name=op.f("ck_postings_amount_nonzero")),
        sa.ForeignKeyConstraint(
            ["account_id", "currency"],
            ["ledger_accounts.id", "ledger_accounts.currency"],
            name=op.f("fk_postings_account_id_ledger_accounts"),
        ),
        sa.ForeignKeyConstraint(
            ["transaction_id"],
            ["journal_transactions.id"],
            name=op.f("fk_postings_transaction_id_journal_transactions"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_postings")),
    )
    op.create_index(
        "ix_postings_account_txid",
        "postings",
        ["account_id", "txid"],
        unique=False,
        postgresql_include=["amount"],
    )
    op.create_index("ix_postings_transaction_id", "postings", ["transaction_id"], unique=False)
    op.create_table(
        "ledger_blocks",
        sa.Column("height", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("previous_hash", sa.String(), nullable=False),
        sa.Column("block_hash", sa.String(), nullable=False),
        sa.Column("entry_count", sa.BigInteger(), nullable=False),
        sa.Column("txid_horizon", sa.BigInteger(), nullable=False),
        sa.Column("sealed_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("entry_count >= 1", name=op.f("ck_ledger_blocks_entry_count")),
        sa.CheckConstraint("height >= 1", name=op.f("ck_ledger_blocks_height")),
        sa.PrimaryKeyConstraint("height", name=op.f("pk_ledger_blocks")),
        sa.UniqueConstraint("block_hash", name=op.f("uq_ledger_blocks_block_hash")),
        sa.UniqueConstraint("previous_hash", name=op.f("uq_ledger_blocks_previous_hash")),
    )
    op.create_table(
        "ledger_block_entries",
        sa.Column("transaction_id", sa.String(), nullable=False),
        sa.Column("block_height", sa.BigInteger(), nullable=False),
        sa.Column("position", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["block_height"],
            ["ledger_blocks.height"],
            name=op.f("fk_ledger_block_entries_block_height_ledger_blocks"),
        ),
        sa.ForeignKeyConstraint(
            ["transaction_id"],
            ["journal_transactions.id"],
            name=op.f("fk_ledger_block_entries_transaction_id_journal_transactions"),
        ),
        sa.PrimaryKeyConstraint("transaction_id", name=op.f("pk_ledger_block_entries")),
        sa.UniqueConstraint(
            "block_height", "position", name=op.f("uq_ledger_block_entries_block_height_position")
        ),
    )
    op.create_table(
        "ledger_balance_checkpoints",
        sa.Column("account_id", sa.String(), nullable=False),
        sa.Column("block_height", sa.BigInteger(), nullable=False),
        sa.Column("balance", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["ledger_accounts.id"],
            name=op.f("fk_ledger_balance_checkpoints_account_id_ledger_accounts"),
        ),
        sa.ForeignKeyConstraint(
            ["block_height"],
            ["ledger_blocks.height"],
            name=op.f("fk_ledger_balance_checkpoints_block_height_ledger_blocks"),
        ),
        sa.PrimaryKeyConstraint("account_id", "block_height", name=op.f("pk_ledger_balance_checkpoints")),
    )

    for name, body in FUNCTIONS.items():
        op.execute(f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $body${body}$body$")
    for table in ("journal_transactions", "postings"):
        op.execute(
            f"CREATE CONSTRAINT TRIGGER ledger_check_transaction AFTER INSERT ON {table}"
            " DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ledger_check_transaction()"
        )
    for table in APPEND_ONLY_TABLES:
        op.execute(
            f"CREATE TRIGGER ledger_append_only BEFORE UPDATE OR DELETE ON {table}"
            " FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change()"
        )
        op.execute(
            f"CREATE TRIGGER ledger_no_truncate BEFORE TRUNCATE ON {table}"
            " FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change()"
        )


def downgrade() -> None:
    for table in reversed(APPEND_ONLY_TABLES):
        op.drop_table(table)
    for name in FUNCTIONS:
        op.execute(f"DROP FUNCTION {name}()")
