"""Route matching that does not walk every route: the app's routes filed by the literal segments
their paths start with.

FastAPI, like Starlette, matches a request by trying every route in order, and an included router
by trying each of its routes (twice: to match, then to handle), so a route's cost grows with its
place in the list, and a 404 pays for every route of the app.

At the first request, after every router is included, `RouteIndex` files each route under the
literal segments its path template starts with (`/v1/customers/{customer}/payment-methods`: under
`v1/customers`, four segments) and builds a trie of those segments. A request's path is walked down
the trie, and FastAPI's own dispatch then runs over a view of the app router holding, in their
original order, only the routes that could match that path or the path with its trailing slash
toggled (which `redirect_slashes` tries). A route left out cannot match either path, so FastAPI's
answer is the one it gives today: the first full match wins, else the first partial match answers
405 with its `Allow`, else the slash redirect, else the low-priority routes, else 404. `app.routes`
is neither reordered nor changed (/openapi.json is built from it), mounts and middleware are
untouched, and the index is rebuilt when a route is added.

This leans on FastAPI's private routing classes (`_IncludedRouter`, `_EffectiveRouteContext`);
tests/api/test_route_index.py compares the indexed dispatch with FastAPI's own for every route, so
an upgrade that changes them fails there, not in production.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, TypeVar

from fastapi import FastAPI
from fastapi.routing import (
    _FASTAPI_EFFECTIVE_ROUTE_CONTEXT_KEY,
    _FASTAPI_INCLUDED_ROUTER_KEY,
    APIRoute,
    APIRouter,
    _apply_router_form_limits,
    _EffectiveRouteContext,
    _get_fastapi_scope,
    _IncludedRouter,
)
from fastapi.telemetry._api import _route_selected
from starlette._utils import get_route_path
from starlette.convertors import FloatConvertor, IntegerConvertor, StringConvertor, UUIDConvertor
from starlette.routing import BaseRoute
from starlette.types import Receive, Scope, Send

# Convertors that match within one path segment: a template made of them and literals matches only
# paths with as many segments as it has. A `path` convertor (a mount) or an unknown one matches any.
ONE_SEGMENT_CONVERTORS = (StringConvertor, IntegerConvertor, FloatConvertor, UUIDConvertor)

Candidate = BaseRoute | _EffectiveRouteContext
# An entry of a route list: the app router's routes, or an included router's candidates
RouteEntry = TypeVar("RouteEntry", BaseRoute, _EffectiveRouteContext | _IncludedRouter)

_routes_version = attrgetter("_routes_version")  # FastAPI's count of an APIRouter's route changes

# Views kept, one per position of a path in the trie (and its slash twin's): far more than requests
# make in practice (about one per route); past it, a view is built per request, about as costly as
# FastAPI's own walk of every route.
MAX_VIEWS = 4096


@dataclass(frozen=True)
class RouteShape:
    """What a route's path template says about the paths it can match."""

    literal_prefix: tuple[str, ...]  # the segments before the first one holding a parameter
    segment_count: int | None  # None: any number (a `path` convertor, or no path template at all)

    @classmethod
    def of(cls, candidate: Candidate) -> RouteShape:
        if isinstance(candidate, _EffectiveRouteContext):
            # a route of an included router: its template carries the include's prefix
            described: object = candidate.starlette_route or candidate
        else:
            described = candidate
        template = getattr(described, "path_format", None)
        convertors = getattr(described, "param_convertors", None)
        if not isinstance(template, str) or not template.startswith("/") or not isinstance(convertors, dict):
            return cls((), None)  # a host route, a frontend group: tried for every path
        segments = template[1:].split("/")
        prefix = segments
        for depth, segment in enumerate(segments):
            if "{" in segment:
                prefix = segments[:depth]
                break
        one_segment_each = all(type(convertor) in ONE_SEGMENT_CONVERTORS for convertor in convertors.values())
        return cls(tuple(prefix), len(segments) if one_segment_each else None)

    def fits(self, position: PathPosition) -> bool:
        walked = position[0].segments
        if walked[: len(self.literal_prefix)] != self.literal_prefix:
            return False
        return self.segment_count is None or self.segment_count == position[1]


