"""Queries over customers, always within one tenant."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any, Literal

import asyncpg
import orjson
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.db.pagination import newest_first_sql
from moneyrail.db.raw import (
    StatementClaim,
    driver_connection,
    lone_statement_connection,
    read_connection,
    transaction_open,
)
from moneyrail.db.uow import UnitOfWork
from moneyrail.kit.pagination import Position
from moneyrail.kit.tenant import Tenant


@dataclass(frozen=True, slots=True)
class NewCustomer:
    """A customer's row as the intake writes it: plain values, no ORM object (its statements are the
    driver's own, so an identity map or change tracking would only cost)."""

    id: str
    installation_id: str
    livemode: bool
    external_reference: str | None
    email: str | None
    name: str | None
    metadata_: dict[str, str]

    def inserted(self, created_at: datetime) -> CustomerRecord:
        return CustomerRecord(
            self.id,
            self.installation_id,
            self.livemode,
            self.external_reference,
            self.email,
            self.name,
            self.metadata_,
            created_at,
        )


@dataclass(frozen=True, slots=True)
class CustomerRecord(NewCustomer):
    """A customer as stored (its row in `customers`, models/customer.py), with the `created_at` the
    database stamped (the sandbox clock's): what the intake's insert answers and every read returns."""

    created_at: datetime


# Its columns, in its fields' order
_COLUMNS = "id, installation_id, livemode, external_reference, email, name, metadata, created_at"


def _record(row: Any) -> CustomerRecord:
    return CustomerRecord(*row.values())


_INSERT = """
    INSERT INTO customers (id, installation_id, livemode, external_reference, email, name, metadata)
    VALUES ($1, $2, $3, $4, $5, $6, $7)
    ON CONFLICT (installation_id, livemode, external_reference) WHERE external_reference IS NOT NULL
    DO NOTHING
    RETURNING created_at
"""
# The Idempotency-Key's claim ($1 to $5, a SELECT the claim brings) and the insert ($6 to $12) in one
# round trip: the row goes in only where the claim holds the key's lock and found no answer under it.
_INSERT_WHERE_CLAIMED = """
        INSERT INTO customers (id, installation_id, livemode, external_reference, email, name, metadata)
        SELECT $6::text, $7::text, $8::boolean, $9::text, $10::text, $11::text, $12::jsonb
        FROM claim WHERE claim.locked AND claim.fingerprint IS NULL
        ON CONFLICT (installation_id, livemode, external_reference) WHERE external_reference IS NOT NULL
        DO NOTHING
        RETURNING created_at
"""
_CLAIM_AND_INSERT = """
    WITH claim AS MATERIALIZED (CLAIM),
    inserted AS (INSERT_WHERE_CLAIMED)
    SELECT claim.*, inserted.created_at FROM claim LEFT JOIN inserted ON true
""".replace("INSERT_WHERE_CLAIMED", _INSERT_WHERE_CLAIMED)


# The keyed intake whole, as one self-committing statement: the claim, the insert (`effect`, $6 to $12)
# and the key's stored answer ($13 on), written only where the customer was. No BEGIN, no COMMIT: the
# claim's lock holds for the statement's own transaction, and the answer commits with the customer.
_CLAIM_INSERT_AND_ANSWER = """
    WITH claim AS MATERIALIZED (CLAIM),
    effect AS (INSERT_WHERE_CLAIMED),
    stored AS (ANSWER)
    SELECT claim.*, effect.created_at, stored.answered
    FROM claim LEFT JOIN effect ON true LEFT JOIN stored ON true
""".replace("INSERT_WHERE_CLAIMED", _INSERT_WHERE_CLAIMED)
_ANSWER_FIRST_PARAMETER = 13
# asyncpg's name for the stored answers' primary key (models/base.py's naming convention)
_ANSWER_KEY = "pk_idempotency_records"
_ANSWER_STATUS = 200  # the route's status for a created customer


@cache
def _claimed_insert(claim_sql: str) -> str:
    return _CLAIM_AND_INSERT.replace("CLAIM", claim_sql, 1)


@cache
def _claimed_insert_and_answer(claim_sql: str, answer_sql: str) -> str:
    return _CLAIM_INSERT_AND_ANSWER.replace("CLAIM", claim_sql, 1).replace("ANSWER", answer_sql, 1)


def _values(customer: NewCustomer) -> tuple[Any, ...]:
    return (
        customer.id,
        customer.installation_id,
        customer.livemode,
        customer.external_reference,
        customer.email,
        customer.name,
        orjson.dumps(customer.metadata_).decode(),
    )


