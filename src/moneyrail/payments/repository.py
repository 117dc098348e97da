"""Queries over payment intents and refunds, always within one tenant unless a name says otherwise."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from functools import cache
from typing import Any, NamedTuple

import asyncpg
import orjson
from sqlalchemy import ColumnElement, and_, bindparam, func, select, true, tuple_, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.db.pagination import newest_first_page
from moneyrail.db.raw import (
    AnsweringClaim,
    SessionOnDemand,
    StatementClaim,
    connection_begun,
    driver_connection,
    engine_of,
    loaded_row,
    lone_statement_connection,
    read_connection,
    select_list,
    transaction_open,
)
from moneyrail.events import repository as events
from moneyrail.kit.pagination import Position
from moneyrail.kit.tenant import Tenant
from moneyrail.models import PaymentIntent, ProcessorOrphan, ProcessorOrphanSweep, Refund


def _payment_of(tenant: Tenant) -> Any:
    return and_(
        PaymentIntent.installation_id == tenant.installation_id, PaymentIntent.livemode == tenant.livemode
    )


def _refund_of(tenant: Tenant) -> Any:
    return and_(Refund.installation_id == tenant.installation_id, Refund.livemode == tenant.livemode)


# --- the create route's one statement -------------------------------------------------------------
# The columns a new payment is written with (attribute, column, type); every other column takes its
# default, as when the ORM inserts it. A sandbox row's `created_at` is stamped by the database anyway.
_NEW_PAYMENT_COLUMNS = (
    ("id", "id", "text"),
    ("installation_id", "installation_id", "text"),
    ("livemode", "livemode", "boolean"),
    ("amount", "amount", "bigint"),
    ("currency", "currency", "text"),
    ("status", "status", "text"),
    ("capture_method", "capture_method", "text"),
    ("amount_capturable", "amount_capturable", "bigint"),
    ("amount_received", "amount_received", "bigint"),
    ("amount_refunded", "amount_refunded", "bigint"),
    ("customer_id", "customer_id", "text"),
    ("payment_method_id", "payment_method_id", "text"),
    ("merchant_id", "merchant_id", "text"),
    ("has_distribution", "has_distribution", "boolean"),
    ("external_reference", "external_reference", "text"),
    ("description", "description", "text"),
    ("metadata_", "metadata", "jsonb"),
    ("receipt_email", "receipt_email", "text"),
    ("receipt_phone", "receipt_phone", "text"),
    ("client_secret_hash", "client_secret_hash", "text"),
    ("commission_basis_points", "commission_basis_points", "bigint"),
    ("commission_fixed_amount", "commission_fixed_amount", "bigint"),
    ("fee_reserve", "fee_reserve", "bigint"),
    ("fee_status", "fee_status", "text"),
    ("fee_prior_recovery", "fee_prior_recovery", "bigint"),
    ("amount_pending_settlement", "amount_pending_settlement", "bigint"),
    ("confirmations", "confirmations", "bigint"),
    ("save_payment_method", "save_payment_method", "boolean"),
    ("created_at", "created_at", "timestamptz"),
    ("updated_at", "updated_at", "timestamptz"),
)
NEW_PAYMENT_ATTRIBUTES = tuple(attribute for attribute, _, _ in _NEW_PAYMENT_COLUMNS)


def _new_payment_insert(first_parameter: int, where: str) -> str:
    columns = ", ".join(column for _, column, _ in _NEW_PAYMENT_COLUMNS)
    values = ", ".join(
        f"${first_parameter + number}::{kind}" for number, (_, _, kind) in enumerate(_NEW_PAYMENT_COLUMNS)
    )
    # names and parameter numbers only
    return f"INSERT INTO payment_intents ({columns}) SELECT {values} {where} RETURNING created_at"


def _new_payment_values(payment: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(
        orjson.dumps(payment[attribute]).decode() if kind == "jsonb" else payment[attribute]
        for attribute, _, kind in _NEW_PAYMENT_COLUMNS
    )


# The payment's INSERT (`effect`), its event, a delivery for each endpoint listening for it and, with a
# key, the key's claim ahead of them and its stored answer after: one statement that commits by itself.
# Nothing is written where more endpoints listen than the statement has operation ids for (the
# transactional path schedules theirs) or where the claim does not grant the key; a record under the key
# the claim did not see fails the whole statement.
_KEYLESS_CREATE = """
    WITH listening AS MATERIALIZED (LISTENING),
    effect AS (INSERT_WHERE_SERVED),
    announced AS (EVENT),
    DELIVERIES
    SELECT effect.created_at, (SELECT count(*) FROM listening) AS listening, WAKEUPS AS scheduled
    FROM (SELECT 1) AS one LEFT JOIN effect ON true