class _Node:
    """A literal path segment some route's template starts with (the root: none yet)."""

    __slots__ = ("children", "segments")

    def __init__(self, segments: tuple[str, ...]) -> None:
        self.children: dict[str, _Node] = {}
        self.segments = segments


# Where a path leads in the trie: the deepest node its leading segments reach, and its segment count
# (capped one past the longest template, so that the number of positions is bounded by the routes).
PathPosition = tuple[_Node, int]


class _IncludedRouterView(_IncludedRouter):
    """An included router seen through the index: its routes that can match, in their order.

    FastAPI's own `_IncludedRouter` code matches and handles with it, over these candidates only.
    """

    def __init__(self, whole: _IncludedRouter, candidates: list[_EffectiveRouteContext | _IncludedRouter]):
        super().__init__(original_router=whole.original_router, include_context=whole.include_context)
        self.whole = whole
        self.candidates = candidates

    def effective_candidates(self) -> list[_EffectiveRouteContext | _IncludedRouter]:
        return self.candidates

    def effective_low_priority_routes(self) -> list[_EffectiveRouteContext]:
        return self.whole.effective_low_priority_routes()

    def effective_route_contexts(self) -> Iterator[_EffectiveRouteContext]:
        return self.whole.effective_route_contexts()

    def url_path_for(self, name: str, /, **path_params: Any) -> Any:
        return self.whole.url_path_for(name, **path_params)


@dataclass(frozen=True, slots=True)
class _DirectRoute:
    """A FastAPI route of a router included in the app, as the view's dispatch reaches it."""

    context: _EffectiveRouteContext  # the route as included: its template carries the prefix
    included: _IncludedRouter  # the view's included router holding it
    route: APIRoute
    app: Any  # the context's ASGI app: the route's handler, its body limit (FastAPI builds it once)


@dataclass(frozen=True, slots=True)
class _View:
    router: APIRouter  # the app router over the routes that can match
    # The same routes flattened when every one is a FastAPI route of a router the app included
    # directly (all of moneyrail's): then the first full match is dispatched here (see `__call__`).
    # None: some other kind of route can match, FastAPI's own dispatch decides.
    direct: tuple[_DirectRoute, ...] | None


