"""`/openapi.json` told truthfully, derived from what each route declares (CONVENTIONS.md §1).

FastAPI writes the paths, bodies and models; this module then adds, for every operation, what the
shared machinery makes true of it, so a new route that follows the usual pattern is documented
without extra work:

- the statuses it can answer, each with the error envelope (`Error`) as a named schema:
  400 everywhere (the input guard; parameters, `Service-Version`, `Idempotency-Key`), 401 and 429 behind the
  key gate, 403 behind a secret key's scope, 404 with a path id (and on sandbox-only helpers),
  409 and 422 on POST and DELETE (the idempotency store), 413 with a body (the input guard's cap),
  503 behind the key gate (the database unreachable), always with `Retry-After`,
  and whatever the route declares itself: `responses=CHARGES_CARD` (402, 403, 503), `CALLS_PROCESSOR`
  (403, 503) or `NEEDS_PROCESSOR` (403 `processor_not_configured` in live mode);
- the `Service-Version` and `Idempotency-Key` request headers (the key required where §4 says);
- the `Request-Id` and `Service-Version` response headers;
- the route's scope, in its description and as `x-scope`;
- a description for path ids that name one;
- a stable `operationId` and one tag per resource, by the naming convention below.

Names (`operation_name`): an operation is `<resource>_<action>`, so generated clients read well
(`client.payment_intents.capture`, `PaymentIntentsApi.payment_intents_capture`). The resource is the
path's words without its ids (dashes as underscores, `commerce_`/`fiscal_` before the commerce and fiscal
APIs' paths); the action is `list` for a GET that answers a list and `retrieve` for any other GET,
`update` for a POST to an object's id, `create` for a POST to a collection (a plural noun) and the
action's own word for a POST to one (`payment_intents_confirm`, `test_helpers_clock_advance`), `delete`
for a DELETE. A route may declare `operation_id=` itself where the rule would read badly. The tag is the
resource's first noun (the first two under `radar`), so every operation of a tag starts with its name:
`payment_intents_*` is tagged `payment intents`. tests/api/test_operation_names.py pins them.

FastAPI's 422 `HTTPValidationError` is removed: validation answers 400 in the envelope.
No operation lists 405: a method a path does not list answers 405 with `Allow` naming the path's
listed methods (api/errors.py; tests/api/test_unsupported_methods.py), which is not an answer of any
documented operation, and OpenAPI has no responses per path.
`/docs` loads Swagger UI from the installed `fastapi-offline` package, not a CDN. There is no `/redoc`:
ReDoc's bundle fetches its logo from Redocly's CDN.
"""

from __future__ import annotations

import inspect
from importlib.resources import files
from typing import Any

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse
from fastapi.routing import APIRoute, iter_route_contexts
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field

from moneyrail.api.idempotency import HEADER as IDEMPOTENCY_HEADER
from moneyrail.api.idempotency import IDEMPOTENT_METHODS, KEY_REQUIRED_PREFIXES, MAX_KEY_LENGTH
from moneyrail.api.middleware import API_PREFIXES, api_of
from moneyrail.config import API_VERSIONS

Responses = dict[int | str, dict[str, Any]]

STATUS_MEANINGS: dict[int, str] = {
    400: "Invalid request (`invalid_request_error`): a parameter missing, unknown or invalid "
    "(`parameter_missing`, `parameter_unknown`, `parameter_invalid`, `amount_invalid`, `currency_invalid`), "
    "an id in the body that names nothing (`resource_missing`), an unsupported `Service-Version` "
    "(`unsupported_version`), or an `Idempotency-Key` missing where required or malformed.",
    401: "No API key, an unknown or revoked key, or the wrong kind of key for this route "
    "(`authentication_error`).",
    402: "The card network refused the card or the step (`card_error`, `card_declined` with "
    "`decline_code`). A recorded decline is kept on the payment.",
    403: "The API key lacks this route's scope (`permission_error`, `insufficient_scope`), or the feature "
    "is not enabled for this environment.",
    404: "No such object for this installation and environment (`resource_missing`); an id of another "
    "installation answers exactly the same.",
    409: "The object is not in a state that allows this (`resource_state_invalid`), or a request with the "
    "same `Idempotency-Key` is still in flight (`idempotency_key_in_use`).",
    413: "The request body is larger than the service accepts (`request_too_large`).",
    422: "The `Idempotency-Key` was already used with another method, path or body "
    "(`idempotency_error`, `idempotency_key_reused`). Only idempotency answers 422.",
    429: "Too many requests for this key (`rate_limit_error`, `rate_limited`); retry after `Retry-After`.",
    503: "A dependency did not answer (`api_error`): the card network (`processor_unavailable`: nothing "
    "was decided) or the database (`service_unavailable`); retry after `Retry-After` with the same "
    "`Idempotency-Key`.",
}
PROCESSOR_NOT_CONFIGURED = (
    " In live mode, also when no processor is configured for the environment (`permission_error`, "
    "`processor_not_configured`): live mode never simulates, and nothing was recorded."
)

