"""The hosted pages' shared pieces: templates, a strict Content-Security-Policy, public addresses."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
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


@dataclass(frozen=True)
class ProcessorScript:
    """A page that runs the processor's own script (Stripe.js), so that card data goes from the payer's
    browser to the processor and never here: where that script loads from (`script`; its card fields are
    frames of that origin on real Stripe.js) and where it posts the card (`connect`: the processor's API,
    which localstripe's fake Stripe.js reaches from the page itself)."""

    script: str
    connect: str


def render_page(
    request: Request,
    template: str,
    context: dict[str, Any],
    *,
    status_code: int = 200,
    form_targets: str = "",
    processor_script: ProcessorScript | None = None,
) -> HTMLResponse:
    """A page with no third-party anything: styles carry a per-response nonce, nothing else may load.

    `form_targets` adds origins a form may post or be redirected to (a caller's return URL).
    `processor_script`: the page runs scripts - its own, carrying the nonce, and the processor's from the
    origins named; nothing else is allowed for it (no inline script, no other origin).
    """
    nonce = secrets.token_urlsafe(16)
    response = TEMPLATES.TemplateResponse(
        request, template, {**context, "nonce": nonce}, status_code=status_code
    )
    scripts = ""
    if processor_script is not None:
        scripts = (
            f"script-src 'nonce-{nonce}' {processor_script.script}; "
            f"connect-src {processor_script.connect}; frame-src {processor_script.script}; "
        )
    response.headers["Content-Security-Policy"] = (
        f"default-src 'none'; {scripts}style-src 'nonce-{nonce}'; img-src 'self' data:; "
        f"form-action 'self' {form_targets}".rstrip()
        + "; frame-ancestors 'none'; base-uri 'none'"
    )
    response.headers["Referrer-Policy"] = "no-referrer"  # the address holds a credential
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Cache-Control"] = "no-store"
    return response