"""
_KEYED_CREATE = """
    WITH claim AS MATERIALIZED (CLAIM),
    listening AS MATERIALIZED (LISTENING),
    effect AS (INSERT_WHERE_CLAIMED),
    announced AS (EVENT),
    DELIVERIES,
    stored AS (ANSWER)
    SELECT claim.*, effect.created_at, stored.answered, (SELECT count(*) FROM listening) AS listening,
        WAKEUPS AS scheduled
    FROM claim LEFT JOIN effect ON true LEFT JOIN stored ON true
"""
_CLAIM_PARAMETERS = 5  # the claim's $1 to $5 (api/idempotency.py)
# asyncpg's name for the stored answers' primary key (models/base.py's naming convention)
_ANSWER_KEY = "pk_idempotency_records"
_ANSWER_STATUS = 200  # the create route's status


@cache
def _keyless_create(listening_sql: str, event_sql: str, deliveries: events.DeliveriesOfEffect) -> str:
    # `deliveries` without its parameters (the statement's text is remembered by its fragments' text)
    where = f"WHERE {deliveries.fit}"
    return (
        _KEYLESS_CREATE.replace("LISTENING", listening_sql, 1)
        .replace("INSERT_WHERE_SERVED", _new_payment_insert(4, where), 1)
        .replace("EVENT", event_sql, 1)
        .replace("DELIVERIES", deliveries.ctes, 1)
        .replace("WAKEUPS", deliveries.wakeups, 1)
    )


@cache
def _keyed_create(
    claim_sql: str, listening_sql: str, event_sql: str, deliveries: events.DeliveriesOfEffect, answer_sql: str
) -> str:
    where = f"FROM claim WHERE claim.locked AND claim.fingerprint IS NULL AND {deliveries.fit}"
    return (
        _KEYED_CREATE.replace("CLAIM", claim_sql, 1)
        .replace("LISTENING", listening_sql, 1)
        .replace("INSERT_WHERE_CLAIMED", _new_payment_insert(_CLAIM_PARAMETERS + 4, where), 1)
        .replace("EVENT", event_sql, 1)
        .replace("DELIVERIES", deliveries.ctes, 1)
        .replace("ANSWER", answer_sql, 1)
        .replace("WAKEUPS", deliveries.wakeups, 1)
    )


class CreatedAtOnce(NamedTuple):
    created_at: datetime | None  # None: nothing kept, the transactional path answers
    listening: int  # endpoints listening for the event, each given a delivery where the payment was kept


async def insert_created(
    uow: SessionOnDemand,
    tenant: Tenant,
    payment: Mapping[str, Any],
    event: events.NewEvent,
    deliveries: events.PlannedDeliveries,
    claim: StatementClaim | None,
    answer: bytes | None,
) -> CreatedAtOnce:
    """Insert a new payment (`payment`: its `NEW_PAYMENT_ATTRIBUTES`) with its event, a delivery of it to
    each listening endpoint and, with a key, the key's claim and stored answer, in one statement that
    commits by itself (no BEGIN, no COMMIT).

    `event`'s object is rendered before the database stamps the payment's `created`; `answer` likewise
    (api/idempotency.py, `awaiting_created`). The claim's replay or refusal is raised as usual. Answers
    the payment's stamped `created_at`, or None for it when this statement could not settle the request
    alone, with nothing of it kept: more endpoints listen than `deliveries` has operation ids for, a
    record under the key stopped the stored answer (a stale one to replace, or a first answer committed
    after this statement's snapshot), or the unit of work has begun a transaction already (a failed
    statement would spoil it). The caller then takes the transactional path, which claims the key again.
    """
    if transaction_open(uow):
        return CreatedAtOnce(None, listening=0)
    offset = 0 if claim is None else _CLAIM_PARAMETERS
    listening = events.listening_endpoints(tenant, event.type, offset + 1)
    values = _new_payment_values(payment)
    event_write = events.event_of_effect(tenant, event, offset + 4 + len(values))
    after_event = offset + 4 + len(values) + len(event_write.parameters)
    delivery_writes = events.deliveries_of_effect(tenant, event, deliveries, after_event)
    after_deliveries = after_event + len(delivery_writes.parameters)
    if claim is None:
        sql = _keyless_create(listening.sql, event_write.sql, delivery_writes.without_parameters())
        parameters: tuple[Any, ...] = (
            *listening.parameters,
            *values,
            *event_write.parameters,
            *delivery_writes.parameters,
        )
    else:
        assert answer is not None  # a keyed create stores its answer
        write = claim.answer_write(_ANSWER_STATUS, answer, after_deliveries)
        sql = _keyed_create(
            claim.sql, listening.sql, event_write.sql, delivery_writes.without_parameters(), write.sql
        )
        parameters = (
            *claim.parameters,
            *listening.parameters,
            *values,
            *event_write.parameters,
            *delivery_writes.parameters,
            *write.parameters,
        )
    try:
        async with lone_statement_connection(uow) as connection:
            row = await connection.fetchrow(sql, *parameters)
    except asyncpg.UniqueViolationError as error:
        if claim is None or error.constraint_name != _ANSWER_KEY:
            raise
        return CreatedAtOnce(None, listening=0)
    if claim is not None:
        claim.settle(row)
        if not row["answered"]:
            return CreatedAtOnce(None, listening=row["listening"])
    return CreatedAtOnce(row["created_at"], listening=row["listening"])


async def claim_in_transaction(session: AsyncSession, claim: StatementClaim) -> None:
    """The key's claim as the gate runs it, first in the unit of work's transaction: a create that could
    not be one statement starts so (its replay or refusal raised, its answer stored at commit)."""
    connection = await driver_connection(session)
    claim.settle(await connection.fetchrow(claim.sql, *claim.parameters))


async def get_payment(
    session: AsyncSession, tenant: Tenant, payment_id: str, *, for_update: bool = False
) -> PaymentIntent | None:
    statement = select(PaymentIntent).where(_payment_of(tenant), PaymentIntent.id == payment_id)
    if for_update:
        # a payment's state changes one request (or worker) at a time
        statement = statement.with_for_update()
    return await session.scalar(statement)


async def payment_by_authorization(
    session: AsyncSession, tenant: Tenant, authorization_id: str
) -> PaymentIntent | None:
    """The payment the processor's authorization was made for, locked."""
    return await session.scalar(
        select(PaymentIntent)
        .where(_payment_of(tenant), PaymentIntent.processor_authorization == authorization_id)
        .with_for_update()
    )


