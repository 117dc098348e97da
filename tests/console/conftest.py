"""A web process of its own whose console sessions and lockouts are short, for the tests that wait
them out (seconds, not the production half hour)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.console.support import Account, Console, operator_console
from tests.web_process import another_web_process

SHORT_IDLE_SECONDS = 3.0
SHORT_ABSOLUTE_SECONDS = 6.0
SHORT_LOCKOUT_SECONDS = 4.0


@pytest.fixture(scope="module")
def short_lived_web(servers) -> Iterator[str]:
    with another_web_process(
        servers,
        "web-console-short",
        MONEYRAIL_CONSOLE_SESSION_IDLE_SECONDS=str(SHORT_IDLE_SECONDS),
        MONEYRAIL_CONSOLE_SESSION_ABSOLUTE_SECONDS=str(SHORT_ABSOLUTE_SECONDS),
        MONEYRAIL_CONSOLE_LOCKOUT_SECONDS=str(SHORT_LOCKOUT_SECONDS),
    ) as base_url:
        yield base_url


@pytest.fixture
def signed_in(servers) -> Iterator[Any]:
    """`signed_in(base_url, role, tag)`: a new operator of that role, set up and signed in: (its
    console client, its account). The clients close at the test's end."""
    opened: list[Console] = []

    def open_console(base_url: str, role: str, tag: str) -> tuple[Console, Account]:
        console, account = operator_console(servers, base_url, role, tag)
        opened.append(console)
        return console, account

    yield open_console
    for console in opened:
        console.close()


@pytest.fixture
def browserless() -> Iterator[Any]:
    """`browserless(base_url)`: a console client not signed in, closed at the test's end."""
    opened: list[Console] = []

    def open_console(base_url: str) -> Console:
        console = Console(base_url)
        opened.append(console)
        return console

    yield open_console
    for console in opened:
        console.close()
