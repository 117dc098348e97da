"""The route index (api/route_index.py) answers every request exactly as FastAPI's linear matching does.

Two real apps, each with its lifespan running on the test PostgreSQL and Redis: `indexed` as
`create_app` builds it, and `linear` with FastAPI's own dispatch put back (every route tried in
order). Requests go over HTTP (httpx's ASGI transport, so the app's whole middleware stack runs) to
both; a probe around each app reads which route the request reached from its scope. For every route
and method, for the paths next to them (trailing slash, a sibling, the parent, percent-encoded), and
for generated paths, the route reached, the status, `Allow`, `Location` and an error's body are the
same.
"""

from __future__ import annotations

import asyncio
import functools
import re
import uuid
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
import pytest
from fastapi import APIRouter, FastAPI
from fastapi.routing import _EffectiveRouteContext, iter_route_contexts
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.convertors import FloatConvertor, IntegerConvertor, PathConvertor, UUIDConvertor
from starlette.types import Receive, Scope, Send

from moneyrail.api.route_index import RouteIndex
from moneyrail.api.routing import MoneyrailRoute
from moneyrail.app import create_app
from moneyrail.config import Settings
from tests.conftest import WebServer
from tests.harness import Servers

METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
REQUEST_ID = re.compile(rb"req_[0-9A-Za-z]+")

# Routes whose parameters overlap literal siblings, and a parameter or a `path` convertor early in
# the path, included into both apps after create_app (before their first request), last in the list.
widgets = APIRouter(include_in_schema=False)  # /openapi.json stays the app's own


async def _answer() -> dict[str, str]:
    return {}


widgets.add_api_route("/widgets/{widget}", _answer, methods=["GET"], name="widget")
widgets.add_api_route("/widgets/search", _answer, methods=["GET"], name="search_shadowed")  # {widget} wins
widgets.add_api_route("/widgets/search", _answer, methods=["POST"], name="search")
widgets.add_api_route("/widgets/{widget}/parts/{part:int}", _answer, methods=["GET"], name="part")
widgets.add_api_route("/widgets/{widget}/parts/latest", _answer, methods=["GET"], name="latest_part")
widgets.add_api_route("/{kind}/catalog", _answer, methods=["GET", "POST"], name="catalog")
widgets.add_api_route("/widgets/files/{rest:path}", _answer, methods=["GET"], name="file")
widgets.add_api_route("/widgets/{widget}/", _answer, methods=["PUT"], name="widget_slash")


@dataclass(frozen=True)
class Answer:
    route: tuple[Any, ...] | None  # what the request reached: the route's kind, template, methods, name
    status: int
    allow: str | None
    location: str | None
    error_body: bytes | None  # request ids blanked


