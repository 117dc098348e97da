"""Queries over value lists, their items and reviews, always within one tenant."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, and_, exists, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.db.pagination import newest_first_page
from moneyrail.kit.pagination import Position
from moneyrail.kit.tenant import Tenant
from moneyrail.models import Review, ValueList, ValueListItem


def _of(model: Any, tenant: Tenant) -> Any:
    return and_(model.installation_id == tenant.installation_id, model.livemode == tenant.livemode)


async def get_value_list(session: AsyncSession, tenant: Tenant, value_list_id: str) -> ValueList | None:
    return await session.scalar(
        select(ValueList).where(_of(ValueList, tenant), ValueList.id == value_list_id)
    )


async def value_list_by_alias(session: AsyncSession, tenant: Tenant, alias: str) -> ValueList | None:
    return await session.scalar(select(ValueList).where(_of(ValueList, tenant), ValueList.alias == alias))


async def insert_value_list(session: AsyncSession, value_list: ValueList) -> bool:
    """False when the alias is taken (a concurrent creator's row wins, no error)."""
    inserted = await session.scalar(
        insert(ValueList)
        .values(
            id=value_list.id,
            installation_id=value_list.installation_id,
            livemode=value_list.livemode,
            alias=value_list.alias,
            name=value_list.name,
            item_type=value_list.item_type,
            action=value_list.action,
            metadata=value_list.metadata_,
            created_at=value_list.created_at,
        )
        .on_conflict_do_nothing()
        .returning(ValueList.id)
    )
    return inserted is not None


async def list_value_lists(
    session: AsyncSession, tenant: Tenant, *, limit: int, after: Position | None
) -> Sequence[ValueList]:
    statement = select(ValueList).where(_of(ValueList, tenant))
    return (await session.scalars(newest_first_page(statement, ValueList, limit=limit, after=after))).all()


async def insert_item(session: AsyncSession, item: ValueListItem) -> bool:
    inserted = await session.scalar(
        insert(ValueListItem)
        .values(
            id=item.id,
            installation_id=item.installation_id,
            livemode=item.livemode,
            value_list_id=item.value_list_id,
            value=item.value,
            created_at=item.created_at,
        )
        .on_conflict_do_nothing()
        .returning(ValueListItem.id)
    )
    return inserted is not None


async def get_item(session: AsyncSession, item_id: str) -> ValueListItem | None:
    return await session.get(ValueListItem, item_id)


async def list_items(
    session: AsyncSession, value_list_id: str, *, limit: int, after: Position | None
) -> Sequence[ValueListItem]:
    statement = select(ValueListItem).where(ValueListItem.value_list_id == value_list_id)
    return (
        await session.scalars(newest_first_page(statement, ValueListItem, limit=limit, after=after))
    ).all()


@dataclass(frozen=True, slots=True)
class ListRule:
    """What screening needs of a value list: which values it matches and what a match does."""

    id: str
    item_type: str
    action: str


async def listed_values(
    session: AsyncSession, tenant: Tenant, *, limit: int
) -> list[tuple[ListRule, frozenset[str]]] | None:
    """The tenant's lists that hold items, in creation order, each with its values; None when the lists
    hold more than `limit` items in all (too many to keep in memory: ask `matching_lists` instead)."""
    rows = (
        await session.execute(
            select(ValueList.id, ValueList.item_type, ValueList.action, ValueListItem.value)
            .join(ValueListItem, ValueListItem.value_list_id == ValueList.id)
            .where(_of(ValueList, tenant))
            .order_by(ValueList.created_at, ValueList.id)
            .limit(limit + 1)
        )
    ).all()
    if len(rows) > limit:
        return None
    lists: dict[str, tuple[ListRule, set[str]]] = {}
    for list_id, item_type, action, value in rows:
        lists.setdefault(list_id, (ListRule(list_id, item_type, action), set()))[1].add(value)
    return [(rule, frozenset(values)) for rule, values in lists.values()]


async def matching_lists(session: AsyncSession, tenant: Tenant, values: dict[str, str]) -> list[ListRule]:
    """The tenant's lists that hold one of these (item_type -> value) pairs, in creation order."""
    if not values:
        return []
    rows = await session.execute(
        select(ValueList.id, ValueList.item_type, ValueList.action, ValueListItem.value)
        .join(ValueListItem, ValueListItem.value_list_id == ValueList.id)
        .where(
            _of(ValueList, tenant),
            ValueListItem.value.in_(list(set(values.values()))),
        )
        .order_by(ValueList.created_at, ValueList.id)
    )
    return [
        ListRule(list_id, item_type, action)
        for list_id, item_type, action, value in rows
        if values.get(item_type) == value
    ]


def holds_payment(payment_intent_id: ColumnElement[str]) -> ColumnElement[bool]:
    """An open review holds the payment (a condition asked with the payment's other facts)."""
    return exists().where(Review.payment_intent_id == payment_intent_id, Review.status == "open")


async def review_of_payment(session: AsyncSession, payment_id: str) -> Review | None:
    return await session.scalar(select(Review).where(Review.payment_intent_id == payment_id))


async def open_reviews_among(session: AsyncSession, payment_ids: Sequence[str]) -> set[str]:
    """Which of these payments have an open review."""
    if not payment_ids:
        return set()
    statement = select(Review.payment_intent_id).where(
        Review.payment_intent_id.in_(payment_ids), Review.status == "open"
    )
    return set((await session.scalars(statement)).all())


async def get_review(
    session: AsyncSession, tenant: Tenant, review_id: str, *, for_update: bool = False
) -> Review | None:
    statement = select(Review).where(_of(Review, tenant), Review.id == review_id)
    if for_update:
        statement = statement.with_for_update()
    return await session.scalar(statement)


async def list_reviews(
    session: AsyncSession, tenant: Tenant, *, limit: int, after: Position | None, open_only: bool | None
) -> Sequence[Review]:
    statement = select(Review).where(_of(Review, tenant))
    if open_only is not None:
        statement = statement.where((Review.status == "open") if open_only else (Review.status != "open"))
    return (await session.scalars(newest_first_page(statement, Review, limit=limit, after=after))).all()
