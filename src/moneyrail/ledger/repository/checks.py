"""The verification's queries: what a sound ledger never holds, and the triggers that guard it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.models.ledger import LedgerBlock, LedgerBlockEntry


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
