from __future__ import annotations

from datetime import UTC, datetime

import pytest

from moneyrail.kit.ids import looks_like_id, new_id
from moneyrail.kit.pagination import CursorInvalid, Position, decode_cursor, encode_cursor
from moneyrail.kit.scopes import grants, is_known_scope


def test_ids_are_prefix_and_24_base62_characters_and_unique():
    ids = {new_id("cus") for _ in range(1000)}
    assert len(ids) == 1000
    for value in ids:
        prefix, _, rest = value.partition("_")
        assert prefix == "cus" and len(rest) == 24 and rest.isalnum()
        assert looks_like_id(value, "cus") and not looks_like_id(value, "pi")


def test_a_cursor_round_trips_and_garbage_is_refused():
    position = Position(datetime(2026, 11, 22, 8, 0, 0, 123456, tzinfo=UTC), "cus_abc")
    assert decode_cursor(encode_cursor(position)) == position
    for garbage in ("", "!!!", "e30", "eyJ0IjoxfQ"):
        with pytest.raises(CursorInvalid):
            decode_cursor(garbage)


def test_scope_grants():
    assert grants({"customers:write"}, "customers:read")
    assert not grants({"customers:read"}, "customers:write")
    assert not grants({"payments:write"}, "customers:read")
    assert grants({"*"}, "transfers:write")
    assert (
        is_known_scope("billing:read")
        and not is_known_scope("billing:admin")
        and not is_known_scope("cats:read")
    )
