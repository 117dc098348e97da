"""Helpers of the ledger tests: post through the service, read balances, seal, verify, tamper."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from moneyrail.config import Settings
from moneyrail.db.engine import create_engine, create_sessionmaker
from moneyrail.kit.tenant import Tenant
from moneyrail.ledger import service as ledger
from moneyrail.ledger.repository import JournalRecord
from moneyrail.ledger.service import Posting
from tests.harness import AsyncBridge


def post(
    bridge: AsyncBridge,
    tenant: Tenant,
    *legs: tuple[str, int, str],
    kind: str = "test",
    reference: str | None = None,
    idempotency_key: str | None = None,
) -> JournalRecord:
    async def work(session: AsyncSession) -> JournalRecord:
        return await ledger.post(
            session,
            tenant,
            kind=kind,
            postings=[Posting(code, amount, currency) for code, amount, currency in legs],
            reference=reference,
            idempotency_key=idempotency_key,
        )

    journal: JournalRecord = bridge.in_unit_of_work(work)
    return journal


def balance(bridge: AsyncBridge, tenant: Tenant, code: str, currency: str = "usd") -> int:
    async def work(session: AsyncSession) -> int:
        return await ledger.balance(session, tenant, code, currency)

    amount: int = bridge.in_unit_of_work(work)
    return amount


def ensure_accounts(bridge: AsyncBridge, tenant: Tenant, *codes: str, currency: str = "usd") -> list[str]:
    async def work(session: AsyncSession) -> list[str]:
        return [(await ledger.ensure_account(session, tenant, code, currency)).id for code in codes]

    ids: list[str] = bridge.in_unit_of_work(work)
    return ids


def verify(bridge: AsyncBridge) -> ledger.VerificationReport:
    report: ledger.VerificationReport = bridge.in_unit_of_work(ledger.verify)
    return report


def seal_until_sealed(
    bridge: AsyncBridge, db: Any, transaction_ids: Sequence[str], timeout: float = 60
) -> None:
    """Seal until these transactions are in blocks.

    Sealing waits for every transaction of the whole PostgreSQL cluster that started before them to
    end (the snapshot's xmin is cluster-wide), so on a shared server it may take a few rounds.
    """
    deadline = time.monotonic() + timeout
    while True:
        bridge.in_unit_of_work(ledger.seal_pending)
        (sealed,) = db.execute(
            "SELECT count(*) FROM ledger_block_entries WHERE transaction_id = ANY(%s)",
            (list(transaction_ids),),
        ).fetchone()
        if sealed == len(transaction_ids):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"only {sealed} of {len(transaction_ids)} transactions sealed")
        time.sleep(0.05)


def block_of(db: Any, transaction_id: str) -> int:
    row = db.execute(
        "SELECT block_height FROM ledger_block_entries WHERE transaction_id = %s", (transaction_id,)
    ).fetchone()
    assert row is not None, f"{transaction_id} is not sealed"
    return int(row[0])


def sum_of_postings(db: Any, tenant: Tenant, code: str, currency: str = "usd") -> int:
    (total,) = db.execute(
        "SELECT coalesce(sum(p.amount), 0) FROM postings p JOIN ledger_accounts a ON a.id = p.account_id"
        " WHERE a.installation_id = %s AND a.livemode = %s AND a.code = %s AND a.currency = %s",
        (tenant.installation_id, tenant.livemode, code, currency),
    ).fetchone()
    return int(total)


def without_ledger_triggers(db: Any, table: str, statement: str, params: Sequence[Any] = ()) -> None:
    """What a superuser could do: switch the table's triggers off, change a row, switch them on.

    All in one transaction, so no other session ever sees the table unprotected.
    """
    with db.transaction():
        db.execute(f"ALTER TABLE {table} DISABLE TRIGGER USER")
        db.execute(statement, params)
        db.execute(f"ALTER TABLE {table} ENABLE TRIGGER USER")


@contextmanager
def tampered(db: Any, table: str, change: str, undo: str, params: Sequence[Any] = ()) -> Iterator[None]:
    """The ledger with one row changed behind the triggers' back, put back as it was afterwards
    (verification is global: the other tests need a clean ledger)."""
    without_ledger_triggers(db, table, change, params)
    try:
        yield
    finally:
        without_ledger_triggers(db, table, undo, params)


@asynccontextmanager
async def two_connections(database_url: str) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    """A sessionmaker on its own engine, for tests that hold two transactions open at once."""
    engine = create_engine(Settings(DATABASE_URL=database_url, db_pool_size=2, db_max_overflow=1))
    try:
        yield create_sessionmaker(engine)
    finally:
        await engine.dispose()
