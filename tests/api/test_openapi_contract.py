"""The OpenAPI document tells the truth and is complete (issue 14, CONVENTIONS.md §1).

Every route of the real app is walked, so a route added later without a summary, a description,
documented statuses, field descriptions or a body example fails here.
"""

from __future__ import annotations

import inspect
import json
import re
from typing import Annotated, Any

import httpx
import pytest
from fastapi import APIRouter
from fastapi.routing import APIRoute, iter_route_contexts
from pydantic import ConfigDict, Field

from moneyrail.api.context import Principal
from moneyrail.api.idempotency import KEY_REQUIRED_PREFIXES
from moneyrail.api.middleware import api_of
from moneyrail.api.openapi import CHARGES_CARD
from moneyrail.api.routing import MoneyrailRoute, scoped
from moneyrail.app import create_app
from moneyrail.config import Settings
from moneyrail.kit.schemas import RequestBody
from tests.harness import TLS
from tests.helpers import assert_error

APP = create_app(Settings(database_url="postgresql://unused@127.0.0.1/unused"))
SPEC = APP.openapi()
SCOPE_LINE = "**Scope:**"


def documented_routes() -> list[tuple[APIRoute, str, str]]:
    found = []
    for context in iter_route_contexts(APP.routes):
        route = context.original_route
        if isinstance(route, APIRoute) and route.include_in_schema:
            found.extend(
                (route, method, str(context.path_format)) for method in sorted(context.methods or ())
            )
    return found


ROUTES = documented_routes()
IDS = [f"{method} {path}" for _, method, path in ROUTES]


