"""`GET /`: the first address a newcomer opens answers with where to go next, instead of a 404.

A browser (a request that accepts `text/html`) gets a short page, anything else JSON: the interactive
reference (`/docs`), the machine-readable contract (`/openapi.json`), the account endpoint that the
quick start's curl line calls, and the guides, which live in the repository (`docs/guides/`), not on
this server. Public, like `/healthz`, and left out of /openapi.json: it is not part of the API.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from moneyrail import __version__
from moneyrail.web import public_base_url, render_page

router = APIRouter(include_in_schema=False)

# The repository's guides, in the order a reader takes them (tests/api/test_home.py keeps this in step
# with docs/guides/).
GUIDES = (
    ("Payments: from creation to refund", "docs/guides/payments.md"),
    ("Hosted checkout", "docs/guides/checkout.md"),
    ("Marketplace: merchants, connected accounts, distributions, payouts", "docs/guides/marketplace.md"),
    ("Billing: products, prices, subscriptions", "docs/guides/billing.md"),
    ("Disputes, risk and payment invoices", "docs/guides/disputes-risk-invoices.md"),
    ("Commerce API (and the fiscal API's base)", "docs/guides/commerce.md"),
    ("Operating moneyrail", "docs/guides/operating.md"),
)


def _wants_html(request: Request) -> bool:
    """Browsers name text/html in Accept; curl and HTTP libraries send */* or nothing."""
    return "text/html" in request.headers.get("accept", "")


def welcome(base_url: str) -> dict[str, Any]:
    return {
        "object": "welcome",
        "name": "moneyrail",
        "version": __version__,
        "docs": f"{base_url}/docs",
        "openapi": f"{base_url}/openapi.json",
        "account": f"{base_url}/v1/account",
        "quick_start": f'curl -s {base_url}/v1/account -H "Authorization: Bearer sk_test_…"',
        "guides": [{"title": title, "path": path} for title, path in GUIDES],
    }


@router.get("/")
async def home(request: Request) -> Response:
    answer = welcome(public_base_url(request))
    if _wants_html(request):
        return render_page(request, "home.html", answer)
    return JSONResponse(answer)