# A payment step's first statement (confirm, capture): the payment locked on the driver, made the
# session's row without the ORM's query machinery. Its tenant and id are $1 to $3.
_PAYMENT_COLUMNS = select_list(PaymentIntent, "p", prefix="payment.")
_LOCK_PAYMENT = (
    f"SELECT {_PAYMENT_COLUMNS} FROM payment_intents AS p "  # noqa: S608 - names from the mapper
    "WHERE p.installation_id = $1 AND p.livemode = $2 AND p.id = $3 FOR UPDATE"
)
# The same behind the step's Idempotency-Key claim (api/idempotency.py, its $1 to $5; $2 and $3 the same
# tenant): one round trip for both. The payment is locked only where the claim grants the key, so a
# request whose key is in flight answers 409 at once instead of waiting for the other's lock, and a
# replay locks nothing. The payment's row version is the newest committed one (FOR UPDATE), whatever the
# statement's snapshot; the claim's lookup sees that snapshot, as when it ran alone. A stale record under
# the key goes (`stale_record_deletion`): the step's answer is written with its effect, without ON CONFLICT.
_LOCK_PAYMENT_CLAIMING = (
    "WITH claim AS ({claim}), stale AS ({stale}), "  # noqa: S608 - names from the mapper, the claim's SQL
    f"payment AS (SELECT {_PAYMENT_COLUMNS} FROM payment_intents AS p "
    "WHERE p.installation_id = $2 AND p.livemode = $3 AND p.id = ${payment_id} "
    "AND (SELECT claim.locked AND claim.fingerprint IS NULL FROM claim) FOR UPDATE OF p) "
    "SELECT claim.*, payment.* FROM claim LEFT JOIN payment ON true"
)


