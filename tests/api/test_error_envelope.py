"""CONVENTIONS.md §3: one envelope for every error, FastAPI's own included; 400 never 422."""

from __future__ import annotations

import httpx
import pytest

from moneyrail.app import create_app
from moneyrail.config import Settings
from tests.helpers import assert_error, count_rows


def test_unknown_route_is_a_404_in_the_envelope(api):
    error = assert_error(api.get("/v1/no-such-thing"), 404, "resource_missing")
    assert error["type"] == "invalid_request_error"


def test_wrong_method_is_a_405_in_the_envelope(api):
    response = api.delete("/v1/account")
    assert_error(response, 405, "method_not_allowed")
    assert response.headers["allow"] == "GET"  # what the route answers to


def test_unknown_body_field_is_refused_and_nothing_is_written(api, db):
    response = api.post("/v1/customers", json={"email": "a@example.com", "colour": "blue"})
    error = assert_error(response, 400, "parameter_unknown", "colour")
    assert error["type"] == "invalid_request_error"
    assert count_rows(db, "customers", api.keys.installation_id) == 0


def test_malformed_json_is_a_400_not_a_422(api, db):
    response = api.post(
        "/v1/customers", content=b'{"email": "a@example.com",', headers={"Content-Type": "application/json"}
    )
    assert_error(response, 400, "parameter_invalid")
    assert count_rows(db, "customers", api.keys.installation_id) == 0


def test_a_body_that_is_not_an_object_is_refused(api):
    response = api.post("/v1/customers", json=["a@example.com"])
    assert_error(response, 400, "parameter_invalid")


def test_a_form_encoded_body_is_told_to_send_json(api):
    response = api.post(
        "/v1/customers",
        content=b"email=a%40example.com",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    error = assert_error(response, 400, "parameter_invalid")
    assert "application/json" in error["message"]


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"email": 12}, "email"),
        ({"email": "not-an-email"}, "email"),
        ({"name": "x" * 256}, "name"),
        ({"metadata": {"k": 1}}, "metadata[k]"),
        ({"metadata": "flat"}, "metadata"),
        ({"external_reference": ""}, "external_reference"),
    ],
)
def test_a_wrong_field_names_itself_in_param(api, db, body, param):
    assert_error(api.post("/v1/customers", json=body), 400, "parameter_invalid", param)
    assert count_rows(db, "customers", api.keys.installation_id) == 0


def test_an_unexpected_failure_is_a_500_envelope_without_internals():
    """The last-resort handler: no stack trace, no exception text, the usual headers."""
    app = create_app(Settings(DATABASE_URL="postgresql://unused@127.0.0.1/unused", log_json=False))

    async def explode() -> None:
        raise RuntimeError("secret internals: password=hunter2")

    app.add_api_route("/v1/explode", explode)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)

    async def call() -> httpx.Response:
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.get("/v1/explode")

    import asyncio

    response = asyncio.run(call())
    error = assert_error(response, 500, "internal_error")
    assert response.headers["Service-Version"] == "2026-08-28"
    assert error["type"] == "api_error"
    assert "hunter2" not in response.text and "Traceback" not in response.text
