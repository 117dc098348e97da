"""The operator console's pages under `/console`: server-rendered, no script, nothing from elsewhere.

Sign-in (`/console/login`) takes an e-mail, a password and a TOTP code and starts a server-side session:
a cookie holding its secret, HttpOnly, SameSite=Strict, scoped to `/console`, Secure wherever the
service is served over https (as the hosted pages decide). Every page needs that session; every form
carries a CSRF token tied to it. API keys open nothing here, and the session cookie opens nothing in
the API (`/v1` reads only `Authorization`). None of these routes is in /openapi.json.
"""

from __future__ import annotations

import hmac
from typing import Annotated, Any
from urllib.parse import quote, urlsplit

from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.responses import RedirectResponse, Response

from moneyrail.api.context import request_session
from moneyrail.api.health import broker_reachable
from moneyrail.api.metrics import queue_depths
from moneyrail.api.routing import MoneyrailRoute
from moneyrail.audit.service import ACTIONS as AUDIT_ACTIONS
from moneyrail.config import Settings
from moneyrail.console import accounts, charts, credentials, service
from moneyrail.console.errors import ConsoleRefusal, FormRefused, NotSignedIn
from moneyrail.console.schemas import (
    ACTIONS,
    AGES,
    ENVIRONMENTS,
    OperationsQuery,
    action_of,
    page_position,
)
from moneyrail.engine.policy import operation_types
from moneyrail.kit.clock import utcnow
from moneyrail.kit.money import format_amount
from moneyrail.models.operation import OPERATION_STATUSES
from moneyrail.web import public_base_url, render_page
from moneyrail.web.page_sessions import keep_session, presented_session

router = APIRouter(route_class=MoneyrailRoute, include_in_schema=False)

SESSION_COOKIE = "moneyrail_console"
LOGIN_COOKIE = "moneyrail_console_login"
LOGIN_CSRF_PURPOSE = "login"
CONSOLE_PATH = "/console"


def _settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def _secure(request: Request) -> bool:
    return public_base_url(request).startswith("https://")


async def signed_in_operator(request: Request) -> accounts.SignedIn:
    signed = await accounts.signed_in(
        request_session(request), request.cookies.get(SESSION_COOKIE), _settings(request)
    )
    if signed is None:
        raise NotSignedIn()
    return signed


SignedInOperator = Annotated[accounts.SignedIn, Depends(signed_in_operator)]
CsrfField = Annotated[str | None, Form()]


def _check_form(signed: accounts.SignedIn, presented: str | None) -> None:
    if not presented or not hmac.compare_digest(signed.csrf_token, presented):
        raise FormRefused()


def _page(
    request: Request,
    template: str,
    signed: accounts.SignedIn | None,
    context: dict[str, Any],
    *,
    status_code: int = 200,
) -> Response:
    now = utcnow()
    return render_page(
        request,
        f"console/{template}",
        {
            "operator": signed,
            "now": now,
            "age": lambda moment: service.age_of(moment, now),
            "money": format_amount,
            **context,
        },
        status_code=status_code,
    )


def refusal_page(request: Request, refusal: Exception) -> Response:
    """The app's handler of ConsoleRefusal: a page asked for without a session goes to the sign-in form;
    anything else refused is a page saying why, with its status."""
    assert isinstance(refusal, ConsoleRefusal)
    if isinstance(refusal, NotSignedIn) and request.method == "GET":
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return RedirectResponse(f"{CONSOLE_PATH}/login?next={quote(target, safe='')}", status_code=303)
    return _page(
        request,
        "message.html",
        None,
        {"heading": refusal.heading, "message": refusal.message, "is_error": True},
        status_code=refusal.status,
    )


def _next_page(target: str | None) -> str:
    """Only a console page of this service: never another site (an open redirect)."""
    if not target:
        return CONSOLE_PATH
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not parts.path.startswith(CONSOLE_PATH) or target.startswith("//"):
        return CONSOLE_PATH
    if parts.path.startswith(f"{CONSOLE_PATH}/login") or parts.path.startswith(f"{CONSOLE_PATH}/setup"):
        return CONSOLE_PATH
    return target


# --- signing in and out ---------------------------------------------------------------------------
def _login_form(
    request: Request, next_page: str | None, *, error: str | None = None, status_code: int = 200
) -> Response:
    """The form, with a CSRF token bound to a cookie of the form's own (there is no session yet)."""
    login_secret = request.cookies.get(LOGIN_COOKIE) or credentials.new_secret()
    answer = _page(
        request,
        "login.html",
        None,
        {
            "error": error,
            "next": _next_page(next_page),
            "csrf_token": credentials.csrf_token(login_secret, LOGIN_CSRF_PURPOSE),
        },
        status_code=status_code,
    )
    answer.set_cookie(
        LOGIN_COOKIE,
        login_secret,
        max_age=3600,
        path=f"{CONSOLE_PATH}/login",
        secure=_secure(request),
        httponly=True,
        samesite="strict",
    )
    return answer


