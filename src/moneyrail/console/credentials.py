"""An operator's credentials: argon2id password hashes, TOTP codes, and the secrets behind cookies.

Passwords are hashed with argon2id (`argon2-cffi`'s defaults, RFC 9106's low-memory profile). A TOTP
code (RFC 6238, `pyotp`: 6 digits, 30-second steps) is accepted one step either side of now, for
clocks that drift, and only for a step later than the last one that signed in, so an overheard code
cannot be replayed. A cookie carries a random secret; the database keeps its SHA-256, and each form's
CSRF token is an HMAC of that secret, so the token is tied to the session that rendered the form.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from datetime import datetime
from functools import cache

import pyotp
import segno
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from moneyrail.kit.ids import random_base62

PASSWORD_MIN_LENGTH = 12
PASSWORD_MAX_LENGTH = 1024  # argon2 takes any length; a bound keeps a request from hashing megabytes
SECRET_LENGTH = 43  # 256 bits of base62
TOTP_ISSUER = "moneyrail"
TOTP_DRIFT_STEPS = 1

_hasher = PasswordHasher()


@cache
def _stand_in_hash() -> str:
    """Checked against when there is no account to check: an unknown e-mail takes as long as a known one."""
    return _hasher.hash(random_base62(SECRET_LENGTH))


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def password_matches(stored_hash: str | None, password: str) -> bool:
    try:
        return _hasher.verify(stored_hash or _stand_in_hash(), password) and stored_hash is not None
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


def needs_rehash(stored_hash: str) -> bool:
    """True once the hasher's parameters are stronger than the hash's: rehash at the next sign-in."""
    return _hasher.check_needs_rehash(stored_hash)


def password_problem(password: str, confirmation: str) -> str | None:
    if len(password) < PASSWORD_MIN_LENGTH:
        return f"Choose a password of at least {PASSWORD_MIN_LENGTH} characters."
    if len(password) > PASSWORD_MAX_LENGTH:
        return f"Choose a password of at most {PASSWORD_MAX_LENGTH} characters."
    if password != confirmation:
        return "The two passwords differ."
    return None


def new_totp_secret() -> str:
    return pyotp.random_base32()  # 160 bits, as RFC 4226 recommends


def provisioning_uri(totp_secret: str, email: str) -> str:
    """The `otpauth://` URI an authenticator app reads (from the QR code, or typed in)."""
    return pyotp.TOTP(totp_secret).provisioning_uri(name=email, issuer_name=TOTP_ISSUER)


def qr_code_svg(uri: str) -> str:
    """The URI as a QR code, an inline `<svg>` drawn here: the page loads nothing from elsewhere."""
    return str(segno.make(uri, error="m").svg_inline(scale=4, dark="#1a1d21", omitsize=False))


def readable_secret(totp_secret: str) -> str:
    """`JBSW Y3DP …`: the secret in groups of four, for typing into an app by hand."""
    return " ".join(totp_secret[i : i + 4] for i in range(0, len(totp_secret), 4))


def matching_step(totp_secret: str, code: str, now: datetime) -> int | None:
    """The time step whose code this is (now, or one step either side), else None."""
    code = code.strip().replace(" ", "")
    if not (code.isdigit() and len(code) == 6):
        return None
    totp = pyotp.TOTP(totp_secret)
    current = totp.timecode(now)
    for step in range(current - TOTP_DRIFT_STEPS, current + TOTP_DRIFT_STEPS + 1):
        if hmac.compare_digest(totp.generate_otp(step), code):
            return step
    return None


def new_secret() -> str:
    return random_base62(SECRET_LENGTH)


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def csrf_token(secret: str, purpose: str) -> str:
    """The synchronizer token of forms shown under this secret (a session's, a link's page session's)."""
    mac = hmac.new(secret.encode(), f"csrf:{purpose}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).decode().rstrip("=")


def csrf_matches(secret: str | None, purpose: str, presented: str | None) -> bool:
    if not secret or not presented:
        return False
    return hmac.compare_digest(csrf_token(secret, purpose), presented)
