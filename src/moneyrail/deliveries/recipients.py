"""Recipients of receipts: their plausible shapes, and how the API shows them (masked)."""

from __future__ import annotations

import re

# Deliberately loose: the mail server is the judge of an address; this only keeps out what could never
# be one (no @, whitespace or control characters, which would also break a mail header).
_EMAIL = re.compile(r"^[^@\s\x00-\x1f\x7f]+@[^@\s\x00-\x1f\x7f]+\.[^@\s\x00-\x1f\x7f]+$")
_PHONE = re.compile(r"^\+[1-9][0-9]{6,14}$")  # E.164


def is_valid_email(address: str) -> bool:
    return len(address) <= 254 and bool(_EMAIL.match(address))


def is_valid_phone(number: str) -> bool:
    return bool(_PHONE.match(number))


def mask_email(address: str) -> str:
    """`jane@example.com` -> `j***@example.com`."""
    local, at, domain = address.rpartition("@")
    if not at or not local:
        return "***"
    return f"{local[0]}***@{domain}"


def mask_phone(number: str) -> str:
    """`+33612341234` -> `+*******1234`: every digit but the last four hidden."""
    digits = [character for character in number if character.isdigit()]
    shown = 4 if len(digits) > 4 else 0
    prefix = "+" if number.startswith("+") else ""
    return prefix + "*" * (len(digits) - shown) + "".join(digits[len(digits) - shown :])


def mask(channel: str, recipient: str) -> str:
    return mask_email(recipient) if channel == "email" else mask_phone(recipient)


def redact(text: str, channel: str, recipient: str) -> str:
    """The text with the full recipient replaced by its masked form (servers echo addresses back)."""
    if not recipient:
        return text
    pattern = re.compile(re.escape(recipient), re.IGNORECASE)
    return pattern.sub(mask(channel, recipient), text)
