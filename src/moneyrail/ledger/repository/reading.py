"""The ledger read for people (the operator console)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.kit.tenant import Tenant

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