def resolve(node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = SPEC["components"]["schemas"][node["$ref"].rsplit("/", 1)[-1]]
    return node


def test_the_walk_sees_every_documented_operation():
    documented = sum(len(item) for item in SPEC["paths"].values())
    assert len(ROUTES) == documented >= 40


@pytest.mark.parametrize(("route", "method", "path"), ROUTES, ids=IDS)
def test_every_operation_has_its_own_summary_and_description(route, method, path):
    operation = SPEC["paths"][path][method.lower()]
    docstring = inspect.cleandoc(route.endpoint.__doc__ or "")
    assert route.summary or docstring, "give the endpoint a docstring: a summary line, then a description"
    assert operation["summary"]
    own_description = operation["description"].split(SCOPE_LINE)[0].strip()
    assert own_description, "the docstring needs a description after its summary line"
    assert own_description != operation["summary"]


@pytest.mark.parametrize(("route", "method", "path"), ROUTES, ids=IDS)
def test_every_operation_documents_its_statuses_with_the_error_envelope(route, method, path):
    operation = SPEC["paths"][path][method.lower()]
    statuses = {int(status) for status in operation["responses"]}
    assert any(200 <= status < 300 for status in statuses)
    errors = {status for status in statuses if status >= 400}
    assert errors, "an operation that cannot fail is not documented truthfully"
    gated = "x-scope" in operation
    if gated:
        assert {401, 429} <= errors
        assert operation["description"].count(f"`{operation['x-scope']}`") == 1
    if "{" in path:
        assert 404 in errors
    if api_of(path) is not None:
        assert 400 in errors
    if 422 in errors:
        assert method in {"POST", "DELETE"}  # 422 is the idempotency store's only
    for status in errors:
        response = operation["responses"][str(status)]
        assert response["description"]
        assert "Request-Id" in response["headers"]
        if status == 429:
            assert response["headers"]["Retry-After"]["required"] is True
        if api_of(path) is not None:
            assert response["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Error"}


def test_the_error_envelope_is_a_named_schema_and_fastapis_422_is_gone():
    error = SPEC["components"]["schemas"]["Error"]
    detail = resolve(error["properties"]["error"])
    assert {"type", "code", "message", "param", "request_id"} <= set(detail["required"])
    text = json.dumps(SPEC)
    assert "HTTPValidationError" not in text
    assert "ValidationError" not in SPEC["components"]["schemas"]


def test_card_charging_routes_document_402_and_503():
    for path in (
        "/v1/payment-intents/{payment_intent}/confirm",
        "/v1/payment-intents/{payment_intent}/capture",
        "/v1/setup-intents/{setup_intent}/confirm",
    ):
        assert {"402", "503"} <= set(SPEC["paths"][path]["post"]["responses"]), path
    assert "402" not in SPEC["paths"]["/v1/customers"]["post"]["responses"]


@pytest.mark.parametrize(("route", "method", "path"), ROUTES, ids=IDS)
def test_headers_idempotency_key_and_service_version_are_documented(route, method, path):
    operation = SPEC["paths"][path][method.lower()]
    headers = {p["name"]: p for p in operation.get("parameters", []) if p["in"] == "header"}
    if api_of(path) is not None:
        assert "Service-Version" in headers
        for status, response in operation["responses"].items():
            assert response["headers"]["Service-Version"]["required"] is True, status
    if method in {"POST", "DELETE"} and "x-scope" in operation:
        key = headers["Idempotency-Key"]
        assert key["required"] is (method == "POST" and path.startswith(KEY_REQUIRED_PREFIXES))
    else:
        assert "Idempotency-Key" not in headers


@pytest.mark.parametrize(("route", "method", "path"), ROUTES, ids=IDS)
def test_every_parameter_is_described_and_every_body_has_an_example(route, method, path):
    operation = SPEC["paths"][path][method.lower()]
    for parameter in operation.get("parameters", []):
        assert parameter.get("description"), parameter["name"]
    body = operation.get("requestBody")
    if body is not None:
        # JSON bodies, and the multipart upload of dispute evidence: each kind needs its example
        media = body["content"].get("application/json") or body["content"]["multipart/form-data"]
        schema = resolve(media["schema"]) if "$ref" in media["schema"] else media["schema"]
        if "anyOf" in schema:  # an optional body: the model beside null
            schema = resolve(next(option for option in schema["anyOf"] if "$ref" in option))
        assert media.get("example") or media.get("examples") or schema.get("examples"), "add a body example"


def _properties(schema: dict[str, Any]) -> dict[str, Any]:
    return schema.get("properties", {})


@pytest.mark.parametrize("name", sorted(SPEC["components"]["schemas"]))
def test_every_field_of_every_schema_has_a_description(name):
    schema = SPEC["components"]["schemas"][name]
    missing = [field for field, spec in _properties(schema).items() if not spec.get("description")]
    assert not missing, f"{name}: describe {missing}"


# CONVENTIONS.md §9: every answer whose effect runs on a worker names its operation (an `op_` id, as a
# refund's answer does), or is the operation itself (a 202)
NAMES_ITS_OPERATION = [
    "/v1/transfers",
    "/v1/refunds",
    "/v1/payouts",
    "/v1/connected-accounts/{connected_account}/payouts",
    "/v1/payouts/{payout}/reverse",
    "/v1/reconciliation-runs",
    "/v1/webhook-endpoints/{webhook_endpoint}/deliveries/{delivery}/resend",
]
IS_ITS_OPERATION = [
    "/v1/allocation-groups/{allocation_group}/commit",
    "/v1/subscriptions/{subscription}/sync",
]


def answer_schema(path: str) -> dict[str, Any]:
    responses = SPEC["paths"][path]["post"]["responses"]
    status = "202" if "202" in responses else "200"
    return resolve(responses[status]["content"]["application/json"]["schema"])


@pytest.mark.parametrize("path", NAMES_ITS_OPERATION)
def test_an_answer_that_starts_work_on_a_worker_names_its_operation(path):
    schema = answer_schema(path)
    assert "operation" in schema["properties"] and "operation" in schema["required"]


@pytest.mark.parametrize("path", IS_ITS_OPERATION)
def test_a_202_answer_is_the_operation_it_started(path):
    assert answer_schema(path)["properties"]["object"]["const"] == "operation"


def test_an_invoice_sent_names_each_deliverys_operation():
    deliveries = answer_schema("/v1/invoices/{invoice}/send")["properties"]["deliveries"]
    assert "operation" in resolve(deliveries["items"])["properties"]


@pytest.mark.parametrize(
    "name", ["TransferOut", "AllocationGroupOut", "PayoutOut", "RefundOut", "SubscriptionInvoiceOut"]
)
def test_an_object_moved_by_an_operation_shows_its_last_error(name):
    """Final means final (CONVENTIONS.md §9): the object stays pending and shows the error apart."""
    schema = SPEC["components"]["schemas"][name]
    assert "last_operation_error" in schema["required"]
    error = SPEC["components"]["schemas"]["OperationErrorOut"]
    assert set(error["properties"]) == {"code", "message", "at"}


def test_the_served_document_is_the_derived_one(web):
    served = httpx.get(f"{web.base_url}/openapi.json", verify=TLS)
    assert served.status_code == 200
    assert served.json()["paths"].keys() == SPEC["paths"].keys()


def test_the_docs_load_their_assets_from_this_server_not_a_cdn(web):
    html = httpx.get(f"{web.base_url}/docs", verify=TLS).text
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html), html
    assets = re.findall(r"""(?:src|href)=["']?(/[^"' >]+)""", html)
    assert any(asset.endswith(".js") for asset in assets), html
    for asset in assets:
        loaded = httpx.get(f"{web.base_url}{asset}", verify=TLS)
        assert loaded.status_code == 200, asset
        assert len(loaded.content) > 1000, asset