async def insert_answered(
    uow: UnitOfWork, customer: NewCustomer, claim: StatementClaim, answer: bytes
) -> CustomerRecord | None:
    """Insert the customer and store the key's answer, in one statement that commits by itself.

    `answer` is the request's answer with its `created` still to come (api/idempotency.py,
    `awaiting_created`). The claim's replay or refusal is raised as usual. None when this statement
    could not settle the request alone, with nothing of it kept: the reference belongs to a customer
    already (its answer is that customer), or a record under the key stopped the stored answer (a stale
    one to replace, or a first answer committed after this statement's snapshot). The caller then takes
    the transactional path (`insert_unless_referenced`), which claims the key again.
    """
    if transaction_open(uow):
        # inside a transaction the unit of work began already (a lookup the gate made through the ORM),
        # a failed statement would leave that transaction unusable for the transactional path
        return None
    write = claim.answer_write(_ANSWER_STATUS, answer, _ANSWER_FIRST_PARAMETER)
    sql = _claimed_insert_and_answer(claim.sql, write.sql)
    try:
        async with lone_statement_connection(uow) as connection:
            row = await connection.fetchrow(sql, *claim.parameters, *_values(customer), *write.parameters)
    except asyncpg.UniqueViolationError as error:
        if error.constraint_name != _ANSWER_KEY:
            raise
        return None
    claim.settle(row)
    if not row["answered"]:
        return None
    return customer.inserted(row["created_at"])


async def insert_unless_referenced(
    uow: UnitOfWork, customer: NewCustomer, claim: StatementClaim | None
) -> CustomerRecord | None:
    """Insert; if a customer with the same external_reference exists already, insert nothing.

    The intake's hottest statement, so straight on the driver (db/raw.py). With an Idempotency-Key,
    the key's claim rides in the same statement and is settled before anything else, in the unit of
    work's transaction (its session made here); without one the insert is the request's only write,
    so it runs in a transaction of its own (no BEGIN, no COMMIT, no session).
    """
    values = _values(customer)
    if claim is None:
        async with lone_statement_connection(uow) as connection:
            created_at = await connection.fetchval(_INSERT, *values)
    else:
        connection = await driver_connection(uow.session)  # the stored answer commits with the customer
        row = await connection.fetchrow(_claimed_insert(claim.sql), *claim.parameters, *values)
        claim.settle(row)
        created_at = row["created_at"]
    if created_at is None:
        return None
    return customer.inserted(created_at)


async def get(session: AsyncSession, tenant: Tenant, customer_id: str) -> CustomerRecord | None:
    return await _find(session, tenant, "id", customer_id)


async def get_by_reference(session: AsyncSession, tenant: Tenant, reference: str) -> CustomerRecord | None:
    return await _find(session, tenant, "external_reference", reference)


async def _find(
    session: AsyncSession, tenant: Tenant, column: Literal["id", "external_reference"], value: str
) -> CustomerRecord | None:
    """The tenant's customer whose `column` (a unique one: id, external_reference) holds `value`."""
    async with read_connection(session) as connection:
        row = await connection.fetchrow(
            f"SELECT {_COLUMNS} FROM customers "  # noqa: S608 - the columns are ours
            f"WHERE installation_id = $1 AND livemode = $2 AND {column} = $3",
            tenant.installation_id,
            tenant.livemode,
            value,
        )
    return _record(row) if row is not None else None


async def emails_of(session: AsyncSession, tenant: Tenant, customer_ids: Sequence[str]) -> dict[str, str]:
    if not customer_ids:
        return {}
    async with read_connection(session) as connection:
        rows = await connection.fetch(
            "SELECT id, email FROM customers WHERE installation_id = $1 AND livemode = $2 "
            "AND id = ANY($3::text[]) AND email IS NOT NULL",
            tenant.installation_id,
            tenant.livemode,
            sorted(set(customer_ids)),
        )
    return {row[0]: row[1] for row in rows}


async def list_page(
    session: AsyncSession, tenant: Tenant, *, limit: int, after: Position | None
) -> list[CustomerRecord]:
    """Newest first (CONVENTIONS.md §5), on `ix_customers_list`."""
    page, page_parameters = newest_first_sql(3, limit=limit, after=after)
    async with read_connection(session) as connection:
        rows = await connection.fetch(
            f"SELECT {_COLUMNS} FROM customers WHERE installation_id = $1 AND livemode = $2 {page}",  # noqa: S608
            tenant.installation_id,
            tenant.livemode,
            *page_parameters,
        )
    return [_record(row) for row in rows]
