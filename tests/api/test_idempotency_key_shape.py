"""An Idempotency-Key is 1 to 255 printable ASCII characters (CONVENTIONS.md §4), character by character."""

from __future__ import annotations

import pytest

from moneyrail.api.idempotency import MAX_KEY_LENGTH, _is_valid_key


@pytest.mark.parametrize("code", range(256))  # a header value is latin-1: every character it can hold
def test_a_key_character_is_valid_exactly_when_printable_ascii(code: int) -> None:
    character = chr(code)
    assert _is_valid_key(f"k{character}k") is (0x20 <= code <= 0x7E)


def test_a_key_is_1_to_255_characters() -> None:
    assert not _is_valid_key("")
    assert _is_valid_key("x")
    assert _is_valid_key("x" * MAX_KEY_LENGTH)
    assert not _is_valid_key("x" * (MAX_KEY_LENGTH + 1))