# Markers a route declares with `responses=`, for what the shared machinery cannot see.
NEEDS_PROCESSOR: Responses = {403: {"description": STATUS_MEANINGS[403] + PROCESSOR_NOT_CONFIGURED}}
"""The route starts work that only a processor can carry out (a payment, a refund, a transfer, a
payout): a live environment with none refuses it (403 `processor_not_configured`)."""
CALLS_PROCESSOR: Responses = {**NEEDS_PROCESSOR, 503: {"description": STATUS_MEANINGS[503]}}
"""The route calls the processor synchronously: the processor may not answer (503), and a live
environment with none refuses it (403)."""
CHARGES_CARD: Responses = {**CALLS_PROCESSOR, 402: {"description": STATUS_MEANINGS[402]}}
"""The route asks the card network to act on a card: it may refuse (402) or not answer (503), and a
live environment with no processor refuses it (403)."""

SANDBOX_ONLY_PREFIX = "/v1/test-helpers"  # a live key gets 404 there (CONVENTIONS.md §11)
GATE_SCHEMES = ("ApiKey", "PublishableKey")
ERROR_SCHEMA_REF = "#/components/schemas/Error"
RESPONSE_HEADERS = {
    "Request-Id": {
        "description": "This request's id (`req_…`), also in every error body; quote it to support.",
        "required": True,
        "schema": {"type": "string"},
    },
    "Service-Version": {
        "description": "The API version that served the request.",
        "required": True,
        "schema": {"type": "string"},
    },
}
# Fields CONVENTIONS.md §5 defines once for every object; a model that redeclares one (an `object`
# literal, plain `metadata`) still means exactly this.
RETRY_AFTER = {
    "description": "Seconds to wait before retrying (CONVENTIONS.md §3, `rate_limited`).",
    "required": True,
    "schema": {"type": "integer", "minimum": 0},
}
RETRY_AFTER_UNAVAILABLE = {
    "description": "Seconds to wait before retrying, the card network (`processor_unavailable`) or the "
    "database (`service_unavailable`) not having answered.",
    "required": True,
    "schema": {"type": "integer", "minimum": 0},
}
GENERIC_FIELDS = {
    "id": "The object's id: a prefix, `_`, 24 random characters.",
    "object": "The object's type.",
    "livemode": "`true` in live mode, `false` in the sandbox.",
    "created": "When the object was created, in Unix seconds (UTC).",
    "metadata": "Your own key-value pairs, as you set them.",
    "currency": "A lowercase ISO 4217 currency code, such as `eur`.",
}
DOCS_ASSETS_URL = "/docs/assets"
# Paths whose first word is a namespace of resources, not a resource: the tag takes the next word too.
NAMESPACES = {"radar"}


class ErrorDetail(BaseModel):
    """What went wrong (CONVENTIONS.md §3). Some errors add fields, such as `decline_code`."""

    model_config = ConfigDict(extra="allow")

    type: str = Field(
        description="The error's family: `invalid_request_error`, `authentication_error`, `card_error`, "
        "`permission_error`, `idempotency_error`, `rate_limit_error` or `api_error`.",
        examples=["invalid_request_error"],
    )
    code: str = Field(description="A stable, machine-readable reason.", examples=["parameter_invalid"])
    message: str = Field(description="A human-readable explanation; may change, do not parse it.")
    param: str | None = Field(
        description="The parameter at fault, nested fields as `metadata[key]`; null when none is.",
        examples=["amount"],
    )
    request_id: str = Field(description="The request's id, as in the `Request-Id` header.")
    decline_code: str | None = Field(
        default=None,
        description="On `card_declined`: why, such as `generic_decline` or `insufficient_funds`.",
    )


class Error(BaseModel):
    """The one envelope every error leaves in."""

    error: ErrorDetail = Field(description="The error.")


def _error_schemas() -> dict[str, Any]:
    schema = Error.model_json_schema(ref_template="#/components/schemas/{model}")
    definitions: dict[str, Any] = schema.pop("$defs", {})
    return {**definitions, "Error": schema}


def _gate(operation: dict[str, Any]) -> tuple[str, str] | None:
    """(security scheme, scope) of a gated operation."""
    for requirement in operation.get("security") or []:
        for scheme in GATE_SCHEMES:
            if scheme in requirement:
                scopes = requirement[scheme]
                return scheme, scopes[0] if scopes else ""
    return None


