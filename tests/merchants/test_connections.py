"""Connecting merchants over OAuth 2.1 + PKCE (spec 4.D, 5.4; CONVENTIONS.md §13), over HTTP: the
application's API calls, the merchant's browser on the consent page, and the token endpoint."""

from __future__ import annotations

import importlib.util
import re
import time
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx

from tests.harness import ROOT, TLS
from tests.helpers import assert_error, count_rows
from tests.merchants.support import (
    REDIRECT_URI,
    RETURN_URL,
    approve,
    assert_oauth_error,
    business_form,
    connect,
    decide,
    exchange,
    form_action,
    pkce,
    redirect_params,
    register_redirect_uris,
    start_connection,
)
from tests.payments.support import event_types


def test_a_connection_answers_a_consent_url_that_carries_the_pkce_challenge_and_state(platform, web, db):
    before = int(time.time())
    started = start_connection(platform)
    connection = started.connection
    assert set(connection) == {"id", "object", "livemode", "created", "url", "expires_at"}
    assert connection["object"] == "merchant_connection" and connection["livemode"] is False
    assert re.fullmatch(r"mcon_[0-9A-Za-z]{24}", connection["id"])
    assert before - 1 <= connection["created"] <= int(time.time()) + 1
    assert connection["expires_at"] - connection["created"] in range(1799, 1802)
    url = urlsplit(started.url)
    assert f"{url.scheme}://{url.netloc}{url.path}" == f"{web.base_url}/oauth/authorize"
    query = {key: values[0] for key, values in parse_qs(url.query).items()}
    assert query["response_type"] == "code"
    assert query["client_id"] == f"{platform.keys.installation_id}.sandbox"
    assert query["redirect_uri"] == REDIRECT_URI
    assert query["state"] == started.state
    assert query["code_challenge"] == started.pkce.challenge
    assert query["code_challenge_method"] == "S256"
    assert len(query["connection"]) >= 43
    # the link's credential is kept as its SHA-256 only
    dump = db.execute(
        "SELECT string_agg(t::text, '') FROM merchant_connections t WHERE installation_id = %s",
        (platform.keys.installation_id,),
    ).fetchone()[0]
    assert query["connection"] not in dump


def test_the_consent_page_is_strict_html_without_script(platform):
    started = start_connection(platform)
    page = httpx.get(started.url, timeout=30, verify=TLS)
    assert page.status_code == 200
    assert "Connect your business to" in page.text and "test installation" in page.text
    assert "<script" not in page.text
    csp = page.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src" not in csp
    assert "form-action 'self' https://platform.example" in csp
    assert page.headers["referrer-policy"] == "no-referrer"
    assert form_action(page.text) == "/oauth/authorize?" + urlsplit(started.url).query


def test_approving_then_exchanging_the_code_makes_the_merchant_active(platform):
    started = start_connection(platform)
    response = decide(started.url, business_form())
    params = redirect_params(response)
    assert response.headers["location"].split("?")[0] == REDIRECT_URI
    assert params["state"] == started.state  # carried back unchanged
    assert set(params) == {"code", "state"}

    listed = platform.get("/v1/merchants").json()["data"]
    assert [m["connection_status"] for m in listed] == ["pending"]  # until the application exchanges
    assert listed[0]["consent"]["status"] == "granted"

    token = exchange(platform, params["code"], started.pkce.verifier)
    assert token.status_code == 200, token.text
    assert token.headers["cache-control"] == "no-store"
    body = token.json()
    assert set(body) == {"merchant", "scope", "livemode"}
    assert re.fullmatch(r"mer_[0-9A-Za-z]{24}", body["merchant"])
    assert body["scope"] == "payments refunds transfers payouts" and body["livemode"] is False

    merchant = platform.get(f"/v1/merchants/{body['merchant']}").json()
    assert merchant["object"] == "merchant" and merchant["id"] == body["merchant"]
    assert merchant["business_profile"] == {
        "name": "Luigi's Pizzeria",
        "url": "https://luigi.example",
        "support_email": "help@luigi.example",
    }
    assert merchant["connection_status"] == "active"
    assert merchant["consent"]["status"] == "granted"
    assert merchant["consent"]["scopes"] == ["payments", "refunds", "transfers", "payouts"]
    assert abs(merchant["consent"]["granted_at"] - time.time()) < 60
    assert merchant["capabilities"] == {
        "payments": "active",
        "transfers": "active",
        "payouts": "active",
        "refunds": "active",
    }
    assert merchant["requirements"] == {"currently_due": [], "past_due": [], "disabled_reason": None}
    assert event_types(platform, merchant["id"]) == [
        "merchant.created",
        "merchant.updated",
        "merchant.connected",
    ]