class Probe:
    """Around an app: what the last request it served reached, read from the scope matching left."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app
        self.scope: Scope = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self.app(scope, receive, send)
        finally:
            self.scope = scope

    def reached(self) -> tuple[Any, ...] | None:
        """The route's kind, template (with its routers' prefixes), methods and name."""
        context = self.scope.get("fastapi", {}).get("effective_route_context")
        if context is not None:  # a route of an included router
            route, described = context.original_route, context.starlette_route or context
        else:  # a route of the app itself: FastAPI leaves its endpoint (a mount's app) in the scope
            endpoint = self.scope.get("endpoint")
            if endpoint is None:
                return None
            matching = (
                r
                for r in self.app.routes
                if endpoint in (getattr(r, "endpoint", None), getattr(r, "app", None))
            )
            route = described = next(matching)
        methods = tuple(sorted(getattr(described, "methods", None) or ()))
        return (type(route).__name__, described.path_format, methods, getattr(route, "name", None))


@dataclass
class Apps:
    runner: asyncio.Runner
    indexed: FastAPI
    linear: FastAPI
    clients: dict[str, tuple[Probe, httpx.AsyncClient]]

    def ask(self, which: str, method: str, url: str) -> Answer:
        probe, client = self.clients[which]
        # a whole URL, so that a path starting with "//" stays a path
        response = self.runner.run(client.request(method, "http://test" + url))
        error = response.status_code >= 400 and response.headers.get("content-type", "").startswith(
            "application/json"
        )
        return Answer(
            route=probe.reached(),
            status=response.status_code,
            allow=response.headers.get("allow"),
            location=response.headers.get("location"),
            error_body=REQUEST_ID.sub(b"req_", response.content) if error else None,
        )

    def both(self, method: str, url: str, root_path: str = "") -> tuple[Answer, Answer]:
        return self.ask("indexed" + root_path, method, url), self.ask("linear" + root_path, method, url)


@pytest.fixture(scope="module")
def apps(servers: Servers) -> Iterator[Apps]:
    settings_ = Settings(
        DATABASE_URL=servers.database_url, REDIS_URL=servers.redis_url, db_pool_size=2, db_max_overflow=2
    )
    indexed, linear = create_app(settings_), create_app(settings_)
    assert isinstance(linear.router.middleware_stack, RouteIndex)
    linear.router.middleware_stack = linear.router.app  # FastAPI's own dispatch: every route in order
    runner = asyncio.Runner()
    lifespans: list[AbstractAsyncContextManager[Any]] = []
    clients: dict[str, tuple[Probe, httpx.AsyncClient]] = {}
    for name, app in (("indexed", indexed), ("linear", linear)):
        app.include_router(widgets, prefix="/v1")
        lifespan = app.router.lifespan_context(app)
        runner.run(lifespan.__aenter__())
        lifespans.append(lifespan)
        probe = Probe(app)
        for root_path in ("", "/api"):  # behind a proxy that strips /api, the server says so in root_path
            transport = httpx.ASGITransport(app=probe, raise_app_exceptions=False, root_path=root_path)
            clients[name + root_path] = (probe, httpx.AsyncClient(transport=transport))
    try:
        yield Apps(runner, indexed, linear, clients)
    finally:
        for _, client in clients.values():
            runner.run(client.aclose())
        for lifespan in lifespans:
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


def every_route(app: FastAPI) -> list[tuple[Any, str, set[str]]]:
    """(route context, a concrete path it matches, its methods) for every route of the app."""
    routes = []
    for context in iter_route_contexts(app.routes):
        # the route as matched: its template carries its routers' prefixes
        template, convertors = context.path_format, getattr(context, "param_convertors", {})
        assert isinstance(template, str) and template.startswith("/"), context
        routes.append((context, concrete(template, convertors), set(context.methods or ())))
    return routes


def neighbours(path: str) -> list[str]:
    """Paths next to a route's: what trailing slashes, siblings and encodings should not confuse."""
    head, _, last = path.rpartition("/")
    encoded_last = f"%{ord(last[0]):02X}{last[1:]}" if last else ""
    return [
        path + "/",
        path.rstrip("/") or "/",
        head or "/",
        head + "/nope",
        path + "/nope",
        path.replace("v", "%76", 1),  # a literal percent-encoded: the path arrives decoded
        f"{head}/{encoded_last}",
        f"{head}%2F{last}" if head else path,  # an encoded slash
    ]


def test_the_app_is_built_with_the_index():
    app = create_app(Settings(database_url="postgresql://unused@127.0.0.1/unused"))
    assert isinstance(app.router.middleware_stack, RouteIndex)


def test_every_route_is_reached_by_a_path_of_its_template_as_linear_matching_reaches_it(apps: Apps):
    routes = every_route(apps.indexed)
    assert len(routes) >= 150
    own_routes = 0
    for context, path, methods in routes:
        for method in METHODS:
            indexed, linear = apps.both(method, path)
            assert indexed == linear, (method, path)
            if method not in methods or any(context.original_route is widget for widget in widgets.routes):
                continue  # the overlapping widgets: see test_overlapping_routes_resolve_to_the_first...
            # the app's own routes do not shadow one another: each path reaches its own route
            assert indexed.route is not None, (method, path)
            assert indexed.route[1] == context.path_format and method in indexed.route[2], (method, path)
            own_routes += 1
    assert own_routes >= 150


