"""The browser's half of a single-use link's page session (kit/single_use.py): a cookie.

HttpOnly (no script reads it, and the pages run none), SameSite=Lax (a reload of a page that a platform
linked to from its own site still carries it; another site cannot post with it), Secure wherever the
service is served over https (a local http instance could not keep it otherwise), scoped to the page's
own path, and gone when the session ends.
"""

from __future__ import annotations

import hashlib

from fastapi import Request
from fastapi.responses import Response

from moneyrail.kit.single_use import PAGE_SESSION_LIFETIME
from moneyrail.web import public_base_url

COOKIE_PREFIX = "moneyrail_link_"


def cookie_name(token: str) -> str:
    """One cookie per link (consent pages share a path), named by a digest that tells nothing of the
    token: the link itself is the credential, and never leaves the address bar."""
    return COOKIE_PREFIX + hashlib.sha256(b"page-session:" + token.encode()).hexdigest()[:24]


def presented_session(request: Request, token: str) -> str | None:
    return request.cookies.get(cookie_name(token))


def keep_session(response: Response, request: Request, *, token: str, secret: str | None, path: str) -> None:
    """On the answer to a link's first open: the browser keeps the page session's secret."""
    if secret is None:
        return
    response.set_cookie(
        cookie_name(token),
        secret,
        max_age=int(PAGE_SESSION_LIFETIME.total_seconds()),
        path=path,
        secure=public_base_url(request).startswith("https://"),
        httponly=True,
        samesite="lax",
    )
