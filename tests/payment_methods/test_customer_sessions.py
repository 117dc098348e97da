"""Customer sessions and customer sheet sessions: short-lived secrets for a native sheet."""

from __future__ import annotations

import hashlib

import httpx

from tests.harness import TLS
from tests.helpers import assert_error, count_rows
from tests.payment_methods.support import (
    CHARGES_DECLINED,
    confirm,
    listed,
    new_customer,
    publishable,
    save_card,
)


def _session(api, customer: str) -> dict:
    response = api.post(f"/v1/customers/{customer}/customer-sessions")
    assert response.status_code == 200, response.text
    return response.json()


def _read(client: httpx.Client, session: dict, secret: str | None = None, **params) -> httpx.Response:
    return client.post(
        f"/v1/customer-sessions/{session['id']}/payment-methods",
        json={"client_secret": secret or session["client_secret"]},
        params=params,
    )


def test_a_customer_session_is_short_lived_and_its_secret_stored_hashed(api, db):
    customer = new_customer(api)
    session = _session(api, customer)
    assert session["id"].startswith("cuss_") and len(session["id"]) == 29
    assert session["object"] == "customer_session" and session["livemode"] is False
    assert session["customer"] == customer
    assert session["client_secret"].startswith(session["id"] + "_secret_")
    assert 1800 - 5 <= session["expires_at"] - session["created"] <= 1800 + 5
    assert set(session) == {"id", "object", "livemode", "created", "customer", "client_secret", "expires_at"}
    (stored,) = db.execute(
        "SELECT client_secret_hash FROM customer_sessions WHERE id = %s", (session["id"],)
    ).fetchone()
    assert stored == hashlib.sha256(session["client_secret"].encode()).hexdigest()


def test_a_customer_session_lets_the_publishable_key_read_the_saved_cards(api):
    customer = new_customer(api)
    save_card(api, customer)
    save_card(api, customer, CHARGES_DECLINED)
    session = _session(api, customer)
    with publishable(api) as client:
        response = _read(client, session)
        assert response.status_code == 200, response.text
        assert response.json() == listed(api, customer)  # the same list the server sees
        page = _read(client, session, limit=1).json()
        assert len(page["data"]) == 1 and page["has_more"] is True


def test_a_customer_session_takes_the_publishable_key_only(api):
    customer = new_customer(api)
    session = _session(api, customer)
    assert_error(_read(api, session), 401, "invalid_api_key")


def test_a_wrong_or_foreign_secret_cannot_read_the_cards(api):
    customer = new_customer(api)
    session, other = _session(api, customer), _session(api, new_customer(api))
    with publishable(api) as client:
        for secret in (session["client_secret"] + "x", other["client_secret"]):
            assert_error(_read(client, session, secret), 401, "client_secret_invalid", "client_secret")
        assert_error(
            _read(client, {"id": "cuss_000000000000000000000000", "client_secret": "x"}),
            404,
            "resource_missing",
            "customer_session",
        )
        assert_error(
            client.post(f"/v1/customer-sessions/{session['id']}/payment-methods", json={}),
            400,
            "parameter_missing",
            "client_secret",
        )


def test_a_customer_session_expires_after_thirty_minutes(api):
    customer = new_customer(api)
    session = _session(api, customer)
    with publishable(api) as client:
        api.post("/v1/test-helpers/clock/advance", json={"seconds": 1700})
        assert _read(client, session).status_code == 200
        api.post("/v1/test-helpers/clock/advance", json={"seconds": 200})
        assert_error(_read(client, session), 409, "resource_state_invalid")


def test_a_customer_sheet_session_carries_both_secrets_and_the_publishable_key(api, db):
    customer = new_customer(api)
    response = api.post(f"/v1/customers/{customer}/customer-sheet-sessions")
    assert response.status_code == 200, response.text
    sheet = response.json()
    assert set(sheet) == {
        "object",
        "livemode",
        "created",
        "customer",
        "customer_session",
        "customer_session_client_secret",
        "setup_intent",
        "setup_intent_client_secret",
        "publishable_key",
        "expires_at",
    }
    assert sheet["object"] == "customer_sheet_session" and sheet["customer"] == customer
    assert sheet["publishable_key"] == api.keys.publishable_key
    assert sheet["customer_session"].startswith("cuss_") and sheet["setup_intent"].startswith("seti_")
    assert 1800 - 5 <= sheet["expires_at"] - sheet["created"] <= 1800 + 5
    assert count_rows(db, "customer_sessions", api.keys.installation_id) == 1
    assert count_rows(db, "setup_intents", api.keys.installation_id) == 1
    # what the sheet does with them: save a card, then read it back
    with httpx.Client(
        base_url=str(api.base_url),
        headers={"Authorization": f"Bearer {sheet['publishable_key']}"},
        verify=TLS,
    ) as client:
        saved = confirm(
            client, {"id": sheet["setup_intent"], "client_secret": sheet["setup_intent_client_secret"]}
        )
        assert saved.status_code == 200, saved.text
        cards = _read(
            client,
            {"id": sheet["customer_session"], "client_secret": sheet["customer_session_client_secret"]},
        )
    assert cards.json()["preferred_payment_method"] == saved.json()["payment_method"]


def test_sessions_for_an_unknown_customer_are_404_and_refuse_unknown_parameters(api):
    missing = "cus_000000000000000000000000"
    for path in ("customer-sessions", "customer-sheet-sessions"):
        assert_error(api.post(f"/v1/customers/{missing}/{path}"), 404, "resource_missing", "customer")
        customer = new_customer(api)
        assert_error(
            api.post(f"/v1/customers/{customer}/{path}", json={"x": 1}), 400, "parameter_unknown", "x"
        )
