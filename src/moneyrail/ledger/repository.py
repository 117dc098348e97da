"""Queries over the ledger's tables. Every write is an INSERT: the database refuses anything else."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, text, tuple_
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.db.raw import Write, WriteAt, from_row
from moneyrail.kit.ids import new_id
from moneyrail.kit.tenant import Tenant
from moneyrail.models.ledger import (
    JournalTransaction,
    LedgerAccount,
    LedgerBlock,
    LedgerBlockEntry,
    LedgerPosting,
)

from .chain import EntryPosting, JournalEntry

AccountKey = tuple[str, str]  # (code, currency)


# --- accounts ----------------------------------------------------------------------------------
async def insert_missing_accounts(session: AsyncSession, tenant: Tenant, keys: Iterable[AccountKey]) -> None:
    rows = [
        {
            "id": new_id("la"),
            "installation_id": tenant.installation_id,
            "livemode": tenant.livemode,
            "code": code,
            "currency": currency,
        }
        for code, currency in sorted(set(keys))  # sorted: concurrent creators wait in one order
    ]
    if rows:
        # the unique constraint decides under concurrency; a loser's row is simply not inserted
        await session.execute(pg_insert(LedgerAccount).values(rows).on_conflict_do_nothing())


async def find_accounts(
    session: AsyncSession, tenant: Tenant, keys: Iterable[AccountKey]
) -> dict[AccountKey, LedgerAccount]:
    wanted = sorted(set(keys))
    if not wanted:
        return {}
    accounts = await session.scalars(
        select(LedgerAccount).where(
            LedgerAccount.installation_id == tenant.installation_id,
            LedgerAccount.livemode == tenant.livemode,
            tuple_(LedgerAccount.code, LedgerAccount.currency).in_(wanted),
        )
    )
    return {(account.code, account.currency): account for account in accounts}


# --- journal -----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class NewJournalTransaction:
    """A journal transaction to insert: its id (chosen by the caller) and (code, amount, currency) legs."""

    id: str
    tenant: Tenant
    kind: str
    reference: str | None
    idempotency_key: str | None
    legs: Sequence[tuple[str, int, str]]


# Whole postings in one statement, one round trip, however many journal transactions it carries: each
# one's legs are matched to its tenant's accounts, and its journal row and postings are inserted only
# when every leg has one. No row comes back for a transaction with a missing account or whose
# idempotency key already names one (or names an earlier one in this statement); the caller finds out
# which. A concurrent poster of the same key makes this wait for its commit (the unique index); rows
# go in by key, so two statements carrying the same keys wait on them in one order, never on each
# other. Parameters, one array element per transaction: $1 id, $2 installation_id, $3 livemode,
# $4 kind, $5 reference, $6 idempotency_key; one element per leg: $7 its transaction's position
# (1-based), $8 account code, $9 amount, $10 currency.
POST_SQL = """
WITH entry AS (
    SELECT *
    FROM unnest($1::text[], $2::text[], $3::boolean[], $4::text[], $5::text[], $6::text[])
         WITH ORDINALITY AS entry(id, installation_id, livemode, kind, reference, idempotency_key, position)
),
legs AS (
    SELECT leg.entry, leg.ordinality, leg.amount, leg.currency, account.id AS account_id
    FROM unnest($7::bigint[], $8::text[], $9::bigint[], $10::text[])
         WITH ORDINALITY AS leg(entry, code, amount, currency, ordinality)
    JOIN entry ON entry.position = leg.entry
    LEFT JOIN ledger_accounts account
           ON account.installation_id = entry.installation_id AND account.livemode = entry.livemode
          AND account.code = leg.code AND account.currency = leg.currency
),
journal AS (
    INSERT INTO journal_transactions (id, installation_id, livemode, kind, reference, idempotency_key)
    SELECT entry.id, entry.installation_id, entry.livemode, entry.kind, entry.reference,
           entry.idempotency_key
    FROM entry
    WHERE NOT EXISTS (SELECT 1 FROM legs WHERE legs.entry = entry.position AND legs.account_id IS NULL)
    ORDER BY entry.installation_id, entry.livemode, entry.idempotency_key, entry.position
    ON CONFLICT (installation_id, livemode, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
    RETURNING *
),
posted AS (
    INSERT INTO postings (transaction_id, account_id, currency, amount)
    SELECT journal.id, legs.account_id, legs.currency, legs.amount
    FROM journal JOIN entry ON entry.id = journal.id JOIN legs ON legs.entry = entry.position
    ORDER BY legs.ordinality
)
SELECT * FROM journal
"""


async def insert_transactions(
    connection: Any, entries: Sequence[NewJournalTransaction]
) -> dict[str, JournalTransaction]:
    """The journal transactions written, by id (see POST_SQL for those that were not).

    Every payment, fee and transfer posts here, straight on the driver (db/raw.py): on a session's
    connection inside its transaction, or on one outside any transaction, where the statement commits
    alone with every transaction it carries.
    """
    rows = await connection.fetch(
        POST_SQL,
        [entry.id for entry in entries],
        [entry.tenant.installation_id for entry in entries],
        [entry.tenant.livemode for entry in entries],
        [entry.kind for entry in entries],
        [entry.reference for entry in entries],
        [entry.idempotency_key for entry in entries],
        [position for position, entry in enumerate(entries, 1) for _ in entry.legs],
        [code for entry in entries for code, _, _ in entry.legs],
        [amount for entry in entries for _, amount, _ in entry.legs],
        [currency for entry in entries for _, _, currency in entry.legs],
    )
    return {row["id"]: from_row(JournalTransaction, row) for row in rows}


async def insert_transaction(connection: Any, entry: NewJournalTransaction) -> JournalTransaction | None:
    """The one journal transaction, or None (see POST_SQL)."""
    return (await insert_transactions(connection, [entry])).get(entry.id)


async def insert_transaction_if_not_negative(
    connection: Any, entry: NewJournalTransaction, code: str, currency: str
) -> tuple[int, JournalTransaction | None]:
    """The balance of the tenant's account (code, currency) and, if it is 0 or more, the journal
    transaction written in the same statement (None when it is negative, or see POST_SQL)."""
    row = await connection.fetchrow(
        GUARDED_POST_SQL,
        [entry.id],
        [entry.tenant.installation_id],
        [entry.tenant.livemode],
        [entry.kind],
        [entry.reference],
        [entry.idempotency_key],
        [1 for _ in entry.legs],
        [code for code, _, _ in entry.legs],
        [amount for _, amount, _ in entry.legs],
        [currency for _, _, currency in entry.legs],
        code,
        currency,
    )
    found = dict(row)
    balance = int(found.pop("guard_balance"))
    return balance, from_row(JournalTransaction, found) if found["id"] is not None else None


async def find_by_idempotency_key(
    session: AsyncSession, tenant: Tenant, idempotency_key: str
) -> JournalTransaction | None:
    return await session.scalar(
        select(JournalTransaction).where(
            JournalTransaction.installation_id == tenant.installation_id,
            JournalTransaction.livemode == tenant.livemode,
            JournalTransaction.idempotency_key == idempotency_key,
        )
    )


async def legs_of(session: AsyncSession, transaction_id: str) -> list[tuple[str, int, str]]:
    """(account code, amount, currency) of each posting of a transaction, in posting order."""
    rows = await session.execute(
        select(LedgerAccount.code, LedgerPosting.amount, LedgerPosting.currency)
        .join(LedgerAccount, LedgerAccount.id == LedgerPosting.account_id)
        .where(LedgerPosting.transaction_id == transaction_id)
        .order_by(LedgerPosting.id)
    )
    return [(code, amount, currency) for code, amount, currency in rows]


# --- balances and locks ------------------------------------------------------------------------
# One statement, so one snapshot: the checkpoint covers every posting below its block's horizon
# (all of them committed before the checkpoint was written), the range scan adds those above it.
BALANCE = text(
    """
    SELECT coalesce(checkpoint.balance, 0) + coalesce((
        SELECT sum(p.amount) FROM postings p
        WHERE p.account_id = :account_id AND p.txid >= coalesce(checkpoint.txid_horizon, 0)
    ), 0)
    FROM (SELECT 1) AS one
    LEFT JOIN LATERAL (
        SELECT c.balance, b.txid_horizon
        FROM ledger_balance_checkpoints c JOIN ledger_blocks b ON b.height = c.block_height
        WHERE c.account_id = :account_id
        ORDER BY c.block_height DESC LIMIT 1
    ) AS checkpoint ON true
    """
)

# The same, for an account named by its code and currency: its lookup in the same statement (0 when it
# does not exist yet), one round trip instead of two on every capture's fee check.
_BALANCE_OF_CODE = """
    SELECT coalesce(checkpoint.balance, 0) + coalesce((
        SELECT sum(p.amount) FROM postings p
        WHERE p.account_id = account.id AND p.txid >= coalesce(checkpoint.txid_horizon, 0)
    ), 0) AS balance
    FROM (SELECT 1) AS one
    LEFT JOIN ledger_accounts AS account
           ON account.installation_id = {installation_id} AND account.livemode = {livemode}
          AND account.code = {code} AND account.currency = {currency}
    LEFT JOIN LATERAL (
        SELECT c.balance, b.txid_horizon
        FROM ledger_balance_checkpoints c JOIN ledger_blocks b ON b.height = c.block_height
        WHERE c.account_id = account.id
        ORDER BY c.block_height DESC LIMIT 1
    ) AS checkpoint ON true
"""
BALANCE_BY_CODE = text(
    _BALANCE_OF_CODE.format(
        installation_id=":installation_id", livemode=":livemode", code=":code", currency=":currency"
    )
)
# POST_SQL for one journal transaction, written only if the account named by $11 (code) and $12
# (currency) of the entry's tenant has a balance of 0 or more in the statement's own snapshot: a check
# that decides what to post, in the posting's round trip. `guard_balance` says what it found.
GUARDED_POST_SQL = (
    POST_SQL.replace(
        "WITH entry AS (",
        "WITH guard AS ("
        + _BALANCE_OF_CODE.format(
            installation_id="($2::text[])[1]", livemode="($3::boolean[])[1]", code="$11", currency="$12"
        )
        + "), entry AS (",
        1,
    )
    .replace(
        "legs.account_id IS NULL)\n",
        "legs.account_id IS NULL)\n      AND (SELECT balance FROM guard) >= 0\n",
        1,
    )
    .replace(
        "SELECT * FROM journal\n",
        "SELECT guard.balance AS guard_balance, journal.* FROM guard LEFT JOIN journal ON true\n",
        1,
    )
)
assert GUARDED_POST_SQL.count("guard") == 5, "POST_SQL changed shape: GUARDED_POST_SQL needs a look"


# What a caller that posts with a later statement of its own (`journal_writes`) asks first, as columns of
# an earlier statement in the same transaction: the balance of its guard account (named by code, 0 when
# it does not exist yet) and which of the accounts it would post to exist. Parameters from `first`:
# installation_id, livemode, the guard's code, the currency, the codes asked about.
def accounts_outlook_columns(first: int) -> str:
    balance = _BALANCE_OF_CODE.format(
        installation_id=f"${first}", livemode=f"${first + 1}", code=f"${first + 2}", currency=f"${first + 3}"
    )
    # only parameter numbers are formatted in
    return (
        f"({balance}) AS guard_balance, "  # noqa: S608
        "(SELECT coalesce(array_agg(account.code), '{}') FROM ledger_accounts AS account "
        f"WHERE account.installation_id = ${first} AND account.livemode = ${first + 1} "
        f"AND account.currency = ${first + 3} AND account.code = ANY(${first + 4}::text[])) "
        "AS existing_accounts"
    )


# One journal transaction as two writes riding in another statement (CTEs of it): its row, and its
# postings on the tenant's accounts, matched by code in the same statement. Unlike POST_SQL nothing is
# skipped: an account missing makes a posting's account NULL, which the column refuses, and a used
# idempotency key breaks the unique index, so the statement fails and its transaction rolls back rather
# than leaving the journal short. The caller asks first (`accounts_outlook_columns`).
def _journal_row_sql(first: int) -> str:
    numbers = ", ".join(f"${first + offset}" for offset in range(6))
    columns = "id, installation_id, livemode, kind, reference, idempotency_key"
    return f"INSERT INTO journal_transactions ({columns}) VALUES ({numbers})"  # noqa: S608 - numbers only


def _journal_postings_sql(first: int) -> str:
    transaction_id, installation_id, livemode, codes, amounts, currencies = (
        f"${first + offset}" for offset in range(6)
    )
    # only parameter numbers are formatted in
    return (
        "INSERT INTO postings (transaction_id, account_id, currency, amount) "  # noqa: S608
        f"SELECT {transaction_id}, account.id, leg.currency, leg.amount "
        f"FROM unnest({codes}::text[], {amounts}::bigint[], {currencies}::text[]) "
        "WITH ORDINALITY AS leg(code, amount, currency, ordinality) "
        "LEFT JOIN ledger_accounts AS account "
        f"ON account.installation_id = {installation_id} AND account.livemode = {livemode} "
        "AND account.code = leg.code AND account.currency = leg.currency "
        "ORDER BY leg.ordinality"
    )


def journal_writes(entry: NewJournalTransaction) -> list[WriteAt]:
    """The journal transaction as writes for another statement (see `_journal_row_sql`)."""
    tenant = entry.tenant

    def row(first: int) -> Write:
        values = (entry.id, tenant.installation_id, tenant.livemode, entry.kind, entry.reference)
        return Write(_journal_row_sql(first), (*values, entry.idempotency_key))

    def postings(first: int) -> Write:
        codes = [code for code, _, _ in entry.legs]
        amounts = [amount for _, amount, _ in entry.legs]
        currencies = [currency for _, _, currency in entry.legs]
        parameters = (entry.id, tenant.installation_id, tenant.livemode, codes, amounts, currencies)
        return Write(_journal_postings_sql(first), parameters)

    return [row, postings]


async def accounts_with_codes(
    session: AsyncSession, tenant: Tenant, codes: Sequence[str]
) -> list[LedgerAccount]:
    """The tenant's accounts with these codes, in every currency they exist in."""
    accounts = await session.scalars(
        select(LedgerAccount)
        .where(
            LedgerAccount.installation_id == tenant.installation_id,
            LedgerAccount.livemode == tenant.livemode,
            LedgerAccount.code.in_(codes),
        )
        .order_by(LedgerAccount.currency, LedgerAccount.code)
    )
    return list(accounts)


async def account_balance(session: AsyncSession, account_id: str) -> int:
    return int(await session.scalar(BALANCE, {"account_id": account_id}) or 0)


async def balance_by_code(session: AsyncSession, tenant: Tenant, code: str, currency: str) -> int:
    parameters = {
        "installation_id": tenant.installation_id,
        "livemode": tenant.livemode,
        "code": code,
        "currency": currency,
    }
    return int(await session.scalar(BALANCE_BY_CODE, parameters) or 0)


async def advisory_xact_lock(session: AsyncSession, space: int, key: int) -> None:
    await session.execute(select(func.pg_advisory_xact_lock(space, key)))


async def advisory_xact_lock_64(session: AsyncSession, key: int) -> None:
    await session.execute(select(func.pg_advisory_xact_lock(key)))


# --- sealing -----------------------------------------------------------------------------------
async def latest_block(session: AsyncSession) -> LedgerBlock | None:
    return await session.scalar(select(LedgerBlock).order_by(LedgerBlock.height.desc()).limit(1))


@dataclass(frozen=True)
class PendingBatch:
    transaction_ids: list[str]  # in seq order
    horizon: int  # every transaction with a lower txid is sealed once this batch is


# One statement, so the xmin and the rows seen come from the same snapshot. A transaction whose txid
# is below the snapshot's xmin has ended, and any transaction still running or yet to start has a
# txid at or above it: nothing can appear below the horizon after this. A block takes the settled
# transactions with the lowest txids (an index range scan from the last block's horizon, however big
# a backlog), so everything below the new horizon is sealed; inside the block they follow seq.
PENDING = text(
    """
    WITH snapshot AS (SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS xmin),
    settled AS (
        SELECT j.id, j.seq, j.txid
        FROM journal_transactions j
        WHERE j.txid >= :lower AND j.txid < (SELECT xmin FROM snapshot)
          AND NOT EXISTS (SELECT 1 FROM ledger_block_entries e WHERE e.transaction_id = j.id)
        ORDER BY j.txid, j.seq
        LIMIT :limit + 1
    ),
    chosen AS (SELECT id, seq FROM settled ORDER BY txid, seq LIMIT :limit)
    SELECT
        (SELECT array_agg(id ORDER BY seq) FROM chosen) AS ids,
        coalesce(
            (SELECT txid FROM settled ORDER BY txid, seq OFFSET :limit LIMIT 1),
            (SELECT xmin FROM snapshot)
        ) AS horizon
    """
)


async def pending_batch(session: AsyncSession, lower: int, limit: int) -> PendingBatch:
    row = (await session.execute(PENDING, {"lower": lower, "limit": limit})).one()
    return PendingBatch(transaction_ids=list(row.ids or []), horizon=int(row.horizon))


# One row per journal transaction, its postings as arrays in posting id order.
JOURNAL_ENTRIES_SQL = """
SELECT j.id, j.installation_id, j.livemode, j.kind, j.reference, j.created_at,
       array_agg(p.account_id ORDER BY p.id) FILTER (WHERE p.id IS NOT NULL),
       array_agg(p.amount ORDER BY p.id) FILTER (WHERE p.id IS NOT NULL),
       array_agg(p.currency ORDER BY p.id) FILTER (WHERE p.id IS NOT NULL)
FROM journal_transactions j LEFT JOIN postings p ON p.transaction_id = j.id
WHERE j.id = ANY($1::text[])
GROUP BY j.id
"""


async def journal_entries(session: AsyncSession, transaction_ids: Sequence[str]) -> dict[str, JournalEntry]:
    """The journal transactions with these ids and their postings (by posting id), keyed by id."""
    ids = list(transaction_ids)
    if not ids:
        return {}
    # thousands of ids per block: one array parameter, one row per entry, no statement to compile
    connection = await session.connection()
    rows = await connection.exec_driver_sql(JOURNAL_ENTRIES_SQL, (ids,))
    entries: dict[str, JournalEntry] = {}
    for row in rows:
        values: tuple[Any, ...] = tuple(row)
        (
            transaction_id,
            installation_id,
            livemode,
            kind,
            reference,
            created_at,
            accounts,
            amounts,
            currencies,
        ) = values
        entries[transaction_id] = JournalEntry(
            transaction_id=transaction_id,
            installation_id=installation_id,
            livemode=livemode,
            kind=kind,
            reference=reference,
            created_at=created_at,
            postings=tuple(map(EntryPosting, accounts or (), amounts or (), currencies or ())),
        )
    return entries


async def insert_block(session: AsyncSession, block: LedgerBlock, transaction_ids: Sequence[str]) -> None:
    session.add(block)
    await session.flush()
    await session.execute(
        text(
            "INSERT INTO ledger_block_entries (transaction_id, block_height, position)"
            " SELECT entry.id, :height, entry.ordinality - 1"
            " FROM unnest(CAST(:ids AS text[])) WITH ORDINALITY AS entry(id, ordinality)"
        ),
        {"height": block.height, "ids": list(transaction_ids)},
    )


# Accounts with postings that became final since the last block get a checkpoint when they had many
# of them (a hot account: every block) or their last checkpoint is `max_blocks` blocks old. A balance
# then sums at most about `hot * max_blocks` postings, and the sealer only reads this block's
# postings plus the tails of the accounts it checkpoints, never the whole history of every account.
WRITE_CHECKPOINTS = text(
    """
    WITH touched AS (
        SELECT p.account_id, count(*) AS fresh
        FROM journal_transactions j JOIN postings p ON p.transaction_id = j.id
        WHERE j.txid >= :lower AND j.txid < :upper
        GROUP BY p.account_id
    ),
    due AS (
        SELECT t.account_id, coalesce(last.balance, 0) AS balance, coalesce(last.txid_horizon, 0) AS horizon
        FROM touched t
        LEFT JOIN LATERAL (
            SELECT c.block_height, c.balance, b.txid_horizon
            FROM ledger_balance_checkpoints c JOIN ledger_blocks b ON b.height = c.block_height
            WHERE c.account_id = t.account_id
            ORDER BY c.block_height DESC LIMIT 1
        ) AS last ON true
        WHERE t.fresh >= :hot OR :height - coalesce(last.block_height, 0) >= :max_blocks
    )
    INSERT INTO ledger_balance_checkpoints (account_id, block_height, balance)
    SELECT due.account_id, :height, due.balance + coalesce((
        SELECT sum(p.amount) FROM postings p
        WHERE p.account_id = due.account_id AND p.txid >= due.horizon AND p.txid < :upper
    ), 0)
    FROM due
    """
)


async def write_checkpoints(
    session: AsyncSession, *, height: int, lower: int, upper: int, hot: int, max_blocks: int
) -> int:
    result = await session.execute(
        WRITE_CHECKPOINTS,
        {"height": height, "lower": lower, "upper": upper, "hot": hot, "max_blocks": max_blocks},
    )
    return int(getattr(result, "rowcount", 0) or 0)


# --- verification ------------------------------------------------------------------------------
async def count_rows(session: AsyncSession, table: str) -> int:
    return int(await session.scalar(text(f"SELECT count(*) FROM {table}")) or 0)  # noqa: S608


async def unbalanced_transactions(session: AsyncSession, limit: int) -> list[tuple[str, str, int]]:
    rows = await session.execute(
        text(
            "SELECT transaction_id, currency, sum(amount) AS total FROM postings"
            " GROUP BY transaction_id, currency HAVING sum(amount) <> 0"
            " ORDER BY transaction_id, currency LIMIT :limit"
        ),
        {"limit": limit},
    )
    return [(row.transaction_id, row.currency, int(row.total)) for row in rows]


async def transactions_with_too_few_legs(session: AsyncSession, limit: int) -> list[tuple[str, int]]:
    rows = await session.execute(
        text(
            "SELECT j.id, count(p.id) AS legs FROM journal_transactions j"
            " LEFT JOIN postings p ON p.transaction_id = j.id"
            " GROUP BY j.id HAVING count(p.id) < 2 ORDER BY j.id LIMIT :limit"
        ),
        {"limit": limit},
    )
    return [(row.id, int(row.legs)) for row in rows]


async def postings_off_their_account(session: AsyncSession, limit: int) -> list[tuple[int, str, str]]:
    """Postings whose account is missing, in another currency, or another tenant's."""
    rows = await session.execute(
        text(
            "SELECT p.id, p.transaction_id, p.account_id FROM postings p"
            " LEFT JOIN ledger_accounts a ON a.id = p.account_id"
            " LEFT JOIN journal_transactions j ON j.id = p.transaction_id"
            " WHERE a.id IS NULL OR a.currency <> p.currency"
            " OR a.installation_id <> j.installation_id OR a.livemode <> j.livemode"
            " ORDER BY p.id LIMIT :limit"
        ),
        {"limit": limit},
    )
    return [(row.id, row.transaction_id, row.account_id) for row in rows]


async def postings_off_their_transaction(session: AsyncSession, limit: int) -> list[tuple[int, str]]:
    """Postings whose journal transaction is missing or was written by another database transaction."""
    rows = await session.execute(
        text(
            "SELECT p.id, p.transaction_id FROM postings p"
            " LEFT JOIN journal_transactions j ON j.id = p.transaction_id"
            " WHERE j.id IS NULL OR j.txid <> p.txid ORDER BY p.id LIMIT :limit"
        ),
        {"limit": limit},
    )
    return [(row.id, row.transaction_id) for row in rows]


async def blocks(session: AsyncSession) -> list[LedgerBlock]:
    return list(await session.scalars(select(LedgerBlock).order_by(LedgerBlock.height)))


async def block_entry_ids(session: AsyncSession, height: int) -> list[tuple[int, str]]:
    rows = await session.execute(
        select(LedgerBlockEntry.position, LedgerBlockEntry.transaction_id)
        .where(LedgerBlockEntry.block_height == height)
        .order_by(LedgerBlockEntry.position)
    )
    return [(position, transaction_id) for position, transaction_id in rows]


async def entries_outside_blocks(session: AsyncSession, limit: int) -> list[tuple[str, int]]:
    """Block entries that name a block that does not exist."""
    rows = await session.execute(
        text(
            "SELECT e.transaction_id, e.block_height FROM ledger_block_entries e"
            " LEFT JOIN ledger_blocks b ON b.height = e.block_height"
            " WHERE b.height IS NULL ORDER BY e.transaction_id LIMIT :limit"
        ),
        {"limit": limit},
    )
    return [(row.transaction_id, int(row.block_height)) for row in rows]


async def transactions_sealed_twice(session: AsyncSession, limit: int) -> list[str]:
    rows = await session.execute(
        text(
            "SELECT transaction_id FROM ledger_block_entries GROUP BY transaction_id"
            " HAVING count(*) > 1 ORDER BY transaction_id LIMIT :limit"
        ),
        {"limit": limit},
    )
    return [row.transaction_id for row in rows]


async def unsealed_below(session: AsyncSession, horizon: int, limit: int) -> list[str]:
    rows = await session.execute(
        text(
            "SELECT j.id FROM journal_transactions j WHERE j.txid < :horizon"
            " AND NOT EXISTS (SELECT 1 FROM ledger_block_entries e WHERE e.transaction_id = j.id)"
            " ORDER BY j.seq LIMIT :limit"
        ),
        {"horizon": horizon, "limit": limit},
    )
    return [row.id for row in rows]


# Each checkpoint must equal the account's previous checkpoint (0 before the first) plus its postings
# between the two horizons: together that is "every checkpoint equals the sum of the postings below
# its horizon", in one pass over the postings instead of one full sum per checkpoint.
CHECKPOINT_MISMATCHES = text(
    """
    WITH chain AS (
        SELECT c.account_id, c.block_height, c.balance,
               b.txid_horizon AS upper,
               coalesce(lag(b.txid_horizon) OVER by_account, 0) AS lower,
               coalesce(lag(c.balance) OVER by_account, 0) AS previous_balance
        FROM ledger_balance_checkpoints c JOIN ledger_blocks b ON b.height = c.block_height
        WINDOW by_account AS (PARTITION BY c.account_id ORDER BY c.block_height)
    )
    SELECT chain.account_id, chain.block_height, chain.balance,
           chain.previous_balance + coalesce(delta.total, 0) AS expected
    FROM chain
    LEFT JOIN LATERAL (
        SELECT sum(p.amount) AS total FROM postings p
        WHERE p.account_id = chain.account_id AND p.txid >= chain.lower AND p.txid < chain.upper
    ) AS delta ON true
    WHERE chain.balance <> chain.previous_balance + coalesce(delta.total, 0)
    ORDER BY chain.account_id, chain.block_height
    LIMIT :limit
    """
)


async def checkpoint_mismatches(session: AsyncSession, limit: int) -> list[tuple[str, int, int, int]]:
    rows = await session.execute(CHECKPOINT_MISMATCHES, {"limit": limit})
    return [(row.account_id, int(row.block_height), int(row.balance), int(row.expected)) for row in rows]


@dataclass(frozen=True)
class InstalledTrigger:
    table: str
    name: str
    type_bits: int
    enabled: str
    function: str
    function_sha256: str
    deferred: bool
    conditional: bool  # has a WHEN clause or an UPDATE OF column list


async def installed_triggers(session: AsyncSession, tables: Sequence[str]) -> list[InstalledTrigger]:
    rows = await session.execute(
        text(
            """
            SELECT c.relname AS table_name, t.tgname, t.tgtype, t.tgenabled::text AS enabled, p.proname,
                   encode(sha256(convert_to(p.prosrc, 'UTF8')), 'hex') AS source_sha256,
                   t.tgdeferrable AND t.tginitdeferred AS deferred,
                   t.tgqual IS NOT NULL OR t.tgattr::text <> '' AS conditional
            FROM pg_trigger t
            JOIN pg_class c ON c.oid = t.tgrelid
            JOIN pg_proc p ON p.oid = t.tgfoid
            WHERE c.relnamespace = current_schema()::regnamespace
              AND c.relname = ANY(CAST(:tables AS text[])) AND NOT t.tgisinternal
            """
        ),
        {"tables": list(tables)},
    )
    return [
        InstalledTrigger(
            table=row.table_name,
            name=row.tgname,
            type_bits=int(row.tgtype),
            enabled=row.enabled,
            function=row.proname,
            function_sha256=row.source_sha256,
            deferred=bool(row.deferred),
            conditional=bool(row.conditional),
        )
        for row in rows
    ]


# --- reading for people (the operator console) -------------------------------------------------------
TRANSACTIONS_ABOUT_SQL = """
SELECT j.id, j.kind, j.reference, j.idempotency_key, j.created_at, a.code, p.currency, p.amount
FROM journal_transactions j
JOIN postings p ON p.transaction_id = j.id
JOIN ledger_accounts a ON a.id = p.account_id
WHERE j.installation_id = $1 AND j.livemode = $2 AND j.reference = ANY($3::text[])
ORDER BY j.seq, p.id
"""


@dataclass(frozen=True)
class Leg:
    account: str  # the account's code, e.g. `connect:acct_…:available`
    currency: str
    amount: int


@dataclass(frozen=True)
class RecordedTransaction:
    id: str
    kind: str
    reference: str | None
    idempotency_key: str | None
    created_at: datetime
    legs: list[Leg]


async def transactions_about(
    session: AsyncSession, tenant: Tenant, references: Sequence[str]
) -> list[RecordedTransaction]:
    """The tenant's journal transactions whose reference is one of these objects, in journal order, with
    their legs by account code."""
    if not references:
        return []
    connection = await session.connection()
    rows = await connection.exec_driver_sql(
        TRANSACTIONS_ABOUT_SQL, (tenant.installation_id, tenant.livemode, list(references))
    )
    found: dict[str, RecordedTransaction] = {}
    for row in rows:
        transaction_id, kind, reference, key, created_at, code, currency, amount = tuple(row)
        if transaction_id not in found:
            found[transaction_id] = RecordedTransaction(transaction_id, kind, reference, key, created_at, [])
        found[transaction_id].legs.append(Leg(code, currency, amount))
    return list(found.values())