def test_a_wrong_verifier_is_invalid_grant_and_connects_nothing(platform):
    started = start_connection(platform)
    code = approve(started)
    wrong = exchange(platform, code, pkce().verifier)
    assert_oauth_error(wrong, 400, "invalid_grant")
    assert platform.get("/v1/merchants").json()["data"][0]["connection_status"] == "pending"
    missing = exchange(platform, code, "")
    assert_oauth_error(missing, 400, "invalid_request")


def test_a_code_works_once(platform):
    started = start_connection(platform)
    code = approve(started)
    assert exchange(platform, code, started.pkce.verifier).status_code == 200
    again = exchange(platform, code, started.pkce.verifier)
    assert_oauth_error(again, 400, "invalid_grant")


def test_a_code_expires_after_ten_minutes_on_the_sandbox_clock(platform):
    late = start_connection(platform)
    late_code = approve(late)
    in_time = start_connection(platform)
    in_time_code = approve(in_time)
    platform.post("/v1/test-helpers/clock/advance", json={"seconds": 9 * 60})
    assert exchange(platform, in_time_code, in_time.pkce.verifier).status_code == 200
    platform.post("/v1/test-helpers/clock/advance", json={"seconds": 61})
    assert_oauth_error(exchange(platform, late_code, late.pkce.verifier), 400, "invalid_grant")


def test_the_redirect_uri_at_the_token_endpoint_must_be_the_codes(platform, bridge):
    register_redirect_uris(bridge, platform.keys, (REDIRECT_URI, "https://platform.example/other"))
    started = start_connection(platform)
    code = approve(started)
    other = exchange(platform, code, started.pkce.verifier, "https://platform.example/other")
    assert_oauth_error(other, 400, "invalid_grant")
    assert exchange(platform, code, started.pkce.verifier).status_code == 200


def test_an_unregistered_redirect_uri_is_refused_exactly_and_writes_nothing(platform, db):
    for uri in (
        "https://evil.example/oauth/callback",
        REDIRECT_URI + "/",
        REDIRECT_URI + "?next=/admin",
        "https://platform.example/oauth",
    ):
        verifier = pkce()
        refused = platform.post(
            "/v1/merchant-connections",
            json={
                "redirect_uri": uri,
                "code_challenge": verifier.challenge,
                "code_challenge_method": "S256",
                "state": "s",
            },
        )
        assert_error(refused, 400, "url_not_registered", "redirect_uri")
    assert count_rows(db, "merchants", platform.keys.installation_id) == 0
    assert count_rows(db, "merchant_connections", platform.keys.installation_id) == 0


def test_plain_pkce_and_a_malformed_challenge_are_refused(platform, db):
    verifier = pkce()
    body = {"redirect_uri": REDIRECT_URI, "code_challenge": verifier.verifier, "state": "s"}
    plain = platform.post("/v1/merchant-connections", json=body | {"code_challenge_method": "plain"})
    error = assert_error(plain, 400, "parameter_invalid", "code_challenge_method")
    assert "S256" in error["message"]
    malformed = platform.post(
        "/v1/merchant-connections",
        json=body | {"code_challenge": "!" * 43, "code_challenge_method": "S256"},
    )
    assert_error(malformed, 400, "parameter_invalid", "code_challenge")
    missing = platform.post("/v1/merchant-connections", json={"redirect_uri": REDIRECT_URI, "state": "s"})
    assert_error(missing, 400, "parameter_missing", "code_challenge")
    unknown = platform.post(
        "/v1/merchant-connections",
        json=body | {"code_challenge_method": "S256", "client_secret": "x"},
    )
    assert_error(unknown, 400, "parameter_unknown", "client_secret")
    assert count_rows(db, "merchants", platform.keys.installation_id) == 0


