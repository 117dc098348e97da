"""Single-use hosted links (CONVENTIONS.md §13): the first open spends the link.

That first open starts a short session of the page's own: a fresh secret that the browser keeps (the
hosted page sets it as a cookie scoped to its own path, web/page_sessions.py) and whose SHA-256 the
link keeps. A reload or the form's post in that browser presents the secret and goes on; any other
open of the link (another browser, a forwarded e-mail, a second tab without the cookie) is refused
and changes nothing. Times are on the tenant's clock, as the link's `expires_at` is.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal, Protocol

from moneyrail.kit.ids import random_base62

# Long enough to fill in a form, short enough that a forgotten tab is not a standing credential.
PAGE_SESSION_LIFETIME = timedelta(minutes=30)
PAGE_SESSION_SECRET_LENGTH = 43  # 256 bits


class SingleUseLink(Protocol):
    expires_at: datetime
    opened_at: datetime | None
    page_session_hash: str | None


@dataclass(frozen=True)
class Entry:
    """Whether this request may use the link; on the first open, the page session's new secret."""

    refused: Literal["opened", "expired"] | None = None
    new_session: str | None = None


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def enter(link: SingleUseLink, now: datetime, presented_session: str | None) -> Entry:
    """The first open (before `expires_at`) spends the link and starts its page session; later
    requests go on only with that session's secret, for PAGE_SESSION_LIFETIME after the open.
    The caller holds the link's row lock, so two first opens at once are one first open."""
    if link.opened_at is None:
        if now >= link.expires_at:
            return Entry("expired")
        secret = random_base62(PAGE_SESSION_SECRET_LENGTH)
        link.opened_at = now
        link.page_session_hash = _digest(secret)
        return Entry(new_session=secret)
    known = link.page_session_hash or ""
    if presented_session is None or not hmac.compare_digest(_digest(presented_session), known):
        return Entry("opened")
    if now >= link.opened_at + PAGE_SESSION_LIFETIME:
        return Entry("expired")
    return Entry()
