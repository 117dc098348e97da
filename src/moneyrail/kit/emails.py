"""E-mail addresses in request bodies: pydantic's `EmailStr` verdicts, the domain half remembered.

`EmailStr` runs `email_validator` on every address, and most of its work checks the domain (IDNA
remapping, character classes, special-use names), while customers share a few domains. For a plain
ASCII address (a dot-atom local part, an `@`, a domain of letters, digits, dots and hyphens) the
library's verdict is the local part's (a dot-atom: valid as it is) joined to the domain's, plus three
length checks, and the domain's verdict and normalized form depend on the domain alone. So once the
library has accepted a domain whose normalized form is ASCII without Punycode (then its ASCII and
display forms are the same string), a later plain address at that domain gets the same answer without
it. Everything else (a display name, quotes, non-ASCII, a new or refused domain, an RFC 2142 mailbox
name the library lowercases, anything near the length limits) goes through `EmailStr`'s own function,
with its message. `tests/kit/test_emails.py` compares the two with hypothesis.
"""

from __future__ import annotations

import re
from typing import Annotated

from email_validator.rfc_constants import CASE_INSENSITIVE_MAILBOX_NAMES, EMAIL_MAX_LENGTH
from pydantic import AfterValidator, WithJsonSchema
from pydantic.networks import validate_email

# email_validator's ATEXT, unquoted, and its dot-atom shape (rfc_constants.DOT_ATOM_TEXT)
_ATEXT = r"a-zA-Z0-9_!#$%&'*+\-/=?^`{|}~"
_PLAIN_ADDRESS = re.compile(rf"([{_ATEXT}]+(?:\.[{_ATEXT}]+)*)@([a-zA-Z0-9.\-]+)\Z")
_MAILBOX_NAMES_LOWERCASED = frozenset(CASE_INSENSITIVE_MAILBOX_NAMES)
_ASCII_DOMAIN = re.compile(r"[a-z0-9.\-]+\Z")

# Bounded: a caller cycling through random domains only ever evicts the oldest.
MAX_REMEMBERED_DOMAINS = 4096
_normalized_domains: dict[str, str] = {}


def normalized_email(address: str) -> str:
    """`EmailStr`'s answer for `address`: its normalized form, or the same PydanticCustomError."""
    plain = _PLAIN_ADDRESS.match(address)
    if plain is None:
        return validate_email(address)[1]
    local, domain = plain.groups()
    known = _normalized_domains.get(domain)
    if (
        known is not None
        and len(address) <= EMAIL_MAX_LENGTH  # the address as given
        and len(local) + 1 + len(known) <= EMAIL_MAX_LENGTH  # normalized (ASCII: characters = bytes)
        and local.lower() not in _MAILBOX_NAMES_LOWERCASED
    ):
        return f"{local}@{known}"
    normalized = validate_email(address)[1]  # raises the library's refusal
    normalized_domain = normalized.rpartition("@")[2]
    if "xn--" not in normalized_domain and _ASCII_DOMAIN.match(normalized_domain):
        if len(_normalized_domains) >= MAX_REMEMBERED_DOMAINS:
            del _normalized_domains[next(iter(_normalized_domains))]
        _normalized_domains[domain] = normalized_domain
    return normalized


def forget_domains() -> None:
    """For tests: the next address at any domain goes through the library again."""
    _normalized_domains.clear()


# A drop-in for `EmailStr` in request bodies: the same core type (a str), verdicts and JSON schema.
Email = Annotated[
    str, AfterValidator(normalized_email), WithJsonSchema({"type": "string", "format": "email"})
]