def test_a_consent_link_altered_to_plain_or_another_redirect_is_refused_without_redirecting(platform):
    started = start_connection(platform)
    query = {key: values[0] for key, values in parse_qs(urlsplit(started.url).query).items()}
    base = started.url.split("?")[0]
    for changed in (
        {"code_challenge_method": "plain"},
        {"redirect_uri": "https://evil.example/cb"},
        {"state": "forged"},
    ):
        page = httpx.get(
            f"{base}?{urlencode(query | changed)}", follow_redirects=False, timeout=30, verify=TLS
        )
        assert page.status_code == 400 and "This link was changed" in page.text
        posted = decide(f"{base}?{urlencode(query | changed)}", business_form())
        assert posted.status_code == 400 and "location" not in posted.headers
    assert httpx.get(started.url, timeout=30, verify=TLS).status_code == 200  # the real link still works


def test_a_redirect_uri_unregistered_since_is_refused_by_the_authorization_server(platform, bridge):
    started = start_connection(platform)
    register_redirect_uris(bridge, platform.keys, ("https://platform.example/new-callback",))
    page = httpx.get(started.url, follow_redirects=False, timeout=30, verify=TLS)
    assert page.status_code == 400 and "location" not in page.headers
    assert "redirect" in page.text.lower()


def test_denying_returns_access_denied_with_the_state_and_the_merchant_is_denied(platform):
    started = start_connection(platform)
    response = decide(started.url, {"decision": "deny"})
    params = redirect_params(response)
    assert response.headers["location"].split("?")[0] == REDIRECT_URI
    assert params["error"] == "access_denied" and params["state"] == started.state
    assert "code" not in params
    merchant = platform.get("/v1/merchants").json()["data"][0]
    assert merchant["connection_status"] == "denied"
    assert merchant["consent"]["status"] == "denied"
    assert set(merchant["capabilities"].values()) == {"inactive"}
    assert merchant["requirements"]["disabled_reason"] == "consent.denied"
    assert event_types(platform, merchant["id"])[-1] == "merchant.denied"


def test_a_consent_link_works_once_and_expires_after_thirty_minutes(platform):
    used = start_connection(platform)
    approve(used)
    again = httpx.get(used.url, timeout=30, verify=TLS)
    assert again.status_code == 410 and "already been used" in again.text
    assert decide(used.url, business_form()).status_code == 410

    stale = start_connection(platform)
    platform.post("/v1/test-helpers/clock/advance", json={"seconds": 30 * 60})
    expired = httpx.get(stale.url, timeout=30, verify=TLS)
    assert expired.status_code == 410 and "expired" in expired.text
    unknown = httpx.get(stale.url.replace("connection=", "connection=x"), timeout=30, verify=TLS)
    assert unknown.status_code == 404


def test_the_business_form_asks_again_for_a_missing_name(platform):
    started = start_connection(platform)
    with httpx.Client(timeout=30, verify=TLS) as browser:
        response = decide(started.url, business_form(business_name=" "), browser)
        assert response.status_code == 400 and "business name" in response.text
        bad_email = decide(started.url, business_form(support_email="nope"), browser)
        assert bad_email.status_code == 400 and "e-mail" in bad_email.text
        approve(started, browser)  # the page session still works after a correction


def test_the_token_endpoint_authenticates_the_application_by_its_secret_key(platform, bridge, make_api):
    started = start_connection(platform)
    code = approve(started)
    forged = exchange(platform, code, started.pkce.verifier, key="sk_test_" + "x" * 32)
    assert_oauth_error(forged, 401, "invalid_client")
    assert forged.headers["www-authenticate"] == "Bearer"
    publishable = exchange(platform, code, started.pkce.verifier, key=platform.keys.publishable_key)
    assert_oauth_error(publishable, 401, "invalid_client")
    from tests.harness import add_key

    read_only = add_key(bridge, platform.keys.tenant, ("merchants:read",))
    assert_oauth_error(
        exchange(platform, code, started.pkce.verifier, key=read_only), 400, "unauthorized_client"
    )
    # another installation's key cannot redeem this installation's code
    other = make_api()
    assert_oauth_error(exchange(other, code, started.pkce.verifier), 400, "invalid_grant")
    unsupported = exchange(platform, code, started.pkce.verifier, grant_type="client_credentials")
    assert_oauth_error(unsupported, 400, "unsupported_grant_type")
    # none of these spent the code
    assert exchange(platform, code, started.pkce.verifier).status_code == 200