def _error_response(status: int, declared: dict[str, Any] | None, *, with_version: bool) -> dict[str, Any]:
    description = (declared or {}).get("description") or STATUS_MEANINGS.get(status, "An error.")
    headers = _response_headers(with_version)
    if status == 429:
        headers = {**headers, "Retry-After": RETRY_AFTER}
    if status == 503:
        headers = {**headers, "Retry-After": RETRY_AFTER_UNAVAILABLE}
    return {
        "description": description,
        "headers": headers,
        "content": {"application/json": {"schema": {"$ref": ERROR_SCHEMA_REF}}},
    }


def _response_headers(with_version: bool) -> dict[str, Any]:
    return {name: header for name, header in RESPONSE_HEADERS.items() if with_version or name == "Request-Id"}


def derived_statuses(method: str, path: str, operation: dict[str, Any]) -> set[int]:
    """The error statuses the shared machinery can answer on this operation."""
    statuses: set[int] = set()
    gate = _gate(operation)
    has_path_id = "{" in path
    statuses.add(400)  # the input guard refuses unstorable text anywhere in any request
    if gate is not None:
        statuses |= {401, 429, 503}  # 503: the key and everything after it are read from PostgreSQL
        if gate[0] == "ApiKey":
            statuses.add(403)
        if method in IDEMPOTENT_METHODS:
            statuses |= {409, 422}
    if has_path_id or path.startswith(SANDBOX_ONLY_PREFIX):
        statuses.add(404)
    if "requestBody" in operation:
        statuses.add(413)
    return statuses


def _headers_in(method: str, path: str, operation: dict[str, Any]) -> list[dict[str, Any]]:
    parameters: list[dict[str, Any]] = []
    api = api_of(path)
    if api is not None:
        versions = API_VERSIONS[api]
        parameters.append(
            {
                "name": "Service-Version",
                "in": "header",
                "required": False,
                "description": f"The {api} API version to use; absent: the current one ({versions[0]}). "
                "An unknown version answers 400 `unsupported_version`.",
                "schema": {"type": "string", "enum": list(versions)},
            }
        )
    if method in IDEMPOTENT_METHODS and _gate(operation) is not None:
        required = method == "POST" and path.startswith(KEY_REQUIRED_PREFIXES)
        parameters.append(
            {
                "name": IDEMPOTENCY_HEADER,
                "in": "header",
                "required": required,
                "description": "Makes the request safe to retry: the same key with the same request answers "
                "the stored response again (`Idempotent-Replayed: true`), with another request 422. "
                f"1 to {MAX_KEY_LENGTH} printable ASCII characters; kept 24 hours."
                + (" Required on this route." if required else ""),
                "schema": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": MAX_KEY_LENGTH,
                    "pattern": "^[ -~]+$",
                },
            }
        )
    return parameters


def _describe_path_ids(operation: dict[str, Any]) -> None:
    for parameter in operation.get("parameters", []):
        if parameter.get("in") == "path" and not parameter.get("description"):
            noun = str(parameter["name"]).replace("_", " ")
            parameter["description"] = f"The {noun}'s id."


def _document_operation(route: APIRoute, method: str, path: str, operation: dict[str, Any]) -> None:
    with_version = api_of(path) is not None
    responses: dict[str, Any] = operation.setdefault("responses", {})
    responses.pop("422", None)  # FastAPI's HTTPValidationError: validation answers 400 here
    declared = {int(status): value for status, value in route.responses.items() if str(status).isdigit()}
    for status in sorted(derived_statuses(method, path, operation) | {s for s in declared if s >= 400}):
        if status in declared and "content" in responses.get(str(status), {}):
            # the route declared its own body for this status (readiness, for one): keep it
            responses[str(status)].setdefault("headers", {}).update(_response_headers(with_version))
            continue
        responses[str(status)] = _error_response(status, declared.get(status), with_version=with_version)
    for code, response in responses.items():
        if code.startswith("2"):
            response.setdefault("headers", {}).update(_response_headers(with_version))
            if method in IDEMPOTENT_METHODS and _gate(operation) is not None:
                response["headers"]["Idempotent-Replayed"] = {
                    "description": "`true` when this is the stored response of an earlier request "
                    "with the same `Idempotency-Key`.",
                    "schema": {"type": "string", "enum": ["true"]},
                }
    operation["parameters"] = [*operation.get("parameters", []), *_headers_in(method, path, operation)]
    if not operation["parameters"]:
        del operation["parameters"]
    _describe_path_ids(operation)
    docstring = inspect.cleandoc(route.endpoint.__doc__ or "")
    summary, _, rest = docstring.partition("\n")
    if summary and not route.summary:
        operation["summary"] = summary.strip().rstrip(".")
    description = route.description if route.description != docstring else rest.strip()
    gate = _gate(operation)
    if gate is not None:
        scheme, scope = gate
        operation["x-scope"] = scope
        who = "a secret key" if scheme == "ApiKey" else "the publishable key (client side)"
        description = f"{description}\n\n**Scope:** `{scope}`, with {who}.".strip()
    operation["description"] = description


