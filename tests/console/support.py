"""What console tests share: operators made with the CLI and set up through their link, TOTP codes
computed as an authenticator app does, and an HTTP client that signs in like a browser."""

from __future__ import annotations

import html
import json
import re
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
import pyotp

from tests.harness import Servers, run_moneyrail

CSRF_FIELD = re.compile(r'name="csrf_token" value="([^"]+)"')
PASSWORD = "correct horse battery staple"


def moneyrail(servers: Servers, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_moneyrail(servers, *args, **env)


@dataclass
class Account:
    """An operator as a person holds it: e-mail, password, and the app that shows TOTP codes."""

    email: str
    role: str
    password: str = PASSWORD
    totp_secret: str = ""
    last_step: int = 0

    def code(self, *, spend: bool = True) -> str:
        """The code an app shows now, never one already used (the console takes each step once): a
        second sign-in within the same 30 s takes the next step's, which is still accepted.
        `spend=False` for a sign-in that will be refused anyway (the step stays usable)."""
        totp = pyotp.TOTP(self.totp_secret)
        current = totp.timecode(datetime.now(UTC))
        step = max(current, self.last_step + 1)
        assert step <= current + 1, "more sign-ins in 30 s than one account can make: use another"
        if spend:
            self.last_step = step
        return str(totp.generate_otp(step))

    def wrong_code(self) -> str:
        """A well-formed code that is not one of the steps accepted now."""
        totp = pyotp.TOTP(self.totp_secret)
        current = totp.timecode(datetime.now(UTC))
        accepted = {totp.generate_otp(step) for step in range(current - 1, current + 3)}
        return next(code for code in ("000000", "111111", "222222") if code not in accepted)


def new_operator(servers: Servers, role: str, tag: str) -> tuple[Account, str]:
    """`moneyrail operators create`: the account, and its one-time set-up link."""
    email = f"{tag}-{role}-{datetime.now(UTC):%H%M%S%f}@example.com"
    created = moneyrail(servers, "operators", "create", "--email", email, "--role", role, "--json")
    assert created.returncode == 0, created.stderr
    view = json.loads(created.stdout)
    assert view["status"] == "awaiting set-up"
    return Account(email, role), str(view["setup_url"])


def csrf_of(page: httpx.Response) -> str:
    found = CSRF_FIELD.search(page.text)
    assert found is not None, page.text[:2000]
    return html.unescape(found.group(1))


def totp_secret_of(page: httpx.Response) -> str:
    found = re.search(r'data-testid="totp-secret">([A-Z2-7 ]+)<', page.text)
    assert found is not None, page.text[:2000]
    return found.group(1).replace(" ", "")


class Console(httpx.Client):
    """A browser's worth of HTTP: keeps its cookies, follows no redirect by itself."""

    def __init__(self, base_url: str, **options: Any) -> None:
        super().__init__(base_url=base_url, timeout=30, follow_redirects=False, **options)

    def set_up(self, account: Account, setup_url: str) -> None:
        page = self.get(httpx.URL(setup_url).path)
        assert page.status_code == 200, page.text
        account.totp_secret = totp_secret_of(page)
        done = self.post(
            httpx.URL(setup_url).path,
            data={
                "password": account.password,
                "confirmation": account.password,
                "code": account.code(),
                "csrf_token": csrf_of(page),
            },
        )
        assert done.status_code == 200 and "Your account is ready" in done.text, done.text

    def sign_in(
        self, account: Account, *, password: str | None = None, code: str | None = None
    ) -> httpx.Response:
        form = self.get("/console/login")
        assert form.status_code == 200, form.text
        return self.post(
            "/console/login",
            data={
                "email": account.email,
                "password": account.password if password is None else password,
                "code": account.code() if code is None else code,
                "csrf_token": csrf_of(form),
            },
        )

    def form_token(self, path: str = "/console") -> str:
        page = self.get(path)
        assert page.status_code == 200, page.text
        return csrf_of(page)


def operator_console(servers: Servers, base_url: str, role: str, tag: str) -> tuple[Console, Account]:
    """A new operator of this role, set up and signed in."""
    account, link = new_operator(servers, role, tag)
    console = Console(base_url)
    console.set_up(account, link)
    signed_in = console.sign_in(account)
    assert signed_in.status_code == 303, signed_in.text
    return console, account