class RouteIndex:
    """The app router's dispatch for HTTP requests, trying only the routes that can match the path.

    When every route that can match is a FastAPI route of an included router, the first whose path
    and method match is called directly, with the scope FastAPI's dispatch would give it: FastAPI's
    own walk matches each included router twice (`_IncludedRouter.matches`, then `_handle_selected`
    again) through four layers of calls. Anything else (no full match: a 405, a slash redirect, a
    low-priority route, a 404) goes through FastAPI's dispatch of the view, as before.
    """

    def __init__(self, router: APIRouter) -> None:
        self.router = router
        self._built_for: tuple[int, int] | None = None
        self._routers: list[APIRouter] = []
        self._root = _Node(())
        self._longest = 0
        self._low_priority: list[BaseRoute | _EffectiveRouteContext] = []
        self._routes: list[Candidate] = []
        self._shapes: dict[int, RouteShape] = {}  # each of _routes' by its id
        self._views: dict[tuple[_Node, int, _Node, int], _View] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.router.app(scope, receive, send)  # lifespan, websockets: FastAPI's own dispatch
            return
        scope.setdefault("router", self.router)  # url_for and friends see every route, not the view
        view = self._view_for(scope)
        if view.direct is not None:
            route_path = get_route_path(scope)
            method = scope["method"]
            for direct in view.direct:
                context = direct.context
                match = context.path_regex.match(route_path)
                if match is None or (context.methods and method not in context.methods):
                    continue  # a partial match answers only if no route matches fully: FastAPI's below
                # What FastAPI's dispatch leaves in the scope for this route (APIRouter.app,
                # _IncludedRouter.handle and _handle_selected, APIRoute.matches and handle).
                _apply_router_form_limits(scope, self.router.form_limits)
                _apply_router_form_limits(scope, direct.included.include_context.form_limits)
                path_params = dict(scope.get("path_params", {}))
                convertors = context.param_convertors
                for name, value in match.groupdict().items():
                    path_params[name] = convertors[name].convert(value)
                scope["endpoint"] = context.endpoint
                scope["path_params"] = path_params
                scope["route"] = direct.route
                fastapi_scope = _get_fastapi_scope(scope)
                fastapi_scope[_FASTAPI_INCLUDED_ROUTER_KEY] = direct.included
                fastapi_scope[_FASTAPI_EFFECTIVE_ROUTE_CONTEXT_KEY] = context
                if "fastapi.telemetry" in scope:  # FastAPI's own tracing, when an app turns it on
                    _route_selected(scope=scope, path=context.path_format)
                await direct.app(scope, receive, send)
                return
        await view.router.app(scope, receive, send)

    def view_for(self, scope: Scope) -> APIRouter:
        """The app router with only the routes that can match this request's path (or its slash twin)."""
        return self._view_for(scope).router

    def _view_for(self, scope: Scope) -> _View:
        if self._routes_changed():
            self._build()
        path: str = scope["path"]
        if not scope.get("root_path") and path.startswith("/") and not path.endswith("/"):
            key = self._positions_with_slash_twin(path)  # the usual request: one walk for both
        else:
            route_path = get_route_path(scope)
            # the path FastAPI tries for a redirect when nothing matches (APIRouter.app, redirect_slashes)
            twin = path.rstrip("/") if route_path.endswith("/") else path + "/"
            twin_route_path = get_route_path({"path": twin, "root_path": scope.get("root_path", "")})
            key = (*self._position(route_path), *self._position(twin_route_path))
        view = self._views.get(key)
        if view is None:
            view = self._view((key[0], key[1]), (key[2], key[3]))
            if len(self._views) < MAX_VIEWS:  # paths crafted to make new positions cannot fill the memory
                self._views[key] = view
        return view

    def candidates(self, scope: Scope) -> list[Candidate]:
        """The routes a request with this scope tries, flattened, in order (a 405's Allow; tests)."""
        return list(_flattened(self.view_for(scope).routes))

    def _position(self, route_path: str) -> PathPosition:
        if not route_path.startswith("/"):
            return self._root, -1  # no template starting with "/" matches it
        segments = route_path[1:].split("/")
        node = self._root
        for segment in segments:
            child = node.children.get(segment)
            if child is None:
                break
            node = child
        return node, min(len(segments), self._longest + 1)

    def _positions_with_slash_twin(self, path: str) -> tuple[_Node, int, _Node, int]:
        """`_position` of a path (no root path, no trailing slash) and of its twin `path + "/"`, whose
        segments are the path's and one empty one: the same walk, one step further at most."""
        segments = path[1:].split("/")
        node = self._root
        walked_all = True
        for segment in segments:
            child = node.children.get(segment)
            if child is None:
                walked_all = False
                break
            node = child
        twin_node = node.children.get("", node) if walked_all else node
        cap = self._longest + 1
        return node, min(len(segments), cap), twin_node, min(len(segments) + 1, cap)

    def _view(self, *positions: PathPosition) -> _View:
        def fits(candidate: Candidate) -> bool:
            shape = self._shapes.get(id(candidate)) or RouteShape.of(candidate)
            return any(shape.fits(position) for position in positions)

        view = copy.copy(self.router)
        view.routes = _pruned(self.router.routes, fits)
        # the low-priority routes (frontends), whole: FastAPI finds them through every included router
        view._iter_low_priority_routes = self._low_priority_routes  # type: ignore[method-assign]
        return _View(view, _direct_routes(view.routes))

    def _low_priority_routes(self) -> Iterator[BaseRoute | _EffectiveRouteContext]:
        return iter(self._low_priority)

    def _routes_changed(self) -> bool:
        return self._built_for != self._fingerprint()

    def _fingerprint(self) -> tuple[int, int]:
        # FastAPI counts route changes per APIRouter; a route appended to app.routes directly (a mount)
        # changes its length
        return len(self.router.routes), sum(map(_routes_version, self._routers))

    def _build(self) -> None:
        self._routers = list(_routers(self.router))
        self._root = _Node(())
        self._longest = 0
        self._routes = list(_flattened(self.router.routes))  # held, so that their ids stay theirs
        self._shapes = {}
        for candidate in self._routes:
            shape = self._shapes[id(candidate)] = RouteShape.of(candidate)
            node = self._root
            for segment in shape.literal_prefix:
                node = node.children.setdefault(segment, _Node((*node.segments, segment)))
            self._longest = max(self._longest, shape.segment_count or 0)
        self._low_priority = list(self.router._iter_low_priority_routes())
        self._views = {}
        self._built_for = self._fingerprint()


