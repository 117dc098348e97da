"""Newest-first keyset pages over any table with `created_at` and `id` (CONVENTIONS.md §5)."""

from __future__ import annotations

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