@cache
def _lock_payment_claiming(claim_sql: str, stale_sql: str, claim_parameters: int) -> str:
    return _LOCK_PAYMENT_CLAIMING.format(claim=claim_sql, stale=stale_sql, payment_id=claim_parameters + 1)


async def lock_payment_on_driver(
    session: AsyncSession, tenant: Tenant, payment_id: str
) -> PaymentIntent | None:
    """`get_payment(..., for_update=True)` on the driver."""
    if session.new or session.dirty or session.deleted:
        await session.flush()  # what the ORM's query would have autoflushed first
    connection = await driver_connection(session)
    row = await connection.fetchrow(_LOCK_PAYMENT, tenant.installation_id, tenant.livemode, payment_id)
    return loaded_row(session, PaymentIntent, row, prefix="payment.") if row is not None else None


async def lock_payment_claiming(
    session: AsyncSession, payment_id: str, claim: AnsweringClaim
) -> tuple[Mapping[str, Any], PaymentIntent | None]:
    """The key's claim row and, where it grants the key, the payment locked (None: no such payment of
    the claim's tenant). The caller settles the claim before anything else."""
    connection = await driver_connection(session)
    parameters = claim.parameters
    row = await connection.fetchrow(
        _lock_payment_claiming(claim.sql, claim.stale_record_deletion, len(parameters)),
        *parameters,
        payment_id,
    )
    assert row is not None  # the claim's row is always there
    found = row["payment.id"] is not None
    return row, loaded_row(session, PaymentIntent, row, prefix="payment.") if found else None


# A phased step's first lock (payments/phases.py, `claim_for_call`): the payment claimed for the request's
# processor call, in a statement that commits alone, instead of locked in a transaction that is then
# rolled back. Behind the step's Idempotency-Key claim where one is sent ($1 to $5, as above; the claim's
# lock lasts the statement, which is all a look at the key needs): the payment is claimed only where the
# key is granted. The claim's own condition is on the row (`p`), so an UPDATE that waited for another's
# re-checks it on the row that other left. `payment_exists`: the tenant's payment, claimed or not (looked
# up only where it was not claimed).
_CLAIM_FOR_CALL = (
    "{claim_cte}payment AS (UPDATE payment_intents AS p "  # noqa: S608 - names from the mapper, the claim's SQL
    "SET processor_call = ${token}, processor_call_until = ${until} "
    "WHERE p.installation_id = ${installation} AND p.livemode = ${livemode} AND p.id = ${payment_id} "
    "{granted}AND (p.processor_call_until IS NULL OR p.processor_call = ${token} "
    "OR p.processor_call_until <= ${now}) "
    f"RETURNING {_PAYMENT_COLUMNS}) "
    'SELECT {claim_columns}payment.*, CASE WHEN payment."payment.id" IS NOT NULL THEN true ELSE EXISTS '
    "(SELECT FROM payment_intents AS q WHERE q.installation_id = ${installation} "
    "AND q.livemode = ${livemode} AND q.id = ${payment_id}) END AS payment_exists "
    "{facts_columns}FROM {claim_from} LEFT JOIN payment ON true{facts_join}"
)


