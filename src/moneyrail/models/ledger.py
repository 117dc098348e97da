"""The double-entry ledger: accounts, the append-only journal, and the hash-chained blocks that seal it.

PostgreSQL enforces the money invariants (migration 0002): every journal transaction balances per
currency and is written by one database transaction (a deferred constraint trigger), nothing here is
ever updated, deleted or truncated, and a posting's currency is its account's (the composite foreign
key). There is no balance row on the write path: a balance is the sum of its account's postings
(ARCHITECTURE.md, invariant 3), which the sealing job checkpoints for fast reads.

`txid` is the 64-bit transaction id (`pg_current_xact_id()`, xid8) of the database transaction that
wrote the row, stored as bigint because SQLAlchemy cannot reflect xid8 (the schema comparison with the
migrations would warn). It is what makes sealing safe: a row whose txid is below every running
transaction's can no longer be joined by an earlier, still uncommitted one.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    CheckConstraint,
    ForeignKey,
    Identity,
    Index,
    PrimaryKeyConstraint,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from moneyrail.models.base import Base, TenantOwned

# pg_current_xact_id() assigns the transaction's id if it has none yet. The deferred check of
# migration 0002 refuses a row whose txid is any other value.
CURRENT_TXID = text("(pg_current_xact_id())::text::bigint")
GENESIS_HASH = "0" * 64


class LedgerAccount(TenantOwned, Base):
    """One account of one tenant in one currency, named by a code such as `platform:fees`."""

    __tablename__ = "ledger_accounts"
    __table_args__ = (
        UniqueConstraint("installation_id", "livemode", "code", "currency"),
        # the target of the postings' (account_id, currency) foreign key
        UniqueConstraint("id", "currency"),
        CheckConstraint("currency ~ '^[a-z]{3}$'", name="currency"),
    )

    id: Mapped[str] = mapped_column(primary_key=True)
    code: Mapped[str]
    currency: Mapped[str]


class JournalTransaction(TenantOwned, Base):
    """A balanced set of postings, written once."""

    __tablename__ = "journal_transactions"
    __table_args__ = (
        # a retried actor posts with the same key and gets the first transaction back
        Index(
            "uq_journal_transactions_idempotency_key",
            "installation_id",
            "livemode",
            "idempotency_key",
            unique=True,
            postgresql_where=text("idempotency_key IS NOT NULL"),
        ),
        # the sealer's scan: unsealed rows all lie above the last block's horizon
        Index("ix_journal_transactions_txid", "txid"),
    )

    id: Mapped[str] = mapped_column(primary_key=True)
    # No foreign key (migration 0007): its check would lock the installation row for every posting.
    # The commit-time check proves every leg's account is this installation's, and accounts reference it.
    installation_id: Mapped[str] = mapped_column()
    kind: Mapped[str]
    reference: Mapped[str | None]
    idempotency_key: Mapped[str | None]
    # insertion order; no index: the sealer orders only the few unsealed rows by it
    seq: Mapped[int] = mapped_column(Identity(always=True))
    txid: Mapped[int] = mapped_column(server_default=CURRENT_TXID)


class LedgerPosting(Base):
    """One leg of a journal transaction: a signed amount on one account."""

    __tablename__ = "postings"
    __table_args__ = (
        CheckConstraint("amount <> 0", name="amount_nonzero"),
        Index("ix_postings_transaction_id", "transaction_id"),
        # a balance: the latest checkpoint plus an index-only range scan of the postings above it
        Index("ix_postings_account_txid", "account_id", "txid", postgresql_include=["amount"]),
    )

    id: Mapped[int] = mapped_column(Identity(always=True), primary_key=True)
    # No foreign keys (migration 0007): their checks locked the hot rows (a platform fee account) of
    # every posting. The commit-time check proves the journal row, the account, its currency and tenant.
    transaction_id: Mapped[str]
    account_id: Mapped[str]
    currency: Mapped[str]
    amount: Mapped[int]
    txid: Mapped[int] = mapped_column(server_default=CURRENT_TXID)  # always its transaction's


class LedgerBlock(Base):
    """A sealed run of journal transactions, chained to the previous block by its hash."""

    __tablename__ = "ledger_blocks"
    __table_args__ = (
        CheckConstraint("height >= 1", name="height"),
        CheckConstraint("entry_count >= 1", name="entry_count"),
        UniqueConstraint("previous_hash"),  # a block has one successor: the chain cannot fork
        UniqueConstraint("block_hash"),
    )

    height: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    previous_hash: Mapped[str]
    block_hash: Mapped[str]
    entry_count: Mapped[int]
    # every journal transaction with a lower txid is sealed in this block or an earlier one
    txid_horizon: Mapped[int]
    sealed_at: Mapped[datetime] = mapped_column(server_default=func.now())


class LedgerBlockEntry(Base):
    """Which block sealed a journal transaction, and where in it. A transaction is sealed once."""

    __tablename__ = "ledger_block_entries"
    __table_args__ = (UniqueConstraint("block_height", "position"),)

    transaction_id: Mapped[str] = mapped_column(ForeignKey("journal_transactions.id"), primary_key=True)
    block_height: Mapped[int] = mapped_column(ForeignKey("ledger_blocks.height"))
    position: Mapped[int]


class LedgerBalanceCheckpoint(Base):
    """An account's balance over every posting whose txid is below the block's horizon.

    A balance is the latest checkpoint plus the account's postings at or above that horizon.
    """

    __tablename__ = "ledger_balance_checkpoints"
    __table_args__ = (PrimaryKeyConstraint("account_id", "block_height"),)

    account_id: Mapped[str] = mapped_column(ForeignKey("ledger_accounts.id"))
    block_height: Mapped[int] = mapped_column(ForeignKey("ledger_blocks.height"))
    balance: Mapped[int]
