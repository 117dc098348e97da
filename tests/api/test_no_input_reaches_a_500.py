"""No input reaches a 500 (issue 14): text PostgreSQL cannot store is refused in one place, and
arbitrary JSON posted to every write route of the app answers in the error envelope, never 5xx."""

from __future__ import annotations

import copy
import functools
import json
import re
import socket
import typing
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi.routing import APIRoute, iter_route_contexts
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from moneyrail.api.routing import publishable_key_gate
from moneyrail.app import create_app
from moneyrail.config import Settings
from tests.checkout.support import card_form, create_session, enable_checkout, token_of
from tests.harness import TLS, create_tenant
from tests.helpers import assert_error, count_rows

WRITE_METHODS = {"POST", "PUT", "PATCH", "DELETE"}


# -- the shared refusal, field by field ----------------------------------------------------------


def test_a_nul_in_a_metadata_key_is_refused_naming_the_field_and_nothing_is_written(api, db):
    response = api.post("/v1/customers", json={"metadata": {"a\u0000": "x"}})
    assert_error(response, 400, "parameter_invalid", "metadata[a\\u0000]")
    assert count_rows(db, "customers", api.keys.installation_id) == 0


def test_a_nul_in_a_nested_value_is_refused_naming_the_field(api):
    response = api.post("/v1/customers", json={"name": "ok", "metadata": {"k": "v\u0000"}})
    assert_error(response, 400, "parameter_invalid", "metadata[k]")


def test_a_lone_surrogate_is_refused_naming_the_field(api, db):
    # httpx cannot encode a lone surrogate; the JSON escape is what a fuzzer or a broken client sends
    response = api.post(
        "/v1/customers", content=b'{"name": "a\\ud800b"}', headers={"Content-Type": "application/json"}
    )
    assert_error(response, 400, "parameter_invalid", "name")
    assert count_rows(db, "customers", api.keys.installation_id) == 0


def test_a_lone_surrogate_in_a_list_item_is_refused_with_its_index(api):
    response = api.post(
        "/v1/webhook-endpoints",
        content=b'{"url": "https://example.com/h", "enabled_events": ["\\udfff"]}',
        headers={"Content-Type": "application/json"},
    )
    assert_error(response, 400, "parameter_invalid", "enabled_events[0]")


def test_a_nul_in_a_path_id_is_refused_naming_the_path_parameter(api):
    assert_error(api.get("/v1/customers/cus_%00"), 400, "parameter_invalid", "customer")


def test_a_nul_in_a_query_parameter_is_refused_naming_it(api):
    response = api.get("/v1/payment-intents", params={"customer": "cus_\u0000"})
    assert_error(response, 400, "parameter_invalid", "customer")


def test_a_nul_in_a_header_never_reaches_the_app(web, tenant):
    # httpx refuses to send it, so a raw request: the server or the guard refuses it, never a 5xx
    host, port = web.base_url.removeprefix("http://").split(":")
    request = (
        f"GET /v1/customers HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {tenant.secret}\r\n"
        "Idempotency-Key: a\x00b\r\nConnection: close\r\n\r\n"
    ).encode("latin-1")
    with socket.create_connection((host, int(port)), timeout=10) as connection:
        connection.sendall(request)
        status_line = connection.makefile("rb").readline()
    assert re.match(rb"HTTP/1\.1 400 ", status_line), status_line


def test_a_nul_in_a_hosted_page_form_post_is_refused_naming_the_field(web, api, bridge):
    enable_checkout(bridge, api.keys)
    payment = api.post("/v1/payment-intents", json={"amount": 1000, "currency": "eur"}).json()
    token = token_of(create_session(api, payment["id"]))
    response = httpx.post(
        f"{web.base_url}/checkout/{token}",
        data=card_form("4242424242424242\u0000"),
        follow_redirects=False,
        verify=TLS,
    )
    assert_error(response, 400, "parameter_invalid", "card_number")
    assert api.get(f"/v1/payment-intents/{payment['id']}").json()["status"] == "requires_payment_method"


@pytest.mark.parametrize("url", ["http://[::1", "http://example.com:99999/", "https://example.com:port/"])
def test_a_url_that_cannot_be_taken_apart_is_a_400_naming_the_field(api, bridge, url):
    assert_error(
        api.post("/v1/webhook-endpoints", json={"url": url, "enabled_events": ["*"]}),
        400,
        "parameter_invalid",
        "url",
    )
    enable_checkout(bridge, api.keys)
    payment = api.post("/v1/payment-intents", json={"amount": 1000, "currency": "eur"}).json()
    response = api.post(
        "/v1/checkout-sessions",
        json={"payment_intent": payment["id"], "title": "t", "success_url": url, "cancel_url": url},
    )
    assert_error(response, 400, "parameter_invalid", "success_url")