@cache
def _claim_for_call(claim_sql: str | None, claim_parameters: int, facts_sql: str | None) -> str:
    """`facts_sql`: the payment's facts asked in the same statement (`_facts_statement`), their
    parameters after the others."""
    first = claim_parameters + 1  # the payment's id, then the claim's token, its lease, now
    if claim_sql is None:  # the tenant after them
        key = {"claim_cte": "WITH ", "granted": "", "claim_columns": "", "claim_from": "(SELECT 1) AS one"}
        tenant, facts_first = {"installation": first + 4, "livemode": first + 5}, first + 6
    else:  # the tenant is the claim's $2 and $3
        key = {
            "claim_cte": f"WITH claim AS ({claim_sql}), ",
            "granted": "AND (SELECT claim.locked AND claim.fingerprint IS NULL FROM claim) ",
            "claim_columns": "claim.*, ",
            "claim_from": "claim",
        }
        tenant, facts_first = {"installation": 2, "livemode": 3}, first + 4
    facts = (
        {"facts_columns": " ", "facts_join": ""}
        if facts_sql is None
        else {
            "facts_columns": ", facts.* ",
            "facts_join": f" LEFT JOIN LATERAL ({_numbered_from(facts_sql, facts_first)}) AS facts ON true",
        }
    )
    return _CLAIM_FOR_CALL.format(
        payment_id=first, token=first + 1, until=first + 2, now=first + 3, **key, **tenant, **facts
    )


def _numbered_from(sql: str, first: int) -> str:
    """A statement's parameters $1, $2, ... numbered from `first` instead, for a statement carried in
    another's. Only for SQL compiled from constructs with every value bound: no literal to hold a `$`."""
    assert "'" not in sql, sql
    return re.sub(r"\$(\d+)", lambda found: f"${int(found.group(1)) + first - 1}", sql)


async def claim_payment_for_call(
    session: AsyncSession,
    tenant: Tenant,
    payment_id: str,
    claim: StatementClaim | None,
    *,
    token: str,
    until: datetime,
    now: datetime,
    facts: Mapping[str, PaymentCondition] | None = None,
) -> tuple[Mapping[str, Any], PaymentIntent | None, frozenset[str] | None]:
    """The statement's row (the key's claim's columns where `claim` is given, `payment_exists`), the
    payment claimed for `token` until `until`, made the session's row (None: not claimed), and the names
    of the `facts` that hold for it, asked in the same statement (None: none asked, or not claimed).
    Given no open transaction: it commits alone."""
    parameters: tuple[Any, ...] = claim.parameters if claim is not None else ()
    claiming: tuple[Any, ...] = (payment_id, token, until, now)
    if claim is None:
        claiming += (tenant.installation_id, tenant.livemode)
    asked = tuple(facts.items()) if facts else ()
    labelled = _facts_statement(asked, engine_of(session).dialect) if asked else None
    async with lone_statement_connection(session) as connection:
        row = await connection.fetchrow(
            _claim_for_call(
                claim.sql if claim is not None else None,
                len(parameters),
                labelled.sql if labelled is not None else None,
            ),
            *parameters,
            *claiming,
            *(labelled.parameters(payment_id) if labelled is not None else ()),
        )
    assert row is not None  # one row, claimed or not
    if row["payment.id"] is None:
        return row, None, None
    payment = loaded_row(session, PaymentIntent, row, prefix="payment.")
    if labelled is None:
        return row, payment, None
    return row, payment, frozenset(name for index, (name, _) in enumerate(asked) if row[f"fact_{index}"])


