"""The hosted pages' shared pieces: templates, a strict Content-Security-Policy, public addresses."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

TEMPLATES = Jinja2Templates(directory=str(Path(__file__).parent / "templates"))


def public_base_url(request: Request) -> str:
    """Where hosted links point: the configured public address, else the address the caller used."""
    configured: str | None = request.app.state.settings.public_base_url
    return (configured or str(request.base_url)).rstrip("/")


def origin_of(url: str | None) -> str:
    """`https://shop.example/paid?x=1` -> `https://shop.example` (empty for no URL)."""
    if not url:
        return ""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def render_page(
    request: Request,
    template: str,
    context: dict[str, Any],
    *,
    status_code: int = 200,
    form_targets: str = "",
) -> HTMLResponse:
    """A page with no third-party anything: styles carry a per-response nonce, nothing else may load.

    `form_targets` adds origins a form may post or be redirected to (a caller's return URL).
    """
    nonce = secrets.token_urlsafe(16)
    response = TEMPLATES.TemplateResponse(
        request, template, {**context, "nonce": nonce}, status_code=status_code
    )
    response.headers["Content-Security-Policy"] = (
        f"default-src 'none'; style-src 'nonce-{nonce}'; img-src 'self' data:; "
        f"form-action 'self' {form_targets}".rstrip()
        + "; frame-ancestors 'none'; base-uri 'none'"
    )
    response.headers["Referrer-Policy"] = "no-referrer"  # the address holds a credential
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Cache-Control"] = "no-store"
    return response
