"""The hosted pages in a real browser: Debian's Chromium driven by Playwright, a shop to return to.

Playwright's sync API runs an event loop of its own, so the async bridge (tests/harness.py) cannot run
while a browser is open: everything that needs it happens in fixtures set up before the browser.
"""

from __future__ import annotations

import html
import os
import re
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from tests.checkout.support import enable_checkout
from tests.harness import OUTPUT_DIR
from tests.stripe_environments.conftest import on_stripe  # noqa: F401 - the processes on Stripe, per module

CHROMIUM = "/usr/bin/chromium"
SCREENSHOTS = OUTPUT_DIR / "browser"


def chromium_path() -> str | None:
    if Path(CHROMIUM).exists():
        return CHROMIUM
    return shutil.which("chromium")


@pytest.fixture(scope="session")
def chromium() -> str:
    found = chromium_path()
    if found is None:
        message = (
            "Chromium is not installed: the browser tests drive Debian's Chromium at /usr/bin/chromium. "
            "Install it with `apt-get install chromium` (as root)."
        )
        if os.environ.get("CI") == "true":
            pytest.fail(message + " On CI, .ci/run installs it.")
        pytest.skip(message)
    return found


@dataclass
class Shop:
    """The caller's own site: the pages a payer comes back to."""

    base_url: str
    visits: list[str] = field(default_factory=list)

    @property
    def success_url(self) -> str:
        return f"{self.base_url}/checkout/success"

    @property
    def cancel_url(self) -> str:
        return f"{self.base_url}/checkout/cancel"


@pytest.fixture(scope="session")
def shop_site() -> Iterator[Shop]:
    visits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            visits.append(self.path)
            heading = {
                "/checkout/success": "Thank you for your order",
                "/checkout/cancel": "Your order is not paid",
            }.get(self.path.split("?")[0], "Shop")
            body = (
                f"<!doctype html><title>{heading}</title><h1>{heading}</h1>"
                f"<p>Shop page {html.escape(self.path)}</p>"
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Shop(f"http://127.0.0.1:{server.server_address[1]}", visits)
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def seller(api, bridge, shop_site):
    """An installation whose sandbox has checkout enabled and the shop's pages registered."""
    enable_checkout(bridge, api.keys, (shop_site.success_url, shop_site.cancel_url))
    return api


@pytest.fixture
def browser(chromium: str, seller) -> Iterator[Browser]:
    """One browser per test, started after the async bridge has done its work (see the module doc)."""
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(headless=True, executable_path=chromium, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def csp_violations() -> list[str]:
    """What the browser refused under the pages' Content-Security-Policy: a test ends with none."""
    return []


@pytest.fixture
def page(browser: Browser, csp_violations: list[str], request: pytest.FixtureRequest) -> Iterator[Page]:
    context = browser.new_context()
    opened = context.new_page()

    def on_console(message: Any) -> None:
        if "Content Security Policy" in message.text:
            csp_violations.append(message.text)

    opened.on("console", on_console)
    try:
        yield opened
    finally:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        name = re.sub(r"[^0-9A-Za-z_.-]+", "_", request.node.name)
        opened.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)
        context.close()
