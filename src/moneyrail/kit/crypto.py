"""Secrets at rest: what moneyrail must read back (webhook signing secrets, stored idempotent answers that
carry a client secret or a checkout URL) is sealed with `cryptography`'s MultiFernet (AES-128-CBC with
HMAC-SHA256, authenticated), under keys from `MONEYRAIL_SECRET_KEYS`.

The setting holds one or more Fernet keys, comma-separated: the first seals, every one opens. To rotate,
put a new key first, restart, run `moneyrail secrets rotate` (it re-seals every value with the first
key), then drop the old key. A sealed value carries the prefix `fernet:`; a value without it was written
before encryption existed and is read as it is until `rotate` seals it.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from moneyrail.config import get_settings

SEALED_PREFIX = b"fernet:"


class SecretKeysMissing(RuntimeError):
    """The process needs MONEYRAIL_SECRET_KEYS and it is not set (or not valid)."""


def hash_secret(secret: str) -> str:
    """How a secret moneyrail never reads back is kept (API keys, client secrets, page tokens, codes): API
    secrets are 190 random bits, so a fast hash is enough to make a stolen table useless."""
    return hashlib.sha256(secret.encode()).hexdigest()


def generate_key() -> str:
    return Fernet.generate_key().decode()


@lru_cache(maxsize=4)
def _box(raw_keys: str) -> MultiFernet:
    keys = [key.strip() for key in raw_keys.split(",") if key.strip()]
    if not keys:
        raise SecretKeysMissing("MONEYRAIL_SECRET_KEYS holds no key")
    try:
        return MultiFernet([Fernet(key) for key in keys])
    except ValueError as error:
        raise SecretKeysMissing(
            "MONEYRAIL_SECRET_KEYS must be Fernet keys (32 url-safe base64 bytes), comma-separated; "
            "make one with `moneyrail secrets generate-key`"
        ) from error


def secret_box(raw_keys: str | None = None) -> MultiFernet:
    """The configured keys; raises SecretKeysMissing with what to do when there are none."""
    raw = raw_keys if raw_keys is not None else get_settings().secret_keys
    if not raw:
        raise SecretKeysMissing(
            "MONEYRAIL_SECRET_KEYS is not set: secrets are encrypted at rest. "
            "Make a key with `moneyrail secrets generate-key` and set it in the environment."
        )
    return _box(raw)


def require_secret_keys(raw_keys: str | None) -> None:
    """Fail at start-up, not at the first webhook: called by the processes that seal or open."""
    secret_box(raw_keys or "")


def is_sealed(value: bytes) -> bool:
    return value.startswith(SEALED_PREFIX)


def seal(plaintext: bytes, box: MultiFernet | None = None) -> bytes:
    return SEALED_PREFIX + (box or secret_box()).encrypt(plaintext)


def open_sealed(value: bytes, box: MultiFernet | None = None) -> bytes:
    """The plaintext of a sealed value; a value from before encryption comes back as it is."""
    if not is_sealed(value):
        return value
    try:
        return (box or secret_box()).decrypt(value[len(SEALED_PREFIX) :])
    except InvalidToken as error:
        raise SecretKeysMissing(
            "a stored secret was sealed with a key that MONEYRAIL_SECRET_KEYS no longer holds"
        ) from error


def reseal(value: bytes, box: MultiFernet | None = None) -> bytes:
    """Sealed again under the first key (MultiFernet.rotate); a plaintext value is sealed."""
    box = box or secret_box()
    if not is_sealed(value):
        return seal(value, box)
    try:
        return SEALED_PREFIX + box.rotate(value[len(SEALED_PREFIX) :])
    except InvalidToken as error:
        raise SecretKeysMissing(
            "a stored secret was sealed with a key that MONEYRAIL_SECRET_KEYS does not hold"
        ) from error


def seal_text(plaintext: str, box: MultiFernet | None = None) -> str:
    return seal(plaintext.encode(), box).decode()


def open_text(value: str, box: MultiFernet | None = None) -> str:
    return open_sealed(value.encode(), box).decode()


def reseal_text(value: str, box: MultiFernet | None = None) -> str:
    return reseal(value.encode(), box).decode()
