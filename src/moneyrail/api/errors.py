"""Every error leaves in one envelope: {"error": {type, code, message, param, request_id}}."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import asyncpg
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import iter_route_contexts
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match
from starlette.types import Scope

from moneyrail.api.context import request_id
from moneyrail.errors import (
    AmountInvalid,
    CurrencyInvalid,
    InvalidRequest,
    MethodNotAllowed,
    MoneyrailError,
    ParameterInvalid,
    ParameterMissing,
    ParameterUnknown,
    ResourceMissing,
)
from moneyrail.processor import provider
from moneyrail.processor.interface import ProcessorUnavailable

# pydantic error types raised by kit/schemas.py validators -> the documented error they stand for
DOMAIN_CODES: dict[str, type[InvalidRequest]] = {
    "amount_invalid": AmountInvalid,
    "currency_invalid": CurrencyInvalid,
}


# What a request meets when PostgreSQL is down or restarting: the server shutting down (57P01..57P03) or
# a connection exception (class 08), a pooled connection found closed, no connection free in the pool's
# wait; and an OS error inside the driver (refused, reset, no such socket), which SQLAlchemy re-raises raw.
_DATABASE_GONE = (
    asyncpg.exceptions.PostgresConnectionError,
    asyncpg.exceptions.CannotConnectNowError,
    asyncpg.exceptions.AdminShutdownError,
    asyncpg.exceptions.CrashShutdownError,
    asyncpg.exceptions.ConnectionDoesNotExistError,
    asyncpg.exceptions.TooManyConnectionsError,
    PoolTimeout,
)


def database_unreachable(failure: BaseException) -> bool:
    """Whether a request failed because PostgreSQL could not be reached, looking through the causes
    SQLAlchemy wraps around the driver's error."""
    seen: set[int] = set()
    current: BaseException | None = failure
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, _DATABASE_GONE):
            return True
        if isinstance(current, OSError) and _raised_in_driver(current):
            return True
        if isinstance(current, DBAPIError) and current.connection_invalidated:
            return True
        if isinstance(current, asyncpg.exceptions.InterfaceError) and "connection is closed" in str(current):
            return True
        current = current.__cause__ or current.__context__
    return False


def _raised_in_driver(error: BaseException) -> bool:
    traceback = error.__traceback__
    while traceback is not None:
        if str(traceback.tb_frame.f_globals.get("__name__", "")).startswith("asyncpg"):
            return True
        traceback = traceback.tb_next
    return False


def error_body(error: MoneyrailError, request_id_value: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": error.type,
        "code": error.code,
        "message": error.message,
        "param": error.param,
        "request_id": request_id_value,
    }
    body.update(error.extra)
    return {"error": body}


def error_response(error: MoneyrailError, request_id_value: str) -> JSONResponse:
    # an error may carry response headers (a rate limit's Retry-After)
    headers: dict[str, str] | None = getattr(error, "headers", None)
    return JSONResponse(error_body(error, request_id_value), status_code=error.status, headers=headers)


def _param_name(location: Sequence[str | int]) -> str | None:
    """("body", "metadata", "k") -> "metadata[k]", the way form-style APIs name nested fields."""
    parts = (
        [str(part) for part in location[1:]]
        if location and location[0] in {"body", "query", "path", "header"}
        else [str(part) for part in location]
    )
    if "[key]" in parts:  # a bad dict key: name the dict, not the key
        parts = parts[: parts.index("[key]") - 1]
    if not parts:
        return None
    return parts[0] + "".join(f"[{part}]" for part in parts[1:])


def validation_error(exc: RequestValidationError) -> InvalidRequest:
    """Map pydantic's first complaint to one documented code; FastAPI's 422 never leaves."""
    first: dict[str, Any] = exc.errors()[0] if exc.errors() else {}
    kind = first.get("type", "")
    param = _param_name(first.get("loc", ()))
    message = str(first.get("msg", "Invalid request"))
    if kind == "missing":
        if param is None:
            return ParameterMissing("The request needs a JSON body.")
        return ParameterMissing(f"Missing required parameter: {param}.", param=param)
    if kind == "extra_forbidden":
        return ParameterUnknown(f"Received unknown parameter: {param}.", param=param)
    if kind in DOMAIN_CODES:
        return DOMAIN_CODES[kind](f"Invalid {param}: {message}.", param=param)
    if kind == "json_invalid":
        return ParameterInvalid("The request body is not valid JSON.")
    if param is None and kind in {"model_attributes_type", "dict_type", "model_type"}:
        return ParameterInvalid(
            "The request body must be a JSON object sent as `Content-Type: application/json`."
        )
    if param is None:
        return ParameterInvalid(f"Invalid request body: {message}.")
    return ParameterInvalid(f"Invalid {param}: {message}.", param=param)


def install_error_handlers(app: FastAPI) -> None:
    async def on_moneyrail_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, MoneyrailError)
        return error_response(exc, request_id(request))

    async def on_validation_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return error_response(validation_error(exc), request_id(request))

    async def on_http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        error: MoneyrailError
        if exc.status_code == 404:
            error = ResourceMissing(f"Unrecognized request URL ({request.method} {request.url.path}).")
        elif exc.status_code == 405:
            error = MethodNotAllowed(f"{request.method} is not allowed on {request.url.path}.")
        else:
            error = InvalidRequest(str(exc.detail))
        response = error_response(error, request_id(request))
        response.headers.update(exc.headers or {})  # Starlette's own, such as a 405's Allow
        if exc.status_code == 405:
            # every method the path answers, not only the first matching route's (RFC 9110)
            methods = allowed_methods(request.app, request.scope)
            if methods:  # else a mount's 405 (static files): Starlette's answer stands
                response.headers["Allow"] = ", ".join(methods)
        return response

    async def on_processor_unavailable(request: Request, exc: Exception) -> JSONResponse:
        # a route that called the processor without answering its outage itself: nothing was decided
        # (503 with Retry-After), or the environment has no processor at all (403)
        assert isinstance(exc, ProcessorUnavailable)
        return error_response(provider.api_error(exc), request_id(request))

    app.add_exception_handler(MoneyrailError, on_moneyrail_error)
    app.add_exception_handler(ProcessorUnavailable, on_processor_unavailable)
    app.add_exception_handler(RequestValidationError, on_validation_error)
    app.add_exception_handler(StarletteHTTPException, on_http_error)


def allowed_methods(app: FastAPI, scope: Scope) -> list[str]:
    """Every method a route of the app answers at this request's path, sorted: a 405's `Allow`.

    FastAPI's own `Allow` names the methods of the first route whose path matched, and a path served
    by several routes (GET, POST and DELETE on `/v1/test-helpers/processor-faults`) has more; RFC 9110
    asks for all the target resource supports. Walks every route: a 405 is rare.
    """
    methods: set[str] = set()
    for route in iter_route_contexts(app.routes):
        match, _ = route.matches(scope)  # the route's own matching: its prefix, the root path
        if match is not Match.NONE:
            methods |= route.methods or set()
    return sorted(methods)
