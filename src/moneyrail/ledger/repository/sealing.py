"""Sealing the journal into blocks: the pending batch, its entries, the block and the checkpoints."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.ledger.chain import EntryPosting, JournalEntry
from moneyrail.models.ledger import LedgerBlock


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
