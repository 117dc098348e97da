"""The one moneyrail middleware: request id, API version, the input guard, one log line per request,
last-resort 500.

A pure ASGI middleware (not BaseHTTPMiddleware) so it adds no task hop to every request; the input guard
(api/input_guard.py) runs inside it rather than as a layer of its own, so its refusals carry the ids.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import orjson
import structlog
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from moneyrail.api import input_guard
from moneyrail.api.errors import database_unreachable, error_body
from moneyrail.api.metrics import http_latency
from moneyrail.config import API_VERSIONS
from moneyrail.errors import DatabaseUnavailable, MoneyrailError, UnsupportedVersion
from moneyrail.kit.ids import new_id
from moneyrail.logging import current_request_id

logger = structlog.get_logger("moneyrail.http")

# Path prefix -> API name (CONVENTIONS.md §1); longest prefixes first.
API_PREFIXES = (("/commerce/v1", "commerce"), ("/fiscal/v1", "fiscal"), ("/v1", "payments"))
# (prefix, prefix + "/", API): the concatenation made once, not on every request
_PREFIXES_WITH_SLASH = tuple((prefix, prefix + "/", api) for prefix, api in API_PREFIXES)
# Each API's current version as the response header, built once
CURRENT_VERSION_HEADERS = {
    api: (b"service-version", versions[0].encode("latin-1")) for api, versions in API_VERSIONS.items()
}


# A series per method, route template and status: bounded by the routes, never by the raw paths
_latency_by_labels: dict[tuple[str, str, int], Any] = {}
_series_by_key: dict[tuple[str, int, str | None, int], tuple[Any, str, Any]] = {}


def api_of(path: str) -> str | None:
    for prefix, with_slash, api in _PREFIXES_WITH_SLASH:
        if path.startswith(with_slash) or path == prefix:
            return api
    return None


def route_template(scope: Scope) -> str:
    """The matched route's template, never the raw path: a path may carry a credential (checkout tokens)."""
    route = scope.get("route")
    template = getattr(route, "path_format", None) or getattr(route, "path", None)
    if not isinstance(template, str):
        return "unmatched"
    for prefix, _api in API_PREFIXES:
        # Newer FastAPI keeps an included router's prefix off the route itself.
        if scope["path"].startswith(prefix + "/") and not template.startswith(prefix + "/"):
            return prefix + template
    return template


def _api_prefix_of(path: str) -> str | None:
    for prefix, with_slash, _api in _PREFIXES_WITH_SLASH:
        if path.startswith(with_slash):
            return prefix
    return None


def _series(scope: Scope, status: int) -> tuple[str, Any]:
    """The route's template and its latency series, looked up once per (method, route, API, status).

    A route's template depends only on the route and on which API prefix the path starts with. Routes
    are not hashable, so the key holds the route's id and the entry the route itself: an id reused by
    a later route (another app in the same process) is recognized as another route.
    """
    route = scope.get("route")
    key = (scope["method"], id(route), _api_prefix_of(scope["path"]), status)
    entry = _series_by_key.get(key)
    if entry is None or entry[0] is not route:
        template = route_template(scope)
        labels = (scope["method"], template, status)
        histogram = _latency_by_labels.get(labels)
        if histogram is None:  # prometheus' labels() validates and locks on every call: once per series
            histogram = _latency_by_labels[labels] = http_latency.labels(
                scope["method"], template, str(status)
            )
        entry = _series_by_key[key] = (route, template, histogram)
    return entry[1], entry[2]


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return None


class RequestContextMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        request_id = new_id("req")
        scope.setdefault("state", {})["request_id"] = request_id
        api = api_of(scope["path"])
        version: str | None = None
        extra_headers = [(b"request-id", request_id.encode())]
        if api is not None:
            asked = _header(scope, b"service-version")
            version = asked if asked is not None else API_VERSIONS[api][0]
            current = CURRENT_VERSION_HEADERS[api]
            extra_headers.append(current if asked is None else (current[0], asked.encode("latin-1")))
        status = 500
        response_started = False

        async def send_with_headers(message: Message) -> None:
            nonlocal status, response_started
            if message["type"] == "http.response.start":
                status = message["status"]
                response_started = True
                message["headers"] = [*message.get("headers", []), *extra_headers]
            await send(message)

        logged_request = current_request_id.set(request_id)
        try:
            if api is not None and version not in API_VERSIONS[api]:
                # Answer with the version that will serve a retry, not the unknown one asked for.
                extra_headers[-1] = CURRENT_VERSION_HEADERS[api]
                await self._send_error(
                    send_with_headers,
                    UnsupportedVersion(
                        f"Service-Version {version!r} is not supported by the {api} API; "
                        f"supported: {', '.join(API_VERSIONS[api])}.",
                        param="Service-Version",
                    ),
                    request_id,
                )
                return
            refusal, receive = await input_guard.guard(scope, receive)
            if refusal is not None:
                await self._send_error(send_with_headers, refusal, request_id)
                return
            await self.app(scope, receive, send_with_headers)
        except Exception as failure:
            error: MoneyrailError
            if database_unreachable(failure):
                # an outage, not a bug: no stack trace per request, and the client is told to come back
                logger.warning(
                    "request_database_unreachable", error=f"{type(failure).__name__}: {failure}"[:300]
                )
                error = DatabaseUnavailable()
            else:
                logger.exception("request_failed")
                error = MoneyrailError("An internal error occurred.")
            if not response_started:
                await self._send_error(send_with_headers, error, request_id)
        finally:
            self._log(scope, status, started)
            current_request_id.reset(logged_request)

    @staticmethod
    async def _send_error(send: Send, error: MoneyrailError, request_id: str) -> None:
        body = orjson.dumps(error_body(error, request_id))
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        for name, value in getattr(error, "headers", {}).items():
            headers.append((name.lower().encode(), value.encode()))
        await send({"type": "http.response.start", "status": error.status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    @staticmethod
    def _log(scope: Scope, status: int, started: float) -> None:
        latency = time.perf_counter() - started
        route, histogram = _series(scope, status)
        histogram.observe(latency)
        if not logger.is_enabled_for(logging.INFO):
            return  # the line's fields are not even gathered below the configured level
        principal = scope.get("state", {}).get("principal")
        logger.info(
            "request",
            method=scope["method"],
            route=route,
            status=status,
            latency_ms=round(latency * 1000, 2),
            installation=principal.tenant.installation_id if principal else None,
            livemode=principal.tenant.livemode if principal else None,
        )