def _path_words(path: str) -> tuple[list[str], list[str]]:
    """(the API's own words, the path's segments after its API prefix)."""
    for prefix, api in API_PREFIXES:
        if path == prefix or path.startswith(prefix + "/"):
            return ([] if api == "payments" else [api]), [s for s in path[len(prefix) :].split("/") if s]
    return [], [s for s in path.split("/") if s]


def _answers_a_list(operation: dict[str, Any], schemas: dict[str, Any]) -> bool:
    for status in ("200", "201"):
        content = operation.get("responses", {}).get(status, {}).get("content", {})
        reference = content.get("application/json", {}).get("schema", {}).get("$ref", "")
        schema = schemas.get(reference.rsplit("/", 1)[-1], {})
        if {"data", "has_more"} <= set(schema.get("properties", {})):
            return True
    return False


def operation_tag(path: str) -> str:
    """The resource an operation acts on, as a tag: `payment intents`, `radar value lists`."""
    api_words, segments = _path_words(path)
    nouns = [segment for segment in segments if not segment.startswith("{")]
    take = 2 if nouns and nouns[0] in NAMESPACES else 1
    return " ".join([*api_words, *nouns[:take]]).replace("-", " ")


def operation_name(method: str, path: str, operation: dict[str, Any], schemas: dict[str, Any]) -> str:
    """`<resource>_<action>`, by the convention in this module's docstring."""
    api_words, segments = _path_words(path)
    words = [*api_words, *(segment.replace("-", "_") for segment in segments if not segment.startswith("{"))]
    last = segments[-1] if segments else ""
    if method == "GET" or (method == "POST" and _answers_a_list(operation, schemas)):
        action = "list" if _answers_a_list(operation, schemas) else "retrieve"
    elif method == "DELETE":
        action = "delete"
    elif last.startswith("{"):
        action = "update"
    elif last.endswith("s"):
        action = "create"  # a collection
    else:
        return "_".join(words)  # an action, named by its own word
    return "_".join([*words, action])


def _name_operations(spec: dict[str, Any], declared: dict[tuple[str, str], str | None]) -> None:
    schemas = spec.get("components", {}).get("schemas", {})
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            if api_of(path) is not None:
                operation["tags"] = [operation_tag(path)]
            operation["operationId"] = declared.get((method.upper(), path)) or operation_name(
                method.upper(), path, operation, schemas
            )


def _describe_generic_fields(schemas: dict[str, Any]) -> None:
    for schema in schemas.values():
        for name, field in schema.get("properties", {}).items():
            if name in GENERIC_FIELDS and "description" not in field:
                field["description"] = GENERIC_FIELDS[name]


def build_openapi(app: FastAPI) -> dict[str, Any]:
    spec = get_openapi(
        title=app.title,
        version=app.version,
        summary=app.summary,
        description=app.description,
        routes=app.routes,
        tags=app.openapi_tags,
    )
    declared: dict[tuple[str, str], str | None] = {}
    for context in iter_route_contexts(app.routes):
        route = context.original_route
        if not isinstance(route, APIRoute) or not route.include_in_schema:
            continue
        path = str(context.path_format)
        for method in sorted(context.methods or ()):
            operation = spec["paths"].get(path, {}).get(method.lower())
            if operation is not None:
                _document_operation(route, method, path, operation)
                declared[(method, path)] = route.operation_id
    schemas: dict[str, Any] = spec.setdefault("components", {}).setdefault("schemas", {})
    schemas.pop("HTTPValidationError", None)
    schemas.pop("ValidationError", None)
    schemas.update(_error_schemas())
    _describe_generic_fields(schemas)
    _name_operations(spec, declared)
    return spec


def install_openapi(app: FastAPI) -> None:
    """Serve the derived document at /openapi.json, and /docs with local assets."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = build_openapi(app)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    assets = files("fastapi_offline") / "static"
    app.mount(DOCS_ASSETS_URL, StaticFiles(directory=str(assets)), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(
            openapi_url=f"{root}/openapi.json",
            title=f"{app.title} API",
            swagger_js_url=f"{root}{DOCS_ASSETS_URL}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{DOCS_ASSETS_URL}/swagger-ui.css",
            swagger_favicon_url=f"{root}{DOCS_ASSETS_URL}/favicon.png",
        )
