"""How a request finds its route, as a client sees it: every route reached by its own paths, 404 and
405 (with an `Allow` naming every method of the path) in the error envelope, slash redirects, behind
a proxy's root path, routes added after the first request.

The app as `create_app` builds it, its lifespan running on the test PostgreSQL and Redis, asked over
HTTP (httpx's ASGI transport: the whole middleware stack runs), with a few overlapping routes included
after it was built; and the real server for what uvicorn adds (percent-decoding, trailing slashes).
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from fastapi import APIRouter, FastAPI
from fastapi.routing import APIRoute, iter_route_contexts
from starlette.convertors import FloatConvertor, IntegerConvertor, PathConvertor, UUIDConvertor
from starlette.types import Receive, Scope, Send

from moneyrail.api.middleware import route_template
from moneyrail.app import create_app
from moneyrail.config import Settings
from tests.conftest import WebServer
from tests.harness import TLS, Servers
from tests.helpers import assert_error

# Routes whose templates overlap, included under /v1 after create_app, last in the list
widgets = APIRouter(include_in_schema=False)  # /openapi.json stays the app's own


async def _answer() -> dict[str, str]:
    return {}


widgets.add_api_route("/widgets/{widget}", _answer, methods=["GET"], name="widget")
widgets.add_api_route("/widgets/search", _answer, methods=["POST"], name="search")
widgets.add_api_route("/widgets/{widget}/", _answer, methods=["PUT"], name="widget_slash")


class Probe:
    """Around an app: the route template the last request reached, as the request log names it."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app
        self.scope: Scope = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self.app(scope, receive, send)
        finally:
            self.scope = scope

    def reached(self) -> str:
        return route_template(self.scope)


@dataclass
class App:
    runner: asyncio.Runner
    app: FastAPI
    probe: Probe
    clients: dict[str, httpx.AsyncClient]  # by the root path the server says it is behind

    def ask(self, method: str, path: str, root_path: str = "") -> httpx.Response:
        # a whole URL, so that a path starting with "//" stays a path
        return self.runner.run(self.clients[root_path].request(method, "http://test" + path))


@pytest.fixture(scope="module")
def app(servers: Servers) -> Iterator[App]:
    settings = Settings(
        DATABASE_URL=servers.database_url, REDIS_URL=servers.redis_url, db_pool_size=2, db_max_overflow=2
    )
    built = create_app(settings)
    built.include_router(widgets, prefix="/v1")
    runner = asyncio.Runner()
    lifespan: AbstractAsyncContextManager[Any] = built.router.lifespan_context(built)
    runner.run(lifespan.__aenter__())
    probe = Probe(built)
    clients = {
        # behind a proxy that strips /api, the server says so in root_path
        root_path: httpx.AsyncClient(
            transport=httpx.ASGITransport(app=probe, raise_app_exceptions=False, root_path=root_path)
        )
        for root_path in ("", "/api")
    }
    try:
        yield App(runner, built, probe, clients)
    finally:
        for client in clients.values():
            runner.run(client.aclose())
        runner.run(lifespan.__aexit__(None, None, None))
        runner.close()


def concrete(path_format: str, convertors: dict[str, Any]) -> str:
    """A path the template matches, each parameter a value its convertor accepts."""

    def value(match: re.Match[str]) -> str:
        convertor = convertors.get(match.group(1))
        if isinstance(convertor, IntegerConvertor):
            return "7"
        if isinstance(convertor, FloatConvertor):
            return "1.5"
        if isinstance(convertor, UUIDConvertor):
            return str(uuid.UUID(int=7))
        if isinstance(convertor, PathConvertor):
            return "some/file.txt"
        return "prm7"

    return re.sub(r"{(\w+)}", value, path_format)


def test_every_route_is_reached_by_a_path_of_its_template(app: App):
    """No route of the app shadows another: a path of each template, with each of its methods, reaches
    that route (the request log's and the latency metric's `route`)."""
    widget_routes = {id(route) for route in widgets.routes}
    reached = 0
    for context in iter_route_contexts(app.app.routes):
        if id(context.original_route) in widget_routes:
            continue  # overlapping by design: see test_404_405_and_slash_redirects
        template = context.path_format
        assert isinstance(template, str) and template.startswith("/"), context
        path = concrete(template, getattr(context, "param_convertors", {}))
        for method in sorted(context.methods or ()):
            response = app.ask(method, path)
            if isinstance(context.original_route, APIRoute):
                assert app.probe.reached() == template, (method, path, response.status_code)
            else:  # a Starlette route of the app's own (/openapi.json): no route left in the scope
                assert response.status_code == 200, (method, path, response.status_code)
            reached += 1
    assert reached >= 150