def test_the_token_endpoint_takes_a_form_not_json(platform):
    started = start_connection(platform)
    code = approve(started)
    as_json = httpx.post(
        f"{platform.base_url}/oauth/token",
        json={"grant_type": "authorization_code", "code": code, "code_verifier": started.pkce.verifier},
        headers={"Authorization": f"Bearer {platform.keys.secret}"},
        verify=TLS,
    )
    assert_oauth_error(as_json, 400, "unsupported_grant_type")


def test_merchants_are_listed_newest_first_with_pagination(platform):
    ids = [connect(platform, business_name=f"Shop {n}")["id"] for n in range(3)]
    first = platform.get("/v1/merchants", params={"limit": 2}).json()
    assert [m["id"] for m in first["data"]] == ids[::-1][:2]
    assert first["has_more"] is True
    rest = platform.get("/v1/merchants", params={"limit": 2, "cursor": first["next_cursor"]}).json()
    assert [m["id"] for m in rest["data"]] == ids[:1] and rest["has_more"] is False


def test_capabilities_and_requirements_are_read_on_their_own(platform):
    merchant = connect(platform)
    capabilities = platform.get(f"/v1/merchants/{merchant['id']}/capabilities").json()
    assert capabilities == {
        "object": "merchant_capabilities",
        "merchant": merchant["id"],
        **merchant["capabilities"],
    }
    requirements = platform.get(f"/v1/merchants/{merchant['id']}/requirements").json()
    assert requirements == {
        "object": "merchant_requirements",
        "merchant": merchant["id"],
        **merchant["requirements"],
    }


def test_a_merchant_is_visible_only_to_the_installation_and_environment_that_connected_it(
    platform, make_api, bridge
):
    merchant = connect(platform)
    other = make_api()
    live = make_api(livemode=True)
    for stranger in (other, live):
        for path in ("", "/capabilities", "/requirements"):
            assert_error(
                stranger.get(f"/v1/merchants/{merchant['id']}{path}"), 404, "resource_missing", "merchant"
            )
        assert_error(stranger.delete(f"/v1/merchants/{merchant['id']}"), 404, "resource_missing", "merchant")
        assert stranger.get("/v1/merchants").json()["data"] == []
        refused = stranger.post(
            "/v1/payment-intents", json={"amount": 1000, "currency": "eur", "merchant": merchant["id"]}
        )
        if stranger is live:  # a live environment with no processor takes no payment at all
            assert_error(refused, 403, "processor_not_configured")
        else:
            assert_error(refused, 400, "resource_missing", "merchant")
    assert platform.get(f"/v1/merchants/{merchant['id']}").status_code == 200


def test_scopes_guard_the_merchant_routes(platform, bridge):
    from tests.harness import add_key

    merchant = connect(platform)
    reader = httpx.Client(
        base_url=platform.base_url,
        headers={"Authorization": f"Bearer {add_key(bridge, platform.keys.tenant, ('merchants:read',))}"},
        verify=TLS,
    )
    with reader:
        assert reader.get(f"/v1/merchants/{merchant['id']}").status_code == 200
        assert_error(reader.delete(f"/v1/merchants/{merchant['id']}"), 403, "insufficient_scope")
        verifier = pkce()
        assert_error(
            reader.post(
                "/v1/merchant-connections",
                json={
                    "redirect_uri": REDIRECT_URI,
                    "code_challenge": verifier.challenge,
                    "code_challenge_method": "S256",
                    "state": "s",
                },
            ),
            403,
            "insufficient_scope",
        )


def test_the_same_idempotency_key_replays_the_connection_and_its_url(platform, db):
    verifier = pkce()
    body = {
        "redirect_uri": REDIRECT_URI,
        "code_challenge": verifier.challenge,
        "code_challenge_method": "S256",
        "state": "s",
    }
    first = platform.post("/v1/merchant-connections", json=body, headers={"Idempotency-Key": "connect-1"})
    again = platform.post("/v1/merchant-connections", json=body, headers={"Idempotency-Key": "connect-1"})
    assert first.status_code == again.status_code == 200
    assert again.content == first.content and again.headers["Idempotent-Replayed"] == "true"
    assert count_rows(db, "merchants", platform.keys.installation_id) == 1


