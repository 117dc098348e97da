"""Opaque keyset cursors for newest-first lists (CONVENTIONS.md §5)."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from datetime import datetime

import orjson

DEFAULT_LIMIT = 10
MAX_LIMIT = 100


class CursorInvalid(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class Position:
    """Where the previous page ended: the last row's creation time and id."""

    created_at: datetime
    id: str


def encode_cursor(position: Position) -> str:
    raw = orjson.dumps({"t": position.created_at.isoformat(), "id": position.id})
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> Position:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        data = orjson.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
        created_at = datetime.fromisoformat(data["t"])
        row_id = data["id"]
    except (binascii.Error, ValueError, KeyError, TypeError, UnicodeEncodeError) as exc:
        raise CursorInvalid(cursor) from exc
    if not isinstance(row_id, str) or created_at.tzinfo is None:
        raise CursorInvalid(cursor)
    return Position(created_at=created_at, id=row_id)
