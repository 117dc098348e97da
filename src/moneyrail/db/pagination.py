"""Newest-first keyset pages over any table with `created_at` and `id` (CONVENTIONS.md §5)."""

from __future__ import annotations

from functools import cache
from typing import Any, TypeVar

from sqlalchemy import Select, and_, or_

from moneyrail.kit.pagination import Position

Row = TypeVar("Row")


def newest_first_page(
    statement: Select[Row], model: Any, *, limit: int, after: Position | None
) -> Select[Row]:
    """Rows after `after` in (created_at, id) descending order, one more than `limit` to tell has_more."""
    if after is not None:
        statement = statement.where(
            or_(
                model.created_at < after.created_at,
                and_(model.created_at == after.created_at, model.id < after.id),
            )
        )
    return statement.order_by(model.created_at.desc(), model.id.desc()).limit(limit + 1)


@cache
def _newest_first_tail(first_parameter: int) -> str:
    after_at, after_id, limit = first_parameter, first_parameter + 1, first_parameter + 2
    return (
        f"AND (${after_at}::timestamptz IS NULL OR (created_at, id) < (${after_at}, ${after_id}::text)) "
        f"ORDER BY created_at DESC, id DESC LIMIT ${limit}"
    )


def newest_first_sql(
    first_parameter: int, *, limit: int, after: Position | None
) -> tuple[str, tuple[Any, ...]]:
    """`newest_first_page` for a driver statement: the tail to put after its WHERE conditions and that
    tail's parameters, numbered from `first_parameter`. One text whether or not `after` is given (one
    prepared statement); the row comparison walks an index on (..., created_at, id)."""
    return _newest_first_tail(first_parameter), (
        after.created_at if after is not None else None,
        after.id if after is not None else None,
        limit + 1,
    )