# Another domain's question about a payment: a condition on its id (the parameter), such as
# `exists().where(Order.payment_intent_id == payment_id)`.
PaymentCondition = Callable[[ColumnElement[str]], ColumnElement[bool]]


async def facts_of(
    session: AsyncSession, payment_id: str, conditions: Mapping[str, PaymentCondition]
) -> frozenset[str]:
    """The names of the conditions that hold for this payment, all asked in one statement, on the
    driver (a capture asks on every request; the ORM's execute cost about as much as the statement)."""
    facts, _ = await facts_and_more_of(session, payment_id, conditions)
    return facts


# More columns for the facts' statement, another domain's question asked in the same round trip:
# given the number of its first parameter, the columns' SQL (named) and their parameters.
MoreColumns = Callable[[int], tuple[str, Sequence[Any]]]


async def facts_and_more_of(
    session: AsyncSession,
    payment_id: str,
    conditions: Mapping[str, PaymentCondition],
    more: MoreColumns | None = None,
) -> tuple[frozenset[str], Mapping[str, Any]]:
    """`facts_of`, and the columns `more` asks for in the same statement (by name; none without it).

    `more` is another domain's question about what the step's transaction will write (a capture's ledger
    outlook), so it is asked only in a transaction that holds a connection, the payment locked in it.
    Before that (a phased step's first run, which stops at its processor call) none come back."""
    if session.sync_session.autoflush and (session.new or session.dirty or session.deleted):
        await session.flush()  # what the ORM's execute would have autoflushed first
    if not connection_begun(session):
        more = None
    asked = tuple(conditions.items())
    if not asked and more is None:
        return frozenset(), {}
    statement = _facts_statement(asked, engine_of(session).dialect)
    sql, parameters = statement.sql, statement.parameters(payment_id)
    if more is not None:
        columns, more_parameters = more(len(parameters) + 1)
        sql, parameters = _with_more_columns(sql, columns), [*parameters, *more_parameters]
    # in the step's transaction; before it began (a phased step's first run), a read of its own
    async with read_connection(session) as connection:
        row = await connection.fetchrow(sql, *parameters)
    # the facts' columns first (with none asked, the one `true` that stands in for them), then `more`'s
    fact_columns = len(asked) or 1
    values = list(row.values())
    facts = frozenset(name for (name, _), holds in zip(asked, values[: len(asked)], strict=True) if holds)
    return facts, dict(list(row.items())[fact_columns:])


@cache
def _with_more_columns(facts_sql: str, columns: str) -> str:
    return f"SELECT facts.*, {columns} FROM ({facts_sql}) AS facts"  # noqa: S608 - SQL built in code


_FACT_PAYMENT = bindparam("payment_id", type_=PaymentIntent.id.type)


class _FactsStatement(NamedTuple):
    """The conditions' SELECT as the driver takes it: its SQL, and its parameters in order, the
    payment's id among the conditions' own constants (a review's status, say)."""

    sql: str
    names: tuple[str, ...]
    constants: Mapping[str, Any]

    @classmethod
    def of(cls, statement: Any, dialect: Any) -> _FactsStatement:
        compiled = statement.compile(dialect=dialect)
        assert not compiled.literal_execute_params and not compiled.post_compile_params  # plain $n only
        return cls(compiled.string, tuple(compiled.positiontup), compiled.params)

    def parameters(self, payment_id: str) -> list[Any]:
        return [payment_id if name == _FACT_PAYMENT.key else self.constants[name] for name in self.names]


_facts_statements: dict[tuple[tuple[str, PaymentCondition], ...], _FactsStatement] = {}