def test_a_body_nested_beyond_reason_is_a_400(api):
    response = api.post(
        "/v1/customers",
        content=b'{"metadata": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        headers={"Content-Type": "application/json"},
    )
    assert_error(response, 400, "parameter_invalid")


def test_a_body_that_is_not_utf8_is_a_400(api):
    response = api.post(
        "/v1/customers", content=b'{"name": "\xff\xfe"}', headers={"Content-Type": "application/json"}
    )
    assert_error(response, 400, "parameter_invalid")


def test_a_body_over_the_size_cap_is_a_413(api):
    response = api.post(
        "/v1/customers",
        content=b'{"name": "' + b"x" * (1024 * 1024) + b'"}',
        headers={"Content-Type": "application/json"},
    )
    assert_error(response, 413, "request_too_large")


# -- the property: arbitrary JSON to every write route -------------------------------------------


def _uses_publishable_key(dependant: Any) -> bool:
    return any(
        dependency.call is publishable_key_gate or _uses_publishable_key(dependency)
        for dependency in dependant.dependencies
    )


def _field_names(annotation: Any) -> set[str]:
    """Every field name of a body model, nested models included."""
    names: set[str] = set()
    for candidate in typing.get_args(annotation) or (annotation,):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            for name, field in candidate.model_fields.items():
                names |= {name, *_field_names(field.annotation)}
        elif typing.get_args(candidate):
            names |= _field_names(candidate)
    return names


def _example(annotation: Any) -> str | None:
    """The body model's first documented example, as JSON (hashable, for the strategy cache)."""
    for candidate in typing.get_args(annotation) or (annotation,):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            examples = candidate.model_json_schema().get("examples") or [None]
            return json.dumps(examples[0]) if examples[0] else None
    return None


def write_routes() -> list[tuple[str, str, bool, tuple[str, ...], str | None]]:
    """(method, path template, client side, body field names, body example) of every write route the
    app has, documented or not."""
    app = create_app(Settings(database_url="postgresql://unused@127.0.0.1/unused"))
    found = []
    for context in iter_route_contexts(app.routes):
        route = context.original_route
        if not isinstance(route, APIRoute):
            continue
        client_side = _uses_publishable_key(route.dependant)
        names: set[str] = set()
        example = None
        for parameter in route.dependant.body_params:
            names |= {parameter.name, *_field_names(parameter.field_info.annotation)}
            example = example or _example(parameter.field_info.annotation)
        for method in sorted((context.methods or set()) & WRITE_METHODS):
            found.append((method, str(context.path_format), client_side, tuple(sorted(names)), example))
    return found


WRITE_ROUTES = write_routes()


def test_the_route_walk_sees_the_write_routes():
    assert len(WRITE_ROUTES) >= 20
    routes = {(method, path): names for method, path, _, names, _ in WRITE_ROUTES}
    examples = [example for *_, example in WRITE_ROUTES if example is not None]
    assert len(examples) >= 15  # near-valid bodies start from the documented examples
    assert {"email", "metadata"} <= set(routes["POST", "/v1/customers"])
    assert {"client_secret", "number"} <= set(routes["POST", "/v1/payment-intents/{payment_intent}/confirm"])
    assert "card_number" in routes["POST", "/checkout/{token}"]  # hosted pages' forms too


@pytest.fixture(scope="module")
def fuzz_target(web, bridge) -> dict[str, Any]:
    """One tenant with a real object for each path parameter the routes name, so bodies get past 404."""
    keys = create_tenant(bridge)
    enable_checkout(bridge, keys)
    with httpx.Client(
        base_url=web.base_url, headers={"Authorization": f"Bearer {keys.secret}"}, verify=TLS
    ) as api:
        customer = api.post("/v1/customers", json={"email": "fuzz@example.com"}).json()
        payment = api.post("/v1/payment-intents", json={"amount": 5000, "currency": "eur"}).json()
        checkout = api.post(
            "/v1/checkout-sessions",
            json={
                "payment_intent": api.post(
                    "/v1/payment-intents", json={"amount": 700, "currency": "eur"}
                ).json()["id"],
                "title": "fuzz",
                "success_url": "https://shop.example/checkout/success",
                "cancel_url": "https://shop.example/checkout/cancel",
            },
        ).json()
        setup = api.post(f"/v1/customers/{customer['id']}/setup-intents", json={}).json()
        endpoint = api.post(
            "/v1/webhook-endpoints", json={"url": "http://127.0.0.1:9/hook", "enabled_events": ["*"]}
        ).json()
    ids = {
        "customer": customer["id"],
        "payment_intent": payment["id"],
        "checkout_session": checkout["id"],
        "setup_intent": setup["id"],
        "webhook_endpoint": endpoint["id"],
        "token": token_of(checkout),
    }
    return {"keys": keys, "ids": ids}