def test_paths_next_to_every_route_answer_as_linear_matching_does(apps: Apps):
    seen: set[tuple[str, str]] = set()
    for _, path, _ in every_route(apps.indexed):
        for neighbour in neighbours(path):
            for method in ("GET", "POST"):
                if (method, neighbour) in seen:
                    continue
                seen.add((method, neighbour))
                indexed, linear = apps.both(method, neighbour)
                assert indexed == linear, (method, neighbour)
    assert len(seen) > 500


def test_overlapping_routes_resolve_to_the_first_in_the_list(apps: Apps):
    # (template, status, methods) of the route reached; a 405 reaches the first partial match
    cases = {
        ("GET", "/v1/widgets/search"): ("/v1/widgets/{widget}", 200, ("GET",)),  # declared first
        ("POST", "/v1/widgets/search"): ("/v1/widgets/search", 200, ("POST",)),
        ("DELETE", "/v1/widgets/search"): ("/v1/widgets/{widget}", 405, ("GET",)),  # the first partial match
        ("GET", "/v1/widgets/w1/parts/latest"): ("/v1/widgets/{widget}/parts/latest", 200, ("GET",)),
        ("GET", "/v1/widgets/w1/parts/3"): ("/v1/widgets/{widget}/parts/{part}", 200, ("GET",)),
        ("GET", "/v1/widgets/files/a/b.txt"): ("/v1/widgets/files/{rest}", 200, ("GET",)),
        ("GET", "/v1/widgets/files"): ("/v1/widgets/{widget}", 200, ("GET",)),
        ("GET", "/v1/gadgets/catalog"): ("/v1/{kind}/catalog", 200, ("GET", "POST")),
        ("GET", "/v1/customers/catalog"): ("/v1/customers/{customer}", 401, ("GET",)),  # earlier in the list
        # a full match anywhere beats an earlier partial one
        ("POST", "/v1/customers/catalog"): ("/v1/{kind}/catalog", 200, ("GET", "POST")),
        ("PUT", "/v1/widgets/w1/"): ("/v1/widgets/{widget}/", 200, ("PUT",)),
        ("PATCH", "/v1/widgets/w1/"): ("/v1/widgets/{widget}/", 405, ("PUT",)),
    }
    for (method, path), (template, status, methods) in cases.items():
        indexed, linear = apps.both(method, path)
        assert indexed == linear, (method, path)
        assert indexed.route is not None, (method, path)
        assert (indexed.route[1], indexed.status, indexed.route[2]) == (template, status, methods), (
            method,
            path,
        )


def test_404_405_and_slash_redirects_answer_as_linear_matching_does(apps: Apps):
    cases = {
        ("GET", "/v1/no-such-thing"): 404,
        ("GET", "/"): 200,  # the front page (api/home.py): the empty path matches like any other
        ("POST", "/"): 405,
        ("GET", "//v1/customers"): 404,
        ("DELETE", "/v1/customers"): 405,
        ("PATCH", "/v1/test-helpers/processor-faults"): 405,  # three routes on this path
        ("GET", "/v1/customers/"): 307,
        ("GET", "/v1/subscriptions/sub_1/"): 307,
        ("POST", "/v1/subscriptions/"): 307,
        ("GET", "/v1/widgets/w1"): 200,
        # `{widget}` (GET) matches the path: a 405, no redirect to the PUT route with the slash
        ("PUT", "/v1/widgets/w1"): 405,
        ("GET", "/v1/widgets/w1/parts/latest/"): 307,
    }
    for (method, path), status in cases.items():
        indexed, linear = apps.both(method, path)
        assert indexed == linear, (method, path)
        assert indexed.status == status, (method, path, indexed)
    # three routes on that path (POST, GET, DELETE): the first partial match answers the 405, and its
    # Allow names the methods of all three (RFC 9110), in both apps
    faults = apps.ask("indexed", "PATCH", "/v1/test-helpers/processor-faults")
    assert faults.route[2] == ("POST",)  # type: ignore[index]
    assert faults.allow == "DELETE, GET, POST"
    assert apps.ask("indexed", "DELETE", "/v1/widgets/search").allow == "GET, POST"  # two templates match
    assert apps.ask("indexed", "GET", "/v1/customers/").location == "http://test/v1/customers"