@router.get("/console/login")
async def login_page(request: Request, next: Annotated[str | None, Query()] = None) -> Response:
    return _login_form(request, next)


@router.post("/console/login")
async def login(
    request: Request,
    email: Annotated[str, Form()] = "",
    password: Annotated[str, Form()] = "",
    code: Annotated[str, Form()] = "",
    next: Annotated[str | None, Form()] = None,
    csrf_token: CsrfField = None,
) -> Response:
    if not credentials.csrf_matches(request.cookies.get(LOGIN_COOKIE), LOGIN_CSRF_PURPOSE, csrf_token):
        raise FormRefused()
    settings = _settings(request)
    result = await accounts.sign_in(
        request_session(request), email=email, password=password, code=code, settings=settings
    )
    if result.outcome == "locked":
        minutes = max(1, round(result.retry_after_seconds / 60))
        answer = _login_form(
            request,
            next,
            error=f"Too many failed sign-ins: this account is locked. Try again in about {minutes} min.",
            status_code=429,
        )
        answer.headers["Retry-After"] = str(result.retry_after_seconds)
        return answer
    if result.outcome != "signed_in" or result.session_secret is None:
        return _login_form(
            request,
            next,
            error="That e-mail, password and code do not match an account. (A code works once: if you "
            "have just used this one, wait for the next.)",
            status_code=401,
        )
    answer = RedirectResponse(_next_page(next), status_code=303)
    answer.set_cookie(
        SESSION_COOKIE,
        result.session_secret,
        max_age=int(settings.console_session_absolute_seconds),
        path=CONSOLE_PATH,
        secure=_secure(request),
        httponly=True,
        samesite="strict",
    )
    answer.delete_cookie(LOGIN_COOKIE, path=f"{CONSOLE_PATH}/login", secure=_secure(request), httponly=True)
    return answer


@router.post("/console/logout")
async def logout(request: Request, signed: SignedInOperator, csrf_token: CsrfField = None) -> Response:
    _check_form(signed, csrf_token)
    await accounts.sign_out(request_session(request), signed)
    answer = RedirectResponse(f"{CONSOLE_PATH}/login", status_code=303)
    answer.delete_cookie(SESSION_COOKIE, path=CONSOLE_PATH, secure=_secure(request), httponly=True)
    return answer


# --- the one-time set-up link ---------------------------------------------------------------------
SETUP_NOTICES: dict[str, tuple[int, str, str]] = {
    "missing": (404, "This set-up link is not valid", "Ask whoever runs moneyrail for a new link."),
    "used": (410, "This set-up link has been used", "Sign in at /console/login, or ask for a new link."),
    "opened": (
        410,
        "This set-up link has already been opened",
        "Each link opens once, in one browser. Ask for a new link (`moneyrail operators reset`).",
    ),
    "expired": (410, "This set-up link has expired", "Ask for a new link (`moneyrail operators reset`)."),
}


def _setup_answer(request: Request, token: str, page: accounts.SetupPage) -> Response:
    if page.state == "refused":
        answer = refusal_page(request, FormRefused())
    elif page.state in SETUP_NOTICES:
        status_code, heading, message = SETUP_NOTICES[page.state]
        answer = _page(
            request,
            "message.html",
            None,
            {"heading": heading, "message": message, "is_error": True},
            status_code=status_code,
        )
    else:
        answer = _page(
            request,
            "setup.html",
            None,
            {"setup": page, "action": f"{CONSOLE_PATH}/setup/{token}"},
            status_code=400 if page.error else 200,
        )
    keep_session(answer, request, token=token, secret=page.new_session, path=f"{CONSOLE_PATH}/setup/{token}")
    return answer


@router.get("/console/setup/{token}")
async def setup_page(request: Request, token: str) -> Response:
    page = await accounts.show_setup(request_session(request), token, presented_session(request, token))
    return _setup_answer(request, token, page)


@router.post("/console/setup/{token}")
async def setup(
    request: Request,
    token: str,
    password: Annotated[str, Form()] = "",
    confirmation: Annotated[str, Form()] = "",
    code: Annotated[str, Form()] = "",
    csrf_token: CsrfField = None,
) -> Response:
    form = accounts.SetupForm(password, confirmation, code, csrf_token)
    page = await accounts.submit_setup(
        request_session(request), token, presented_session(request, token), form
    )
    return _setup_answer(request, token, page)


# --- reading --------------------------------------------------------------------------------------
@router.get("/console")
async def overview(request: Request, signed: SignedInOperator) -> Response:
    reachable = await broker_reachable(request)
    try:
        depths = await queue_depths(request.app.state.redis) if reachable else {}
    except OSError:
        depths = {}
    found = await service.overview(request_session(request))
    return _page(
        request,
        "overview.html",
        signed,
        {
            "overview": found,
            "chart": charts.throughput_svg(found.last_hour),
            "broker_reachable": reachable,
            "depths": depths,
        },
    )