def _facts_statement(asked: tuple[tuple[str, PaymentCondition], ...], dialect: Any) -> _FactsStatement:
    """The facts' SELECT, its columns named `fact_0`, `fact_1`, ... in `asked`'s order (so a statement
    may carry it among columns of its own, `claim_payment_for_call`); with none asked, one `true`."""
    statement = _facts_statements.get(asked)
    if statement is None:  # built once: the domains register their conditions at import
        columns = [condition(_FACT_PAYMENT).label(f"fact_{at}") for at, (_, condition) in enumerate(asked)]
        statement = _facts_statements[asked] = _FactsStatement.of(
            select(*columns) if columns else select(true()), dialect
        )
    return statement


async def get_payment_by_authentication_token(session: AsyncSession, token_hash: str) -> PaymentIntent | None:
    """Across tenants: the bank-authentication link itself names the payment."""
    return await session.scalar(
        select(PaymentIntent).where(PaymentIntent.authentication_token_hash == token_hash).with_for_update()
    )


async def list_payments(
    session: AsyncSession, tenant: Tenant, *, limit: int, after: Position | None, customer: str | None
) -> Sequence[PaymentIntent]:
    statement = select(PaymentIntent).where(_payment_of(tenant))
    if customer is not None:
        statement = statement.where(PaymentIntent.customer_id == customer)
    return (
        await session.scalars(newest_first_page(statement, PaymentIntent, limit=limit, after=after))
    ).all()


async def payments_awaiting_cost(
    session: AsyncSession, tenant: Tenant | None, captured_before: datetime | None, limit: int
) -> Sequence[PaymentIntent]:
    """Captured payments whose fees are still pending, oldest capture first, locked for this sweep.

    SKIP LOCKED: two sweeps (the scheduler's and a sandbox clock advance) split the work, never wait.
    """
    statement = select(PaymentIntent).where(
        PaymentIntent.fee_status == "pending", PaymentIntent.captured_at.is_not(None)
    )
    if tenant is not None:
        statement = statement.where(_payment_of(tenant))
    if captured_before is not None:
        statement = statement.where(PaymentIntent.captured_at <= captured_before)
    statement = statement.order_by(PaymentIntent.captured_at).limit(limit).with_for_update(skip_locked=True)
    return (await session.scalars(statement)).all()


async def tenants_awaiting_cost(session: AsyncSession) -> list[Tenant]:
    """Every tenant with a captured payment whose fees are still pending (the partial index answers)."""
    rows = await session.execute(
        select(PaymentIntent.installation_id, PaymentIntent.livemode)
        .where(PaymentIntent.fee_status == "pending", PaymentIntent.captured_at.is_not(None))
        .distinct()
    )
    return [Tenant(installation_id, livemode) for installation_id, livemode in rows]


async def get_refund(
    session: AsyncSession, tenant: Tenant, refund_id: str, *, for_update: bool = False
) -> Refund | None:
    statement = select(Refund).where(_refund_of(tenant), Refund.id == refund_id)
    if for_update:
        statement = statement.with_for_update()
    return await session.scalar(statement)


async def get_refund_by_operation(session: AsyncSession, operation_id: str) -> Refund | None:
    return await session.scalar(select(Refund).where(Refund.operation_id == operation_id).with_for_update())


async def pending_refunds(
    session: AsyncSession, payment_id: str, *, before: Refund | None = None
) -> Sequence[Refund]:
    """The payment's pending refunds; those accepted before `before`, when given."""
    statement = select(Refund).where(Refund.payment_intent_id == payment_id, Refund.status == "pending")
    if before is not None:
        statement = statement.where(
            tuple_(Refund.created_at, Refund.id) < tuple_(before.created_at, before.id)
        )
    return (await session.scalars(statement)).all()