def test_behind_a_root_path_requests_answer_as_linear_matching_does(apps: Apps):
    for path in (
        "/api/v1/customers",
        "/api/v1/customers/",
        "/api",
        "/api/",
        "/apiv1/customers",
        "/v1/customers",
    ):
        for method in ("GET", "POST"):
            indexed, linear = apps.both(method, path, root_path="/api")
            assert indexed == linear, (method, path)
    indexed, _ = apps.both("POST", "/api/v1/customers", root_path="/api")
    assert indexed.route is not None and indexed.route[1] == "/v1/customers"


def test_openapi_is_the_same_with_the_index(apps: Apps):
    def spec(which: str) -> bytes:
        return apps.runner.run(apps.clients[which][1].get("http://test/openapi.json")).content

    assert spec("indexed") == spec("linear")
    assert len(spec("indexed")) > 100_000


def _literal_segments(app: FastAPI) -> list[str]:
    segments = set()
    for context, _, _ in every_route(app):
        segments |= {s for s in str(context.path_format).split("/") if "{" not in s}
    return sorted(segments)


@pytest.fixture(scope="module")
def segments(apps: Apps) -> list[str]:
    return _literal_segments(apps.indexed)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_generated_paths_answer_as_linear_matching_does(apps: Apps, segments: list[str], data: st.DataObject):
    segment = st.one_of(  # each already percent-encoded as it goes into the URL
        st.sampled_from(segments),
        st.sampled_from(["prm7", "7", "1.5", "", "search", "latest", "%2F", "%41", "a%20b", "%C3%A9"]),
        st.text(st.characters(blacklist_categories=["Cs"]), max_size=6).map(
            lambda text: quote(text, safe="")
        ),
    )
    parts = data.draw(st.lists(segment, min_size=0, max_size=6))
    path = "/" + "/".join(parts)
    method = data.draw(st.sampled_from(METHODS))
    indexed, linear = apps.both(method, path)
    assert indexed == linear, (method, path)


@functools.cache
def _built_index() -> tuple[RouteIndex, list[str]]:
    """An app's route index, built, and the literal segments of its templates (once: create_app is slow)."""
    app = create_app(Settings(database_url="postgresql://unused@127.0.0.1/unused"))
    app.include_router(widgets)
    # a template ending in a literal "/": a twin's walk one step further than its path's
    app.add_api_route("/widgets/all/", _answer, methods=["GET"], include_in_schema=False)
    index = app.router.middleware_stack
    assert isinstance(index, RouteIndex)
    index.view_for({"type": "http", "path": "/", "root_path": ""})  # builds the index
    return index, _literal_segments(app)


@settings(max_examples=500, deadline=None)
@given(data=st.data())
def test_the_one_walk_for_a_path_and_its_slash_twin_finds_the_two_positions_walked_apart(data: st.DataObject):
    """`view_for`'s usual case (no root path, no trailing slash) walks once for both positions."""
    index, literal = _built_index()
    segment = st.one_of(st.sampled_from(literal), st.sampled_from(["x", "7", ""]), st.text(max_size=3))
    parts = data.draw(st.lists(segment, min_size=1, max_size=8))
    path = "/" + "/".join(parts)
    if path.endswith("/"):
        path += "x"
    _assert_one_walk_finds_both(index, path)


@pytest.mark.parametrize("path", ["/widgets/all", "/widgets", "/v1/customers", "/widgets/all/x", "/x"])
def test_the_one_walk_for_chosen_paths_and_their_slash_twins(path: str):
    _assert_one_walk_finds_both(_built_index()[0], path)


