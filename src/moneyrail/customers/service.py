"""Customers: created or reused by the caller's external reference."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.db.raw import StatementClaim
from moneyrail.db.uow import UnitOfWork
from moneyrail.errors import ResourceMissing
from moneyrail.kit.ids import new_id
from moneyrail.kit.pagination import Position
from moneyrail.kit.tenant import Tenant

from . import repository
from .repository import CustomerRecord as CustomerRecord  # the record its callers get
from .repository import NewCustomer
from .schemas import CustomerCreate


async def create_or_reuse_customer(
    uow: UnitOfWork,
    tenant: Tenant,
    command: CustomerCreate,
    claim: StatementClaim | None = None,
    answer: Callable[[NewCustomer], bytes] | None = None,
) -> CustomerRecord:
    """A second create with the same external_reference returns the first customer unchanged.

    Safe under concurrent identical requests: the unique index decides, so one customer, never two.
    `claim`: the request's Idempotency-Key, claimed by the insert itself (its replay or refusal raised).
    `answer`: the request's answer for a new customer, with its `created` to come; given with a claim,
    the key's answer is stored by the insert's own statement (one round trip, nothing to commit after).
    Takes the unit of work, not its session (db/uow.py): the usual create, keyed or not, is one lone
    statement and makes no session; a reused reference or a key's record makes one to finish.
    Answers the new row's values (no ORM object: its statements are the driver's), or the customer
    that holds the reference already.
    """
    customer = NewCustomer(
        id=new_id("cus"),
        installation_id=tenant.installation_id,
        livemode=tenant.livemode,
        external_reference=command.external_reference,
        email=command.email,
        name=command.name,
        metadata_=command.metadata,
    )
    if claim is not None and answer is not None:
        answered = await repository.insert_answered(uow, customer, claim, answer(customer))
        if answered is not None:
            return answered
        # a reused reference or a record under the key: the transactional path, which claims again
    inserted = await repository.insert_unless_referenced(uow, customer, claim)
    if inserted is not None:
        return inserted
    assert command.external_reference is not None  # only a reference can conflict
    existing = await repository.get_by_reference(uow.session, tenant, command.external_reference)
    assert existing is not None  # the conflicting row committed before our insert gave up
    return existing


async def get_customer(session: AsyncSession, tenant: Tenant, customer_id: str) -> CustomerRecord:
    customer = await repository.get(session, tenant, customer_id)
    if customer is None:
        raise ResourceMissing(f"No such customer: {customer_id!r}", param="customer")
    return customer


async def emails_of(session: AsyncSession, tenant: Tenant, customer_ids: Sequence[str]) -> dict[str, str]:
    """The e-mail of each of these customers that has one."""
    return await repository.emails_of(session, tenant, customer_ids)


async def list_customers(
    session: AsyncSession, tenant: Tenant, *, limit: int, after: Position | None
) -> list[CustomerRecord]:
    return await repository.list_page(session, tenant, limit=limit, after=after)
