"""Secrets at rest: no credential an API answer carries is readable in any database row; the keys come
from MONEYRAIL_SECRET_KEYS and rotate with `moneyrail secrets rotate`."""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any

import pytest
from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from moneyrail.kit.crypto import SEALED_PREFIX
from tests.checkout.support import create_session, enable_checkout, token_of
from tests.harness import OUTPUT_DIR, ROOT, Process, free_port
from tests.payments.support import AUTHENTICATE, confirm, create_payment


def every_row_as_text(db: Any) -> str:
    """Every row of every table of the schema, as PostgreSQL prints it (bytea as hex, so also decoded)."""
    tables = [
        row[0]
        for row in db.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'alembic_version'"
        ).fetchall()
    ]
    dump: list[str] = []
    for table in tables:
        for (text,) in db.execute(f'SELECT t::text FROM "{table}" t').fetchall():
            dump.append(text)
    for (body,) in db.execute("SELECT response_body FROM idempotency_records").fetchall():
        dump.append(bytes(body).decode("utf-8", "replace"))
    return "\n".join(dump)


def issue_credentials(api: Any, bridge: Any) -> dict[str, str]:
    """Every kind of answer that carries a credential, each under an Idempotency-Key."""
    enable_checkout(bridge, api.keys)
    payment = api.post(
        "/v1/payment-intents", json={"amount": 2000, "currency": "eur"}, headers={"Idempotency-Key": "pay-1"}
    ).json()
    checkout = create_session(api, payment["id"], **{"Idempotency-Key": "checkout-1"})
    customer = api.post("/v1/customers", json={}).json()
    setup = api.post(f"/v1/customers/{customer['id']}/setup-intents", headers={"Idempotency-Key": "setup-1"})
    assert setup.status_code == 200, setup.text
    endpoint = api.post(
        "/v1/webhook-endpoints",
        json={"url": "http://127.0.0.1:9/hooks", "enabled_events": ["*"]},
        headers={"Idempotency-Key": "hook-1"},
    ).json()
    authenticating = create_payment(api, 3100)
    started = confirm(api, authenticating, AUTHENTICATE)
    link = started.json()["next_action"]["redirect_to_url"]["url"]
    return {
        "bank authentication link token": link.rsplit("/", 1)[1],
        "payment client_secret": payment["client_secret"],
        "checkout URL token": token_of(checkout),
        "setup intent client_secret": setup.json()["client_secret"],
        "webhook signing secret": endpoint["secret"],
        "webhook secret's key material": endpoint["secret"].removeprefix("whsec_"),
    }


def test_no_credential_an_answer_carried_is_readable_in_any_row(api, bridge, db):
    credentials = issue_credentials(api, bridge)
    dump = every_row_as_text(db)
    readable = [name for name, value in credentials.items() if value in dump]
    assert readable == []
    stored = db.execute(
        "SELECT key, response_body FROM idempotency_records WHERE installation_id = %s",
        (api.keys.installation_id,),
    ).fetchall()
    assert {key for key, _ in stored} == {"pay-1", "checkout-1", "setup-1", "hook-1"}
    assert all(bytes(body).startswith(SEALED_PREFIX) for _, body in stored)
    (secret,) = db.execute(
        "SELECT secret FROM webhook_endpoints WHERE installation_id = %s", (api.keys.installation_id,)
    ).fetchone()
    assert secret.startswith(SEALED_PREFIX.decode())


def test_the_bank_authentication_link_is_shown_to_callers_but_left_out_of_events(api):
    payment = create_payment(api, 3200)
    link = confirm(api, payment, AUTHENTICATE).json()["next_action"]["redirect_to_url"]["url"]
    assert "/authenticate/" in link
    shown = api.get(f"/v1/payment-intents/{payment['id']}").json()["next_action"]
    assert shown["redirect_to_url"]["url"] == link
    events = api.get("/v1/events", params={"type": "payment_intent.requires_action"}).json()["data"]
    (event,) = [e for e in events if e["data"]["object"]["id"] == payment["id"]]
    action = event["data"]["object"]["next_action"]
    assert action["type"] == "redirect_to_url" and action["redirect_to_url"]["url"] is None