@pytest.mark.parametrize(
    ("method", "path", "status", "allow", "location"),
    [
        ("GET", "/v1/no-such-thing", 404, None, None),
        ("GET", "/nowhere", 404, None, None),
        ("GET", "//v1/customers", 404, None, None),
        ("DELETE", "/v1/customers", 405, "GET, POST", None),
        # three routes on this path: the 405's Allow names the methods of all three (RFC 9110)
        ("PATCH", "/v1/test-helpers/processor-faults", 405, "DELETE, GET, POST", None),
        # two templates match the path ({widget} for GET, the literal for POST)
        ("DELETE", "/v1/widgets/search", 405, "GET, POST", None),
        ("GET", "/v1/customers/", 307, None, "http://test/v1/customers"),
        ("GET", "/v1/subscriptions/sub_1/", 307, None, "http://test/v1/subscriptions/sub_1"),
        ("POST", "/v1/subscriptions/", 307, None, "http://test/v1/subscriptions"),
        ("GET", "/v1/widgets/w1", 200, None, None),
        ("PUT", "/v1/widgets/w1/", 200, None, None),
        # `{widget}` (GET) matches the path: a 405, no redirect to the PUT route with the slash
        ("PUT", "/v1/widgets/w1", 405, "GET", None),
    ],
)
def test_404_405_and_slash_redirects(
    app: App, method: str, path: str, status: int, allow: str | None, location: str | None
):
    response = app.ask(method, path)
    assert response.status_code == status, response.text
    if status == 404:
        assert_error(response, 404, "resource_missing")
    if status == 405:
        assert_error(response, 405, "method_not_allowed")
    assert response.headers.get("allow") == allow
    assert response.headers.get("location") == location


@pytest.mark.parametrize(
    ("method", "path", "status", "location"),
    [
        ("POST", "/api/v1/customers", 401, None),  # the route, which asks for a key
        ("GET", "/api/v1/customers/", 307, "http://test/api/v1/customers"),
        ("DELETE", "/api/v1/customers", 405, None),
        ("GET", "/api", 307, "http://test/api/"),  # the front page, under the root path
        ("GET", "/api/", 200, None),
        ("GET", "/apiv1/customers", 404, None),
    ],
)
def test_behind_a_root_path_the_routes_answer_under_it(
    app: App, method: str, path: str, status: int, location: str | None
):
    response = app.ask(method, path, root_path="/api")
    assert response.status_code == status, response.text
    if status == 401:
        assert_error(response, 401, "authentication_required")
    if status == 405:
        assert_error(response, 405, "method_not_allowed")
        assert response.headers["allow"] == "GET, POST"
    assert response.headers.get("location") == location


def test_routes_added_after_the_first_request_are_reached():
    app = create_app(Settings(database_url="postgresql://unused@127.0.0.1/unused"))
    later = APIRouter()
    app.include_router(later, prefix="/v1")

    async def call(path: str) -> httpx.Response:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.get(path)

    runner = asyncio.Runner()
    try:
        assert runner.run(call("/v1/added-to-the-app")).status_code == 404
        app.add_api_route("/v1/added-to-the-app", _answer)
        assert runner.run(call("/v1/added-to-the-app")).status_code == 200
        later.add_api_route("/added-to-an-included-router", _answer)
        assert runner.run(call("/v1/added-to-an-included-router")).status_code == 200
    finally:
        runner.close()


def test_the_real_server_decodes_paths_and_redirects_trailing_slashes(web: WebServer):
    with httpx.Client(base_url=web.base_url, verify=TLS) as client:
        # a percent-encoded literal arrives decoded: the route, which asks for a key
        assert_error(client.post("/%761/customers", json={}), 401, "authentication_required")
        redirect = client.get("/v1/customers/")
        assert redirect.status_code == 307
        assert redirect.headers["location"] == f"{web.base_url}/v1/customers"
        # an encoded slash arrives decoded too (the ASGI path): the customer's route
        assert_error(client.get("/v1/customers%2Fcus_1"), 401, "authentication_required")
        not_allowed = client.patch("/v1/test-helpers/processor-faults")
        assert_error(not_allowed, 405, "method_not_allowed")
        assert not_allowed.headers["allow"] == "DELETE, GET, POST"
