"""/openapi.json's methods are the server's (CONVENTIONS.md §1, RFC 9110 §15.5.6): on every documented
path, each method the document does not list answers 405 in the error envelope, with `Allow` naming
exactly the methods the document lists for that path. Asked of the real server (uvicorn), with the
document it serves.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

import httpx

from tests.conftest import WebServer
from tests.harness import TLS
from tests.helpers import assert_error

METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
PATH_PARAMETER = re.compile(r"\{([^}]+)\}")


def concrete_path(template: str, item: dict[str, Any]) -> str:
    """The template with a value of the documented type in each parameter, naming no literal sibling."""
    schemas = {
        parameter["name"]: parameter.get("schema", {})
        for operation in item.values()
        for parameter in operation.get("parameters", [])
        if parameter["in"] == "path"
    }

    def value(match: re.Match[str]) -> str:
        schema = schemas.get(match.group(1), {})
        if schema.get("type") == "integer":
            return "7"
        if schema.get("format") == "uuid":
            return str(uuid.uuid4())
        return "zz_unsupported_method_probe"

    return PATH_PARAMETER.sub(value, template)


def test_every_undocumented_method_answers_405_allowing_exactly_the_documented_ones(web: WebServer):
    with httpx.Client(base_url=web.base_url, timeout=30, verify=TLS) as client:
        document = client.get("/openapi.json").json()
        asked = 0
        for template, item in document["paths"].items():
            documented = sorted(method.upper() for method in item)
            path = concrete_path(template, item)
            for method in METHODS:
                if method in documented:
                    continue
                response = client.request(method, path)
                assert response.status_code == 405, (method, template, response.status_code)
                if method != "HEAD":  # a HEAD answer has no body
                    assert_error(response, 405, "method_not_allowed")
                assert response.headers["Allow"] == ", ".join(documented), (method, template)
                asked += 1
    assert len(document["paths"]) >= 100 and asked >= 4 * len(document["paths"])
