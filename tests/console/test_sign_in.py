"""Operators' accounts over HTTP: a one-time set-up link, sign-in with a password and a TOTP code into a
server-side session (its cookie HttpOnly, SameSite=Strict, scoped to /console), a lockout after five
failed sign-ins, sessions that end when idle and at their absolute lifetime, and two doors that never
open each other: an API key opens no console page, a console session calls no API."""

from __future__ import annotations

import time
from http.cookies import SimpleCookie

import httpx
import pytest

from tests.console.conftest import SHORT_ABSOLUTE_SECONDS, SHORT_IDLE_SECONDS, SHORT_LOCKOUT_SECONDS
from tests.console.support import (
    csrf_of,
    moneyrail,
    new_operator,
)
from tests.harness import TLS
from tests.helpers import assert_error
from tests.web_process import another_web_process


def _set_cookie(response: httpx.Response, name: str) -> SimpleCookie:
    for header in response.headers.get_list("set-cookie"):
        if header.startswith(f"{name}="):
            cookie: SimpleCookie = SimpleCookie()
            cookie.load(header)
            return cookie
    raise AssertionError(f"no {name} cookie set: {response.headers.get_list('set-cookie')}")


def test_an_operator_sets_up_by_a_one_time_link_and_signs_in_with_password_and_totp(
    servers, web, browserless
):
    account, link = new_operator(servers, "operator", "setup")
    console = browserless(web.base_url)
    console.set_up(account, link)
    # the link was spent by its first open: another browser cannot open it, nor can this one again
    assert httpx.get(f"{web.base_url}{httpx.URL(link).path}", verify=TLS).status_code == 410
    assert console.get(httpx.URL(link).path).status_code == 410

    # a wrong code with the right password is refused like anything else wrong
    refused = console.sign_in(account, code=account.wrong_code())
    assert refused.status_code == 401 and "do not match" in refused.text
    signed_in = console.sign_in(account)
    assert signed_in.status_code == 303 and signed_in.headers["location"] == "/console"
    cookie = _set_cookie(signed_in, "moneyrail_console")["moneyrail_console"]
    assert (
        cookie["httponly"] is True and cookie["samesite"].lower() == "strict" and cookie["path"] == "/console"
    )
    assert not cookie["secure"]  # served over http here; over https (MONEYRAIL_PUBLIC_BASE_URL) it is Secure
    overview = console.get("/console")
    assert overview.status_code == 200 and account.email in overview.text
    assert "default-src 'none'" in overview.headers["content-security-policy"]
    assert overview.headers["cache-control"] == "no-store"

    # the session is the server's: signing out ends it for the cookie too
    signed_out = console.post("/console/logout", data={"csrf_token": csrf_of(overview)})
    assert signed_out.status_code == 303
    console.cookies.set("moneyrail_console", cookie.value, path="/console")
    assert console.get("/console").status_code == 303


def test_the_console_cookies_are_secure_when_the_service_is_served_over_https(servers):
    with another_web_process(
        servers, "web-console-https", MONEYRAIL_PUBLIC_BASE_URL="https://console.example"
    ) as base_url:
        _, link = new_operator(servers, "viewer", "https")
        # the test speaks http to it; the service knows its public address is https, so it sets every
        # cookie Secure (the way the hosted pages decide), which a browser keeps to https
        setup_page = httpx.get(f"{base_url}{httpx.URL(link).path}", verify=TLS)
        assert setup_page.status_code == 200
        (page_session,) = [
            header
            for header in setup_page.headers.get_list("set-cookie")
            if header.startswith("moneyrail_link_")
        ]
        assert "secure" in page_session.lower() and "httponly" in page_session.lower()
        login_form = httpx.get(f"{base_url}/console/login", verify=TLS)
        login_cookie = _set_cookie(login_form, "moneyrail_console_login")["moneyrail_console_login"]
        assert login_cookie["secure"] is True and login_cookie["samesite"].lower() == "strict"


def test_five_wrong_passwords_lock_the_account_for_a_while(servers, short_lived_web, db, browserless):
    account, link = new_operator(servers, "operator", "lockout")
    console = browserless(short_lived_web)
    console.set_up(account, link)
    for attempt in range(1, 5):
        wrong = console.sign_in(account, password=f"wrong password {attempt}", code=account.code(spend=False))
        assert wrong.status_code == 401, (attempt, wrong.text)
    fifth = console.sign_in(account, password="wrong password 5", code=account.code(spend=False))
    assert fifth.status_code == 429 and "locked" in fifth.text
    assert 1 <= int(fifth.headers["retry-after"]) <= SHORT_LOCKOUT_SECONDS + 1
    # locked: even the right password and code are refused, and no session begins
    right = console.sign_in(account, code=account.code(spend=False))
    assert right.status_code == 429 and "moneyrail_console=" not in right.headers.get("set-cookie", "")
    (locked,) = db.execute(
        "SELECT actor, via FROM audit_entries WHERE action = 'operator.locked' AND subject = %s",
        (account.email,),
    ).fetchall()
    assert locked == (account.email, "console")

    time.sleep(SHORT_LOCKOUT_SECONDS + 0.2)  # the lock's while (MONEYRAIL_CONSOLE_LOCKOUT_SECONDS)
    after = console.sign_in(account)
    assert after.status_code == 303, after.text
    assert console.get("/console").status_code == 200


def test_a_session_ends_when_idle(short_lived_web, signed_in):
    console, _ = signed_in(short_lived_web, "viewer", "idle")
    assert console.get("/console/operations").status_code == 200
    time.sleep(SHORT_IDLE_SECONDS + 0.2)
    ended = console.get("/console/operations")
    assert ended.status_code == 303
    assert ended.headers["location"] == "/console/login?next=%2Fconsole%2Foperations"


