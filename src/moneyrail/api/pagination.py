"""List parameters and the list envelope (CONVENTIONS.md §5)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Generic, Literal, Protocol, TypeVar

from fastapi import Query
from pydantic import BaseModel, Field

from moneyrail.errors import ParameterInvalid
from moneyrail.kit.pagination import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    CursorInvalid,
    Position,
    decode_cursor,
    encode_cursor,
)

Item = TypeVar("Item", bound=BaseModel)


class ListEnvelope(BaseModel, Generic[Item]):
    object: Literal["list"] = Field(default="list", description="Always `list`")
    data: list[Item] = Field(description="This page of objects, newest first")
    has_more: bool = Field(description="Whether another page follows")
    next_cursor: str | None = Field(description="Pass it as `cursor` for the next page; null on the last")


@dataclass(frozen=True)
class PageRequest:
    limit: int
    after: Position | None


def page_request(
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT, description="1 to 100")] = DEFAULT_LIMIT,
    cursor: Annotated[str | None, Query(description="next_cursor of the previous page")] = None,
) -> PageRequest:
    if cursor is None:
        return PageRequest(limit=limit, after=None)
    try:
        return PageRequest(limit=limit, after=decode_cursor(cursor))
    except CursorInvalid as exc:
        raise ParameterInvalid("The cursor is not one this API returned.", param="cursor") from exc


class Listed(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def created_at(self) -> datetime: ...


Row = TypeVar("Row", bound=Listed)


def list_envelope(
    rows: Sequence[Row], page: PageRequest, render: Callable[[Row], Item]
) -> ListEnvelope[Item]:
    """`rows` was fetched with limit + 1, so one extra row means there is a next page."""
    has_more = len(rows) > page.limit
    shown = rows[: page.limit]
    next_cursor = encode_cursor(Position(shown[-1].created_at, shown[-1].id)) if has_more and shown else None
    return ListEnvelope[Any](data=[render(row) for row in shown], has_more=has_more, next_cursor=next_cursor)
