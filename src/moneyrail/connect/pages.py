"""The hosted onboarding page (`/onboarding/{token}`), where a courier or driver gives what payouts need.

The link is the credential (5 minutes, single use): never logged (the request log carries the route
template only), never sent on as a referrer. Its first open spends it; the page goes on in that
browser's page session (a cookie scoped to the page's path, web/page_sessions.py), so a reload and the
form's post work there, and any other open answers 410. The page loads nothing from elsewhere and runs
no script, under the same Content-Security-Policy as the checkout page.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import Response

from moneyrail.api.context import request_session
from moneyrail.api.routing import MoneyrailRoute
from moneyrail.web import render_page
from moneyrail.web.page_sessions import keep_session, presented_session

from . import service

router = APIRouter(route_class=MoneyrailRoute, include_in_schema=False)

NOTICES: dict[str, tuple[int, str, str]] = {
    "missing": (404, "This onboarding link is not valid", "Ask the platform for a new link."),
    "used": (
        410,
        "This onboarding link has been used",
        "Each link works once. Ask the platform for a new link if you need to change something.",
    ),
    "opened": (
        410,
        "This onboarding link has already been opened",
        "Each link opens once, in one browser. Ask the platform for a new link.",
    ),
    "expired": (
        410,
        "This onboarding link has expired",
        "Links work for 5 minutes. Ask the platform for a new one.",
    ),
}


def _answer(request: Request, token: str, page: service.OnboardingPage) -> Response:
    answer = _page(request, token, page)
    keep_session(answer, request, token=token, secret=page.new_session, path=f"/onboarding/{token}")
    return answer


def _page(request: Request, token: str, page: service.OnboardingPage) -> Response:
    if page.state in NOTICES:
        status_code, heading, message = NOTICES[page.state]
        return render_page(
            request,
            "message.html",
            {"heading": heading, "message": message, "is_error": True},
            status_code=status_code,
        )
    assert page.account is not None
    context: dict[str, Any] = {
        "platform": page.platform,
        "display_name": page.account.display_name,
        "bank_last4": page.account.bank_last4,
        "return_url": page.return_url,
        "error": page.error,
        "action": f"/onboarding/{token}",
    }
    template = "onboarding_done.html" if page.state == "done" else "onboarding.html"
    return render_page(request, template, context, status_code=400 if page.error else 200)


@router.get("/onboarding/{token}")
async def onboarding_page(request: Request, token: str) -> Response:
    page = await service.show_onboarding(request_session(request), token, presented_session(request, token))
    return _answer(request, token, page)


@router.post("/onboarding/{token}")
async def submit(
    request: Request,
    token: str,
    first_name: Annotated[str, Form()] = "",
    last_name: Annotated[str, Form()] = "",
    dob: Annotated[str, Form()] = "",
    accept_tos: Annotated[str | None, Form()] = None,
) -> Response:
    form = service.OnboardingForm(first_name, last_name, dob, accept_tos is not None)
    from_address = request.client.host if request.client is not None else None
    page = await service.submit_onboarding(
        request_session(request), token, presented_session(request, token), form, from_address
    )
    return _answer(request, token, page)
