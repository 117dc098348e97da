"""The hosted pages' shared pieces: templates, a strict Content-Security-Policy, amounts for people."""

from __future__ import annotations

import secrets
from decimal import Decimal
from pathlib import Path
from typing import Any

from babel.numbers import format_currency
from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from moneyrail.kit.money import minor_unit_exponent

TEMPLATES = Jinja2Templates(directory=str(Path(__file__).parent / "templates"))


def format_amount(amount: int, currency: str, locale: str = "en_US") -> str:
    """Minor units as a person reads them, decided on the server: 1234 eur -> €12.34."""
    major = Decimal(amount).scaleb(-minor_unit_exponent(currency))
    return str(format_currency(major, currency.upper(), locale=locale))


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