def test_a_replayed_answer_is_the_original_with_its_credential(api):
    first = create_payment(api)  # no key: stored nothing
    assert first["client_secret"]
    created = api.post(
        "/v1/payment-intents", json={"amount": 1500, "currency": "eur"}, headers={"Idempotency-Key": "again"}
    )
    replayed = api.post(
        "/v1/payment-intents", json={"amount": 1500, "currency": "eur"}, headers={"Idempotency-Key": "again"}
    )
    assert replayed.headers["Idempotent-Replayed"] == "true"
    assert replayed.content == created.content and replayed.json()["client_secret"]


def _rotate(servers: Any, keys: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "moneyrail", "secrets", "rotate"],
        env=servers.environment(MONEYRAIL_SECRET_KEYS=keys),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_rotation_re_encrypts_every_secret_with_the_new_key_and_seals_old_plaintext(servers, api, bridge, db):
    credentials = issue_credentials(api, bridge)
    installation = api.keys.installation_id
    # a secret written before encryption existed (migration 0009 leaves such rows readable)
    legacy = "whsec_" + "A" * 43
    legacy_endpoint = api.post(
        "/v1/webhook-endpoints", json={"url": "http://127.0.0.1:9/legacy", "enabled_events": ["*"]}
    ).json()["id"]
    db.execute("UPDATE webhook_endpoints SET secret = %s WHERE id = %s", (legacy, legacy_endpoint))

    old_key = servers.secret_keys
    new_key = Fernet.generate_key().decode()
    try:
        output = _rotate(servers, f"{new_key},{old_key}")
        assert "re-encrypted" in output and "webhook_endpoints.secret" in output
        only_new, only_old = MultiFernet([Fernet(new_key)]), MultiFernet([Fernet(old_key)])
        secrets = dict(
            db.execute(
                "SELECT id, secret FROM webhook_endpoints WHERE installation_id = %s", (installation,)
            ).fetchall()
        )
        opened = {
            endpoint_id: only_new.decrypt(sealed.encode()[len(SEALED_PREFIX) :]).decode()
            for endpoint_id, sealed in secrets.items()
        }
        assert opened[legacy_endpoint] == legacy
        assert credentials["webhook signing secret"] in opened.values()
        for sealed in secrets.values():
            with pytest.raises(InvalidToken):
                only_old.decrypt(sealed.encode()[len(SEALED_PREFIX) :])
        bodies = db.execute(
            "SELECT response_body FROM idempotency_records WHERE installation_id = %s", (installation,)
        ).fetchall()
        plain = b"".join(only_new.decrypt(bytes(body)[len(SEALED_PREFIX) :]) for (body,) in bodies)
        assert credentials["payment client_secret"].encode() in plain
        assert credentials["setup intent client_secret"] not in every_row_as_text(db)
        (payment_id, action) = db.execute(
            "SELECT id, next_action FROM payment_intents"
            " WHERE installation_id = %s AND next_action IS NOT NULL",
            (installation,),
        ).fetchone()
        link = only_new.decrypt(action["redirect_to_url"]["url"].encode()[len(SEALED_PREFIX) :]).decode()
        assert link.endswith("/authenticate/" + credentials["bank authentication link token"])
    finally:
        _rotate(servers, f"{old_key},{new_key}")  # back to the key the running processes hold
    # the web process (old key) opens what was sealed again under its key
    shown = api.get(f"/v1/payment-intents/{payment_id}").json()["next_action"]["redirect_to_url"]["url"]
    assert shown == link


def test_rotation_without_keys_is_a_clear_error(servers):
    result = subprocess.run(
        [sys.executable, "-m", "moneyrail", "secrets", "rotate"],
        env=servers.environment(MONEYRAIL_SECRET_KEYS=""),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "MONEYRAIL_SECRET_KEYS is not set" in result.stderr and "Traceback" not in result.stderr


def test_the_web_process_refuses_to_start_without_a_secret_key(servers):
    process = Process.start(
        "web",
        servers,
        OUTPUT_DIR / "web-without-keys.log",
        MONEYRAIL_PORT=str(free_port()),
        MONEYRAIL_SECRET_KEYS="",
    )
    try:
        deadline = time.monotonic() + 30
        while process.popen.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert process.popen.poll() not in (None, 0)
        assert "MONEYRAIL_SECRET_KEYS is not set" in process.log_text()
    finally:
        process.stop()
