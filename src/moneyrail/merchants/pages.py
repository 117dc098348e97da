"""The hosted pages of merchant connections: the OAuth consent page and token endpoint (`/oauth/...`)
and the activation page (`/onboarding/merchants/...`).

The pages run no script and load nothing from elsewhere (the checkout page's CSP); their links are
credentials, so they are never logged (the request log has the route template only), never sent on as a
referrer, and work once: a link's first open spends it, and its page goes on in that browser's page
session (a cookie scoped to the page's path, web/page_sessions.py); any other open answers 410.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any
from urllib.parse import parse_qs

from fastapi import APIRouter, Form, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response

from moneyrail.api.context import request_session
from moneyrail.api.routing import MoneyrailRoute
from moneyrail.web import origin_of, public_base_url, render_page
from moneyrail.web.page_sessions import keep_session, presented_session

from . import activation, service

router = APIRouter(route_class=MoneyrailRoute, include_in_schema=False)

NOTICES: dict[str, tuple[int, str, str]] = {
    "missing": (
        404,
        "This link is not valid",
        "Check the link, or return to the application and start connecting again.",
    ),
    "expired": (410, "This link has expired", "Return to the application and start again."),
    "used": (410, "This link has already been used", "Return to the application to continue."),
    "opened": (
        410,
        "This link has already been opened",
        "Each link opens once, in one browser. Return to the application to get a new one.",
    ),
    "altered": (
        400,
        "This link was changed",
        "The link does not match the request the application made. Return to it and start again.",
    ),
    "refused": (400, "This request cannot be completed", ""),
}
SCOPE_LABELS = {
    "payments": "Take payments on your behalf",
    "refunds": "Refund your payments",
    "transfers": "Send money to your account",
    "payouts": "See and start payouts to your bank",
}
REQUIREMENT_LABELS = {service.BANK_ACCOUNT_REQUIREMENT: "A bank account to receive payouts"}


def _query(request: Request) -> dict[str, list[str]]:
    return parse_qs(request.url.query, keep_blank_values=True)


def _oauth_uri(request: Request) -> str:
    """The address authlib checks for a secure transport: the public one (https, or a loopback)."""
    query = f"?{request.url.query}" if request.url.query else ""
    return f"{public_base_url(request)}{request.url.path}{query}"


def _notice(request: Request, notice: service.Notice) -> Response:
    status_code, heading, message = NOTICES[notice.reason]
    return render_page(
        request,
        "message.html",
        {"heading": heading, "message": notice.detail or message, "is_error": True},
        status_code=status_code,
    )


def _connection_token(request: Request) -> str | None:
    """The consent link's credential: its `connection` parameter (all consent pages share one path)."""
    values = _query(request).get("connection") or []
    return values[0] if len(values) == 1 else None


def _consent_session(request: Request) -> str | None:
    token = _connection_token(request)
    return presented_session(request, token) if token else None


def _consent_answer(request: Request, step: service.ConsentStep) -> Response:
    answer = _consent_page(request, step)
    token = _connection_token(request)
    if isinstance(step, service.ConsentForm) and token:
        keep_session(answer, request, token=token, secret=step.new_session, path="/oauth/authorize")
    return answer


def _consent_page(request: Request, step: service.ConsentStep) -> Response:
    if isinstance(step, service.Redirect):
        return RedirectResponse(step.url, status_code=303)
    if isinstance(step, service.Notice):
        return _notice(request, step)
    view = step.view
    context: dict[str, Any] = {
        "application": view.application,
        "scopes": [SCOPE_LABELS.get(scope, scope) for scope in view.scopes],
        "sandbox": not view.livemode,
        "error": step.error,
        "action": f"/oauth/authorize?{request.url.query}",
    }
    return render_page(
        request,
        "consent.html",
        context,
        status_code=400 if step.error else 200,
        # the answer to the form is a redirect to the application's registered redirect URI
        form_targets=origin_of(view.redirect_uri),
    )


@router.get("/oauth/authorize")
async def consent_page(request: Request) -> Response:
    step = await service.show_consent(
        request_session(request), _oauth_uri(request), _query(request), _consent_session(request)
    )
    return _consent_answer(request, step)


@router.post("/oauth/authorize")
async def decide(
    request: Request,
    decision: Annotated[str | None, Form()] = None,
    business_name: Annotated[str | None, Form()] = None,
    business_url: Annotated[str | None, Form()] = None,
    support_email: Annotated[str | None, Form()] = None,
    leave_requirement_due: Annotated[str | None, Form()] = None,
) -> Response:
    form = service.BusinessForm(
        decision=decision,
        name=business_name,
        url=business_url,
        support_email=support_email,
        leave_requirement_due=leave_requirement_due is not None,
    )
    step = await service.decide_consent(
        request_session(request), _oauth_uri(request), _query(request), _consent_session(request), form
    )
    return _consent_answer(request, step)


@router.post("/oauth/token")
async def token(request: Request) -> Response:
    """RFC 6749 §4.1.3, form-encoded, with the secret API key as Bearer. Errors here are RFC 6749's
    (`{"error", "error_description"}`), not the API's envelope."""
    submitted = await request.form()
    values: Mapping[str, Sequence[str]] = {
        key: [str(value) for value in submitted.getlist(key)] for key in submitted
    }
    answer = await service.exchange_code(
        request_session(request), _oauth_uri(request), values, request.headers.get("authorization")
    )
    headers = {name: value for name, value in answer.headers if name.lower() != "content-type"}
    headers.setdefault("Cache-Control", "no-store")
    return JSONResponse(answer.body, status_code=answer.status, headers=headers)


def _onboarding_answer(request: Request, token: str, step: activation.OnboardingStep) -> Response:
    answer = _onboarding_page(request, token, step)
    if isinstance(step, activation.OnboardingForm):
        path = f"/onboarding/merchants/{token}"
        keep_session(answer, request, token=token, secret=step.new_session, path=path)
    return answer


def _onboarding_page(request: Request, token: str, step: activation.OnboardingStep) -> Response:
    if isinstance(step, service.Redirect):
        return RedirectResponse(step.url, status_code=303)
    if isinstance(step, service.Notice):
        return _notice(request, step)
    view = step.view
    return render_page(
        request,
        "merchant_onboarding.html",
        {
            "business": view.business_name,
            "requirements": [REQUIREMENT_LABELS.get(item, item) for item in view.requirements],
            "needs_bank_account": service.BANK_ACCOUNT_REQUIREMENT in view.requirements,
            "sandbox": not view.livemode,
            "error": step.error,
            "action": f"/onboarding/merchants/{token}",
        },
        status_code=400 if step.error else 200,
        form_targets=origin_of(view.return_url),
    )


@router.get("/onboarding/merchants/{token}")
async def onboarding_page(request: Request, token: str) -> Response:
    return _onboarding_answer(
        request,
        token,
        await activation.show_onboarding(request_session(request), token, presented_session(request, token)),
    )


@router.post("/onboarding/merchants/{token}")
async def complete_onboarding(
    request: Request, token: str, bank_account: Annotated[str | None, Form()] = None
) -> Response:
    step = await activation.complete_onboarding(
        request_session(request), token, presented_session(request, token), bank_account
    )
    return _onboarding_answer(request, token, step)