WITH_NUL = st.builds(lambda before, after: f"{before}\u0000{after}", st.text(max_size=4), st.text(max_size=4))
JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
    | WITH_NUL
    | st.sampled_from(["", "eur", "4242424242424242", "cus_x", "https://example.com", "\ud800"])
    # values that broke, or could break, something past validation: URLs that cannot be split,
    # integers past BIGINT, floats at the edge, long text
    | st.sampled_from(
        ["http://[::1", "https://x:99999/", "x" * 10_000, 2**63, -(2**63) - 1, 2**64, 1e308, -0.0]
    )
)


@functools.cache
def bodies(field_names: tuple[str, ...]) -> st.SearchStrategy[Any]:
    """Arbitrary JSON, keyed mostly by the route's own field names so it gets past `parameter_unknown`."""
    keys = (st.sampled_from(field_names) if field_names else st.nothing()) | st.text(max_size=8) | WITH_NUL
    values = st.recursive(
        JSON_SCALARS,
        lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=5),
        max_leaves=12,
    )
    return st.dictionaries(keys, values, max_size=6) | values


def _paths(value: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], bool]]:
    """(path, is an object) of every node of a JSON value."""
    yield at, isinstance(value, dict)
    children = (
        value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    )
    for key, child in children:
        yield from _paths(child, (*at, key))


def _with(document: Any, path: tuple[Any, ...], value: Any) -> Any:
    changed = copy.deepcopy(document)
    if not path:
        return value
    parent = changed
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    return changed


@functools.cache
def near_valid(example_json: str, field_names: tuple[str, ...]) -> st.SearchStrategy[Any]:
    """The route's documented example with one part replaced or one key added: bodies that pass
    validation except where they carry what the fuzz is after (a NUL, a huge number, a wrong type)."""
    example = json.loads(example_json)
    nodes = list(_paths(example))
    objects = [path for path, is_object in nodes if is_object]
    replaced = st.builds(_with, st.just(example), st.sampled_from([path for path, _ in nodes]), JSON_SCALARS)
    keys = st.sampled_from(field_names) if field_names else st.text(max_size=8)
    added = st.builds(
        lambda path, key, value: _with(example, (*path, key), value),
        st.sampled_from(objects),
        keys | WITH_NUL,
        JSON_SCALARS,
    )
    return replaced | added if objects else replaced


def _with_real_ids(example_json: str, ids: dict[str, str]) -> str:
    """Placeholder ids of an example (`pi_000…`) become the fuzz tenant's real objects of that name."""
    example = json.loads(example_json)
    if isinstance(example, dict):
        example = {
            key: ids.get(key, value) if isinstance(value, str) else value for key, value in example.items()
        }
    return json.dumps(example)


def _concrete(path: str, ids: dict[str, str]) -> str:
    return re.sub(r"\{([^}]+)\}", lambda match: ids.get(match.group(1), "x_000000000000000000000000"), path)


@pytest.mark.parametrize(
    ("method", "path", "client_side", "field_names", "example"),
    WRITE_ROUTES,
    ids=[f"{m} {p}" for m, p, *_ in WRITE_ROUTES],
)
@settings(
    max_examples=40,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_arbitrary_json_to_a_write_route_never_answers_5xx(
    web, fuzz_target, method, path, client_side, field_names, example, data
):
    strategy = bodies(field_names)
    if example is not None:
        strategy = near_valid(_with_real_ids(example, fuzz_target["ids"]), field_names) | strategy
    body = data.draw(strategy, label="body")
    keys = fuzz_target["keys"]
    key = keys.publishable_key if client_side else keys.secret
    response = httpx.request(
        method,
        web.base_url + _concrete(path, fuzz_target["ids"]),
        content=json.dumps(body).encode(),  # ASCII escapes, so lone surrogates travel as a client sends them
        headers={
            "Authorization": f"Bearer {key}",
            "Idempotency-Key": uuid.uuid4().hex,
            "Content-Type": "application/json",
        },
        timeout=30,
        verify=TLS,
    )
    assert response.status_code < 500, (method, path, body, response.text)