def operations_query(
    status: Annotated[str | None, Query()] = None,
    type: Annotated[str | None, Query()] = None,
    installation: Annotated[str | None, Query()] = None,
    environment: Annotated[str | None, Query()] = None,
    error: Annotated[str | None, Query()] = None,
    age: Annotated[str | None, Query()] = None,
) -> OperationsQuery:
    return OperationsQuery.parse(
        status=status, type=type, installation=installation, environment=environment, error=error, age=age
    )


Filter = Annotated[OperationsQuery, Depends(operations_query)]


def _filter_choices() -> dict[str, Any]:
    return {
        "statuses": OPERATION_STATUSES,
        "types": operation_types(),
        "environments": ENVIRONMENTS,
        "ages": {key: label for key, (label, _, _) in AGES.items()},
        "actions": ACTIONS,
    }


@router.get("/console/operations")
async def operations(
    request: Request, signed: SignedInOperator, query: Filter, cursor: Annotated[str | None, Query()] = None
) -> Response:
    found = await service.find_operations(request_session(request), query, page_position(cursor))
    return _page(
        request,
        "operations.html",
        signed,
        {"query": query, "page": found, **_filter_choices()},
    )


@router.get("/console/operations/bulk")
async def bulk_preview(
    request: Request, signed: SignedInOperator, query: Filter, action: Annotated[str | None, Query()] = None
) -> Response:
    preview = await service.bulk_preview(request_session(request), action_of(action), query)
    return _page(request, "bulk.html", signed, {"preview": preview, **_filter_choices()})


@router.get("/console/operations/{operation_id}")
async def operation(
    request: Request, signed: SignedInOperator, operation_id: str, done: Annotated[str | None, Query()] = None
) -> Response:
    detail = await service.operation_detail(request_session(request), operation_id)
    return _page(request, "operation.html", signed, {"detail": detail, "done": done})


@router.get("/console/audit")
async def audit_log(
    request: Request,
    signed: SignedInOperator,
    actor: Annotated[str | None, Query(max_length=254)] = None,
    action: Annotated[str | None, Query(max_length=100)] = None,
    operation_id: Annotated[str | None, Query(alias="operation", max_length=100)] = None,
    cursor: Annotated[str | None, Query()] = None,
) -> Response:
    if action and action not in AUDIT_ACTIONS:
        raise ConsoleRefusal(400, "This filter cannot be used", f"Unknown action {action!r}.")
    found = await service.audit_page(
        request_session(request),
        actor=(actor or "").strip() or None,
        action=action or None,
        operation_id=(operation_id or "").strip() or None,
        after=page_position(cursor),
    )
    return _page(
        request,
        "audit.html",
        signed,
        {
            "page": found,
            "actions": AUDIT_ACTIONS,
            "filters": {"actor": actor or "", "action": action or "", "operation": operation_id or ""},
        },
    )


@router.get("/console/audit/{entry_id}")
async def audit_entry(request: Request, signed: SignedInOperator, entry_id: str) -> Response:
    detail = await service.audit_detail(request_session(request), entry_id)
    return _page(request, "audit_entry.html", signed, {"detail": detail})


# --- deciding -------------------------------------------------------------------------------------
@router.post("/console/operations/{operation_id}/{action}")
async def decide_one(
    request: Request,
    signed: SignedInOperator,
    operation_id: str,
    action: str,
    reason: Annotated[str | None, Form()] = None,
    csrf_token: CsrfField = None,
) -> Response:
    _check_form(signed, csrf_token)
    chosen = action_of(action)
    await service.decide(request_session(request), signed, chosen, [operation_id], reason)
    done = "retried" if chosen == "retry" else "discarded"
    return RedirectResponse(f"{CONSOLE_PATH}/operations/{quote(operation_id)}?done={done}", status_code=303)


@router.post("/console/operations/bulk")
async def decide_bulk(
    request: Request,
    signed: SignedInOperator,
    operation: Annotated[list[str] | None, Form()] = None,
    action: Annotated[str | None, Form()] = None,
    reason: Annotated[str | None, Form()] = None,
    csrf_token: CsrfField = None,
    status: Annotated[str | None, Form()] = None,
    type: Annotated[str | None, Form()] = None,
    installation: Annotated[str | None, Form()] = None,
    environment: Annotated[str | None, Form()] = None,
    error: Annotated[str | None, Form()] = None,
    age: Annotated[str | None, Form()] = None,
) -> Response:
    """Exactly the dead letters the dry run listed (their ids came with the form), all or none."""
    _check_form(signed, csrf_token)
    chosen = action_of(action)
    query = OperationsQuery.parse(
        status=status, type=type, installation=installation, environment=environment, error=error, age=age
    )
    selection: dict[str, object] = {"filter": query.fields(), "count": len(operation or [])}
    entry_id = await service.decide(
        request_session(request), signed, chosen, operation or [], reason, selection
    )
    return RedirectResponse(f"{CONSOLE_PATH}/audit/{quote(entry_id)}", status_code=303)