def _assert_one_walk_finds_both(index: RouteIndex, path: str) -> None:
    walked_apart = (*index._position(path), *index._position(path + "/"))
    assert index._positions_with_slash_twin(path) == walked_apart, path


def test_a_request_tries_only_the_routes_its_path_can_match():
    app = create_app(Settings(database_url="postgresql://unused@127.0.0.1/unused"))
    index = app.router.middleware_stack
    assert isinstance(index, RouteIndex)
    every = list(iter_route_contexts(app.routes))
    scope = {"type": "http", "method": "GET", "path": "/v1/subscriptions/sub_1", "root_path": ""}
    tried = [str(getattr(candidate, "path_format", "")) for candidate in index.candidates(scope)]
    assert "/v1/subscriptions/{subscription}" in tried
    assert all(template.startswith("/v1/subscriptions/{subscription}") for template in tried), tried
    assert len(tried) <= 10 < len(every)
    scope["path"] = "/v1/no-such-thing"
    assert index.candidates(scope) == []


def test_every_route_of_the_app_is_called_by_the_index_itself():
    """The index's own dispatch (no FastAPI walk, no per-route exception wrapper) reaches every route of
    the app: the comparisons with linear matching above then check its answers."""
    app = create_app(Settings(database_url="postgresql://unused@127.0.0.1/unused"))
    index = app.router.middleware_stack
    assert isinstance(index, RouteIndex)
    routes = every_route(app)
    assert len(routes) >= 150
    reached_directly = 0
    for route_context, path, _ in routes:
        context = route_context._route_context  # the route as its router's inclusion made it
        if not isinstance(context, _EffectiveRouteContext):
            continue  # a route of the app itself (/openapi.json): FastAPI's own dispatch
        scope = {"type": "http", "method": "GET", "path": path, "root_path": ""}
        direct = index._view_for(scope).direct
        assert direct is not None, path
        reached_directly += 1
        (reached,) = [entry for entry in direct if entry.context is context]
        if isinstance(context.original_route, MoneyrailRoute):
            assert reached.app is not context.app, path  # the handler without FastAPI's wrapper
        else:
            assert reached.app is context.app, path
    assert reached_directly >= 140


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


def routing_outcome(status: int, body: bytes | None, location: str | None) -> tuple[Any, ...]:
    """What matching decided, whatever the route then answered: no route, 405, a slash redirect, a route."""
    if status == 404 and body is not None and b"Unrecognized request URL" in body:
        return ("no route",)
    if status in (307, 405):
        return (status, location and urlsplit(location).path)
    return ("a route",)


def test_the_real_server_routes_as_linear_matching_does(apps: Apps, web: WebServer):
    """uvicorn decodes the percent-encoding and passes trailing slashes on: the served app, indexed,
    routes every request as the linear one in this process does. (What a route then answers may differ:
    the sandbox processor of this process has no DATABASE_URL.)"""
    asked: set[tuple[str, str]] = set()
    app = create_app(Settings(database_url="postgresql://unused@127.0.0.1/unused"))  # no widgets
    for _, path, methods in every_route(app):
        asked |= {(method, path) for method in (*methods, "DELETE")}
        if path.startswith(("/v1/customers", "/v1/subscriptions", "/checkout")):
            asked |= {("GET", neighbour) for neighbour in neighbours(path)}
    outcomes = set()
    with httpx.Client() as client:
        for method, path in sorted(asked):
            served = client.request(method, web.base_url + path)
            _, linear = apps.both(method, path)
            outcome = routing_outcome(served.status_code, served.content, served.headers.get("location"))
            assert outcome == routing_outcome(linear.status, linear.error_body, linear.location), (
                method,
                path,
            )
            outcomes.add(outcome[0])
    assert len(asked) > 300
    assert outcomes == {"no route", 405, 307, "a route"}