def test_a_live_key_on_a_sandbox_helper_gets_the_documented_404(make_api):
    live = make_api(livemode=True)
    assert "404" in SPEC["paths"]["/v1/test-helpers/clock"]["get"]["responses"]
    assert_error(live.get("/v1/test-helpers/clock"), 404, "resource_missing")


class WidgetPolish(RequestBody):
    model_config = ConfigDict(json_schema_extra={"examples": [{"shine": 3}]})

    shine: int = Field(description="How much")


widgets = APIRouter(route_class=MoneyrailRoute)


@widgets.post("/widgets/{widget}/polish")
async def polish_widget(
    widget: str, body: WidgetPolish, principal: Annotated[Principal, scoped("commerce:write")]
) -> dict[str, str]:
    """Polish a widget.

    Makes it shine.
    """
    return {}


@widgets.post("/subscriptions/{subscription}/renew", responses=CHARGES_CARD)
async def renew_now(
    subscription: str, principal: Annotated[Principal, scoped("billing:write")]
) -> dict[str, str]:
    """Renew now.

    Charges the saved card.
    """
    return {}


def test_a_new_route_that_follows_the_patterns_is_documented_without_extra_work():
    app = create_app(Settings(database_url="postgresql://unused@127.0.0.1/unused"))
    app.include_router(widgets, prefix="/commerce/v1")
    app.include_router(widgets, prefix="/v1")
    spec = app.openapi()

    polish = spec["paths"]["/commerce/v1/widgets/{widget}/polish"]["post"]
    assert set(polish["responses"]) == {"200", "400", "401", "403", "404", "409", "413", "422", "429", "503"}
    headers = {p["name"]: p for p in polish["parameters"] if p["in"] == "header"}
    assert headers["Service-Version"]["schema"]["enum"] == ["2026-09-04"]  # the commerce API's
    assert headers["Idempotency-Key"]["required"] is False
    assert polish["x-scope"] == "commerce:write"
    assert polish["summary"] == "Polish a widget"

    # a POST under /v1/subscriptions must carry a key (§4); the marker adds 402 and 503
    renew = spec["paths"]["/v1/subscriptions/{subscription}/renew"]["post"]
    assert {"402", "503"} <= set(renew["responses"])
    headers = {p["name"]: p for p in renew["parameters"] if p["in"] == "header"}
    assert headers["Idempotency-Key"]["required"] is True
    assert "413" not in renew["responses"]  # no body


@pytest.mark.parametrize(
    "path", ["/v1/payment-intents/{payment_intent}/confirm", "/v1/setup-intents/{setup_intent}/confirm"]
)
def test_a_client_side_confirm_documents_both_shapes_of_card(path):
    """CONVENTIONS.md §6: typed digits on the sandbox simulator, Stripe.js's token wherever Stripe runs."""
    media = SPEC["paths"][path]["post"]["requestBody"]["content"]["application/json"]
    body = resolve(media["schema"])
    assert {"card", "card_token"} <= set(body["properties"])
    for words in ("`card`", "sandbox simulator only", "`card_token`", "Stripe.js", "every live environment"):
        assert words in body["description"], words
    shapes = [set(example) - {"client_secret"} for example in body["examples"]]
    assert shapes == [{"card"}, {"card_token"}]
    assert "exclusive with `card_token`" in body["properties"]["card"]["description"]
