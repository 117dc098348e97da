"""The ledger's accounts, journal transactions (posted alone, in a batch, or guarded against a negative
balance, and as writes riding another statement), balances and locks. Every write is an INSERT."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, text, tuple_
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.db.raw import Write, WriteAt, driver_connection
from moneyrail.kit.ids import new_id
from moneyrail.kit.tenant import Tenant
from moneyrail.models.ledger import LedgerAccount, LedgerPosting

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


@dataclass(frozen=True, slots=True)
class JournalRecord:
    """A journal transaction as written (its row in `journal_transactions`): what posting hands back."""

    id: str
    installation_id: str
    livemode: bool
    created_at: datetime
    kind: str
    reference: str | None
    idempotency_key: str | None
    seq: int
    txid: int


# Its columns, in its fields' order, as the statements below return them
JOURNAL_COLUMNS = "id, installation_id, livemode, created_at, kind, reference, idempotency_key, seq, txid"


def journal_record(row: Any) -> JournalRecord:
    """A record from a row holding `JOURNAL_COLUMNS` first (an asyncpg Record, by position)."""
    return JournalRecord(row[0], row[1], row[2], row[3], row[4], row[5], row[6], row[7], row[8])


# Whole postings in one statement, one round trip, however many journal transactions it carries: each
# one's legs are matched to its tenant's accounts, and its journal row and postings are inserted only
# when every leg has one. No row comes back for a transaction with a missing account or whose
# idempotency key already names one (or names an earlier one in this statement); the caller finds out
# which. A concurrent poster of the same key makes this wait for its commit (the unique index); rows
# go in by key, so two statements carrying the same keys wait on them in one order, never on each
# other. Parameters, one array element per transaction: $1 id, $2 installation_id, $3 livemode,
# $4 kind, $5 reference, $6 idempotency_key; one element per leg: $7 its transaction's position
# (1-based), $8 account code, $9 amount, $10 currency.
POST_SQL = f"""
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
    RETURNING {JOURNAL_COLUMNS}
),
posted AS (
    INSERT INTO postings (transaction_id, account_id, currency, amount)
    SELECT journal.id, legs.account_id, legs.currency, legs.amount
    FROM journal JOIN entry ON entry.id = journal.id JOIN legs ON legs.entry = entry.position
    ORDER BY legs.ordinality
)
SELECT * FROM journal
"""  # noqa: S608 - the columns are ours


async def insert_transactions(
    connection: Any, entries: Sequence[NewJournalTransaction]
) -> dict[str, JournalRecord]:
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
    return {row[0]: journal_record(row) for row in rows}


async def insert_transaction(connection: Any, entry: NewJournalTransaction) -> JournalRecord | None:
    """The one journal transaction, or None (see POST_SQL)."""
    return (await insert_transactions(connection, [entry])).get(entry.id)


async def insert_transaction_if_not_negative(
    connection: Any, entry: NewJournalTransaction, code: str, currency: str
) -> tuple[int, JournalRecord | None]:
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
    # the guard's balance first, then the journal's columns (null where nothing was written)
    return int(row[0]), journal_record(row[1:]) if row[1] is not None else None


async def find_by_idempotency_key(
    session: AsyncSession, tenant: Tenant, idempotency_key: str
) -> JournalRecord | None:
    connection = await driver_connection(session)
    row = await connection.fetchrow(
        f"SELECT {JOURNAL_COLUMNS} FROM journal_transactions "  # noqa: S608 - the columns are ours
        "WHERE installation_id = $1 AND livemode = $2 AND idempotency_key = $3",
        tenant.installation_id,
        tenant.livemode,
        idempotency_key,
    )
    return journal_record(row) if row is not None else None


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