def test_a_session_ends_at_its_absolute_lifetime_however_busy(servers, short_lived_web, browserless):
    account, link = new_operator(servers, "viewer", "absolute")
    console = browserless(short_lived_web)
    console.set_up(account, link)
    started = time.monotonic()
    assert console.sign_in(account).status_code == 303
    step = SHORT_IDLE_SECONDS / 2
    sent = time.monotonic()
    # each request within the idle time keeps it going (spaced from the last one sent, so a slow answer
    # on a loaded machine does not stretch the gap past the idle time) ...
    while sent - started + step < SHORT_ABSOLUTE_SECONDS - 0.5:
        time.sleep(max(0.0, sent + step - time.monotonic()))
        sent = time.monotonic()
        assert console.get("/console/audit").status_code == 200
    # ... until its absolute end, whatever the activity
    time.sleep(max(0.0, SHORT_ABSOLUTE_SECONDS + 0.2 - (time.monotonic() - started)))
    assert console.get("/console/audit").status_code == 303


def test_an_api_key_never_opens_the_console(api, web):
    bearer = {"Authorization": f"Bearer {api.keys.secret}"}
    page = httpx.get(f"{web.base_url}/console", headers=bearer, verify=TLS)
    assert page.status_code == 303 and page.headers["location"].startswith("/console/login")
    operations = httpx.get(
        f"{web.base_url}/console/operations?status=dead_letter", headers=bearer, verify=TLS
    )
    assert operations.status_code == 303
    posted = httpx.post(
        f"{web.base_url}/console/operations/op_x/retry", headers=bearer, data={"reason": "x"}, verify=TLS
    )
    assert posted.status_code == 401 and "Sign in" in posted.text


def test_a_console_session_never_calls_the_api(web, signed_in):
    console, _ = signed_in(web.base_url, "operator", "api")
    session = console.cookies.get("moneyrail_console", path="/console")
    assert session
    # a browser would not even send it outside /console; sent anyway, the API does not read it
    for path in ("/v1/operations/op_x", "/v1/account", "/v1/balance"):
        answered = httpx.get(
            f"{web.base_url}{path}", headers={"Cookie": f"moneyrail_console={session}"}, verify=TLS
        )
        assert_error(answered, 401, "authentication_required")


def test_a_post_without_its_csrf_token_is_refused_and_changes_nothing(web, signed_in, browserless):
    console, _ = signed_in(web.base_url, "operator", "csrf")
    for token in (None, "forged", csrf_of(browserless(web.base_url).get("/console/login"))):
        data = {"reason": "no token"} if token is None else {"reason": "bad token", "csrf_token": token}
        refused = console.post("/console/operations/op_missing/retry", data=data)
        assert refused.status_code == 403 and "form" in refused.text
    signed_out = console.post("/console/logout", data={})
    assert signed_out.status_code == 403
    assert console.get("/console").status_code == 200  # still signed in


def test_disabling_an_operator_ends_its_sessions_and_reset_issues_a_new_link(servers, web, db, signed_in):
    console, account = signed_in(web.base_url, "operator", "disable")
    disabled = moneyrail(
        servers, "operators", "disable", account.email, "--operator", "root", "--reason", "left"
    )
    assert disabled.returncode == 0, disabled.stderr
    assert console.get("/console").status_code == 303
    listed = moneyrail(servers, "operators", "list")
    line = next(line for line in listed.stdout.splitlines() if account.email in line)
    assert "disabled" in line

    reset = moneyrail(servers, "operators", "reset", account.email, "--operator", "root")
    assert reset.returncode == 0 and "/console/setup/" in reset.stdout, reset.stderr
    enabled = moneyrail(servers, "operators", "enable", account.email, "--operator", "root")
    assert enabled.returncode == 0 and "awaiting set-up" in enabled.stdout, enabled.stdout
    actions = [
        row[0]
        for row in db.execute(
            "SELECT action FROM audit_entries WHERE subject = %s ORDER BY occurred_at, id", (account.email,)
        )
    ]
    assert actions == [
        "operator.created",
        "operator.set_up",
        "operator.signed_in",
        "operator.disabled",
        "operator.reset",
        "operator.enabled",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--email", "not-an-address", "--role", "viewer"), "is not an e-mail address"),
        (("--email", "x@example.com", "--role", "admin"), "viewer or operator"),
    ],
)
def test_operators_create_refuses_what_it_cannot_use(servers, args, message):
    refused = moneyrail(servers, "operators", "create", *args)
    assert refused.returncode == 1 and message in refused.stderr, refused.stderr


def test_the_scheduler_sweeps_sessions_a_month_after_they_ended(bridge, db):
    from moneyrail.engine.schedule import periodic_jobs

    db.execute("INSERT INTO operators (id, email, role) VALUES ('opr_sweep', 'sweep@example.com', 'viewer')")
    for session_id, ended, expires in (
        ("old_ended", "now() - interval '31 days'", "now() - interval '30 days'"),
        ("old_expired", "NULL", "now() - interval '31 days'"),
        ("recent", "now() - interval '1 day'", "now() + interval '1 hour'"),
    ):
        db.execute(
            "INSERT INTO operator_sessions (id, operator_id, last_seen_at, expires_at, ended_at)"
            f" VALUES (%s, 'opr_sweep', now(), {expires}, {ended})",
            (session_id,),
        )
    (job,) = [job for job in periodic_jobs() if job.name == "console.sessions"]
    assert bridge.in_unit_of_work(job.sweep) == 2
    kept = db.execute("SELECT id FROM operator_sessions WHERE operator_id = 'opr_sweep'").fetchall()
    assert kept == [("recent",)]
