"""Opaque ids: a prefix, `_`, then 24 random base62 characters (CONVENTIONS.md §5)."""

from __future__ import annotations

import re
import secrets
import string

BASE62 = string.digits + string.ascii_letters
ID_RANDOM_LENGTH = 24
_ID_PATTERN = re.compile(r"^[a-z]+(?:_(?:test|live))?_[0-9A-Za-z]{24}$")


# A random byte below 248 (4 x 62) maps uniformly onto a base62 digit; bytes 248-255 are drawn again.
_UNIFORM_LIMIT = 4 * len(BASE62)
_DIGIT_OF_BYTE = bytes(ord(BASE62[byte % len(BASE62)]) if byte < _UNIFORM_LIMIT else 0 for byte in range(256))
_OUT_OF_RANGE = bytes(range(_UNIFORM_LIMIT, 256))


def random_base62(length: int) -> str:
    # one draw from the OS for the whole id, mapped in C: a per-character choice would cost a syscall
    # each, a big-number division per character most of the id's CPU
    digits = b""
    while len(digits) < length:
        drawn = secrets.token_bytes(length + 8)  # 8 spare: 3% of bytes are out of range
        digits += drawn.translate(_DIGIT_OF_BYTE, _OUT_OF_RANGE)
    return digits[:length].decode("ascii")


def new_id(prefix: str) -> str:
    return f"{prefix}_{random_base62(ID_RANDOM_LENGTH)}"


def looks_like_id(value: str, prefix: str) -> bool:
    """True when `value` has the shape of an id with this prefix (it may still not exist)."""
    return value.startswith(prefix + "_") and bool(_ID_PATTERN.match(value))