async def refunds_in_flight_or_done(session: AsyncSession, payment_id: str) -> int:
    """What is already promised back to the payer: pending and succeeded refunds."""
    total = await session.scalar(
        select(func.coalesce(func.sum(Refund.amount), 0)).where(
            Refund.payment_intent_id == payment_id, Refund.status.in_(("pending", "succeeded"))
        )
    )
    return int(total or 0)


async def list_refunds(
    session: AsyncSession, tenant: Tenant, *, limit: int, after: Position | None, payment_intent: str | None
) -> Sequence[Refund]:
    statement = select(Refund).where(_refund_of(tenant))
    if payment_intent is not None:
        statement = statement.where(Refund.payment_intent_id == payment_intent)
    return (await session.scalars(newest_first_page(statement, Refund, limit=limit, after=after))).all()


# --- orphan charges (orphans.py) ---------------------------------------------------------------------------
ORPHAN_SWEEP = "processor_orphans"


async def database_now(session: AsyncSession) -> datetime:
    """The database's clock: the one the processor's books are stamped with."""
    now = await session.scalar(select(func.now()))
    assert isinstance(now, datetime)
    return now


async def authorizations_of_payments_across_tenants(
    session: AsyncSession, payment_ids: Sequence[str]
) -> dict[tuple[str, str, bool], str | None]:
    """(payment id, installation, livemode) -> the processor authorization each payment recorded."""
    if not payment_ids:
        return {}
    rows = await session.execute(
        select(
            PaymentIntent.id,
            PaymentIntent.installation_id,
            PaymentIntent.livemode,
            PaymentIntent.processor_authorization,
        ).where(PaymentIntent.id.in_(set(payment_ids)))
    )
    return {(row[0], row[1], row[2]): row[3] for row in rows}


async def lock_payment_as_committed(
    session: AsyncSession, tenant: Tenant, payment_id: str
) -> PaymentIntent | None:
    """The payment locked, its columns as last committed even if this session has read it before."""
    return await session.scalar(
        select(PaymentIntent)
        .where(_payment_of(tenant), PaymentIntent.id == payment_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )


async def locked_orphan_watermark(session: AsyncSession, default: datetime) -> datetime:
    """How far the sweep has looked, locked so that two sweeps take turns."""
    await session.execute(
        insert(ProcessorOrphanSweep)
        .values(name=ORPHAN_SWEEP, checked_through=default)
        .on_conflict_do_nothing(index_elements=["name"])
    )
    checked_through = await session.scalar(
        select(ProcessorOrphanSweep.checked_through)
        .where(ProcessorOrphanSweep.name == ORPHAN_SWEEP)
        .with_for_update()
    )
    assert checked_through is not None  # inserted just before if it was missing
    return checked_through


async def set_orphan_watermark(session: AsyncSession, checked_through: datetime) -> None:
    await session.execute(
        update(ProcessorOrphanSweep)
        .where(ProcessorOrphanSweep.name == ORPHAN_SWEEP)
        .values(checked_through=checked_through)
    )


async def record_orphan(session: AsyncSession, tenant: Tenant, orphan: dict[str, Any]) -> bool:
    """Once per authorization (False when recorded before: a sweep releasing it again after a failure)."""
    inserted = await session.scalar(
        insert(ProcessorOrphan)
        .values(installation_id=tenant.installation_id, livemode=tenant.livemode, **orphan)
        .on_conflict_do_nothing(index_elements=["authorization_id"])
        .returning(ProcessorOrphan.authorization_id)
    )
    return inserted is not None


async def lock_payments(
    session: AsyncSession, tenant: Tenant, payment_ids: Sequence[str]
) -> dict[str, PaymentIntent]:
    statement = (
        select(PaymentIntent)
        .where(_payment_of(tenant), PaymentIntent.id.in_(set(payment_ids)))
        .order_by(PaymentIntent.id)
        .with_for_update()
    )
    return {payment.id: payment for payment in (await session.scalars(statement)).all()}