def test_two_exchanges_of_one_code_at_once_connect_once(platform):
    from concurrent.futures import ThreadPoolExecutor

    started = start_connection(platform)
    code = approve(started)
    with ThreadPoolExecutor(max_workers=4) as pool:
        answers = list(pool.map(lambda _: exchange(platform, code, started.pkce.verifier), range(4)))
    assert sorted(answer.status_code for answer in answers) == [200, 400, 400, 400]
    for refused in (answer for answer in answers if answer.status_code == 400):
        assert_oauth_error(refused, 400, "invalid_grant")
    merchant_id = next(answer.json()["merchant"] for answer in answers if answer.status_code == 200)
    assert event_types(platform, merchant_id).count("merchant.connected") == 1


def test_two_decisions_on_one_consent_link_at_once_issue_one_code(platform):
    from concurrent.futures import ThreadPoolExecutor

    started = start_connection(platform)
    with ThreadPoolExecutor(max_workers=3) as pool:
        answers = list(pool.map(lambda _: decide(started.url, business_form()), range(3)))
    assert sorted(answer.status_code for answer in answers) == [303, 410, 410]


def test_a_live_connection_is_the_live_environments_with_no_sandbox_switches(make_api, bridge):
    live = make_api(livemode=True)
    register_redirect_uris(bridge, live.keys)
    started = start_connection(live)
    assert started.connection["livemode"] is True
    assert f"client_id={live.keys.installation_id}.live" in started.url
    with httpx.Client(timeout=30, verify=TLS) as browser:
        page = browser.get(started.url)
        assert (
            "Your business" in page.text
            and "Sandbox" not in page.text
            and "leave_requirement_due" not in page.text
        )
        code = approve(started, browser, leave_requirement_due="yes")  # a forged switch changes nothing
    token = exchange(live, code, started.pkce.verifier)
    assert token.json()["livemode"] is True
    merchant = live.get(f"/v1/merchants/{token.json()['merchant']}").json()
    # due because live never makes up a bank account (the forged switch added nothing): the activation
    # page collects it
    assert merchant["livemode"] is True and merchant["requirements"]["currently_due"] == ["external_account"]
    assert merchant["capabilities"]["payouts"] == "pending"


def test_migration_0045_marks_the_bank_account_due_on_live_merchants_connected_before_it(
    make_api, bridge, db
):
    """Before 0045 a live merchant was left with nothing due while its account had no bank account, so
    its activation page refused to open: the migration marks it due, once, and touches no other."""
    path = ROOT / "src/moneyrail/db/migrations/versions/0045_live_merchants_bank_account_due.py"
    spec = importlib.util.spec_from_file_location("migration_0045", path)
    assert spec is not None and spec.loader is not None
    migration = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(migration)
    live = make_api(livemode=True)
    register_redirect_uris(bridge, live.keys)
    sandbox = make_api()
    register_redirect_uris(bridge, sandbox.keys)
    left_as_before = connect(live)
    with_a_bank = connect(sandbox)
    db.execute("UPDATE merchants SET requirements_due = '{}' WHERE id = %s", (left_as_before["id"],))
    assert live.get(f"/v1/merchants/{left_as_before['id']}").json()["requirements"]["currently_due"] == []
    for _ in range(2):  # run again, it adds nothing
        db.execute(migration.BACKFILL)
    merchant = live.get(f"/v1/merchants/{left_as_before['id']}").json()
    assert merchant["requirements"]["currently_due"] == ["external_account"]
    opened = live.post(
        f"/v1/merchants/{left_as_before['id']}/onboarding-sessions", json={"return_url": RETURN_URL}
    )
    assert opened.status_code == 200, opened.text
    assert sandbox.get(f"/v1/merchants/{with_a_bank['id']}").json()["requirements"]["currently_due"] == []


def test_the_state_comes_back_byte_for_byte_whatever_its_characters(platform):
    state = "order 42 & co=ü/?#"
    started = start_connection(platform, state=state)
    response = decide(started.url, business_form())
    assert redirect_params(response)["state"] == state
    denied = start_connection(platform, state=state)
    assert redirect_params(decide(denied.url, {"decision": "deny"}))["state"] == state