def install_route_index(app: FastAPI) -> RouteIndex:
    """Match the app's HTTP requests through a `RouteIndex`; call after the app's routes are declared
    (routes added later are indexed too, at their first request)."""
    router = app.router
    if router.middleware_stack != router.app:
        raise RuntimeError(
            "the app router wraps its dispatch in middleware, which the route index would skip"
        )
    index = RouteIndex(router)
    router.middleware_stack = index
    return index


def allowed_methods(router: APIRouter, scope: Scope) -> list[str]:
    """Every method a route of `router` answers at this request's path, sorted: a 405's `Allow`.

    FastAPI's own `Allow` names the methods of the first route whose path matched, and a path served
    by several routes (GET, POST and DELETE on `/v1/test-helpers/processor-faults`) has more; RFC 9110
    asks for all the target resource supports. Asks the index, when the router has one, for the few
    routes that can match the path; else walks every route.
    """
    index = router.middleware_stack
    candidates = index.candidates(scope) if isinstance(index, RouteIndex) else _flattened(router.routes)
    route_path = get_route_path(scope)
    methods: set[str] = set()
    for candidate in candidates:
        described = (
            candidate.starlette_route or candidate
            if isinstance(candidate, _EffectiveRouteContext)
            else candidate
        )
        path_regex = getattr(described, "path_regex", None)
        if path_regex is not None and path_regex.match(route_path):
            methods |= getattr(described, "methods", None) or set()
    return sorted(methods)


def _direct_routes(routes: list[BaseRoute]) -> tuple[_DirectRoute, ...] | None:
    """The view's routes for `RouteIndex.__call__`'s own dispatch, or None when one is of another kind
    (a route of the app itself, a router included in an included router, a mount, a Starlette route)."""
    direct: list[_DirectRoute] = []
    for included in routes:
        if not isinstance(included, _IncludedRouter):
            return None
        for candidate in included.effective_candidates():
            if (
                not isinstance(candidate, _EffectiveRouteContext)
                or not isinstance(candidate.original_route, APIRoute)
                or candidate.app is None
            ):
                return None
            route = candidate.original_route
            app_for = getattr(route, "asgi_app_for", None)  # MoneyrailRoute's (api/routing.py)
            app = (app_for(candidate) if app_for is not None else None) or candidate.app
            direct.append(_DirectRoute(candidate, included, route, app))
    return tuple(direct)


def _pruned(candidates: list[RouteEntry], fits: Callable[[Candidate], bool]) -> list[RouteEntry]:
    """The candidates that fit, in order; an included router becomes a view of its fitting ones (none
    fit: left out)."""
    kept: list[RouteEntry] = []
    for candidate in candidates:
        if isinstance(candidate, _IncludedRouter):
            fitting = _pruned(candidate.effective_candidates(), fits)
            if fitting:
                kept.append(_IncludedRouterView(candidate, fitting))
        elif fits(candidate):
            kept.append(candidate)
    return kept


def _flattened(
    routes: list[BaseRoute] | list[_EffectiveRouteContext | _IncludedRouter],
) -> Iterator[Candidate]:
    for route in routes:
        if isinstance(route, _IncludedRouter):
            yield from _flattened(route.effective_candidates())
        else:
            yield route


def _routers(router: APIRouter, seen: set[int] | None = None) -> Iterator[APIRouter]:
    seen = set() if seen is None else seen
    if id(router) in seen:
        return
    seen.add(id(router))
    yield router
    for route in router.routes:
        if isinstance(route, _IncludedRouter):
            yield from _routers(route.original_router, seen)
