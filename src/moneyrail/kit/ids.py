"""Opaque ids: a prefix, `_`, then 24 random base62 characters (CONVENTIONS.md §5)."""

from __future__ import annotations

import re
import secrets
import string

BASE62 = string.digits + string.ascii_letters
ID_RANDOM_LENGTH = 24
_ID_PATTERN = re.compile(r"^[a-z]+(?:_(?:test|live))?_[0-9A-Za-z]{24}$")


def random_base62(length: int) -> str:
    # one draw from the OS for the whole id (a choice per character would cost a syscall each)
    number = secrets.randbits(6 * length + 64)  # 64 spare bits make every digit uniform
    characters = []
    for _ in range(length):
        number, digit = divmod(number, 62)
        characters.append(BASE62[digit])
    return "".join(characters)


def new_id(prefix: str) -> str:
    return f"{prefix}_{random_base62(ID_RANDOM_LENGTH)}"


def looks_like_id(value: str, prefix: str) -> bool:
    """True when `value` has the shape of an id with this prefix (it may still not exist)."""
    return value.startswith(prefix + "_") and bool(_ID_PATTERN.match(value))
