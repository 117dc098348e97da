"""/docs renders the contract in a real browser with no network beyond this server (issue 14:
Swagger UI used to load from a public CDN and showed a blank page offline)."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, Route, sync_playwright


@pytest.fixture
def offline_page(chromium: str, web) -> Iterator[tuple[Page, list[str]]]:
    """A page that can reach only the service: every other request is refused and recorded."""
    own_host = urlsplit(web.base_url).netloc
    refused: list[str] = []

    def only_the_service(route: Route) -> None:
        if urlsplit(route.request.url).netloc == own_host:
            route.continue_()
        else:
            refused.append(route.request.url)
            route.abort()

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(headless=True, executable_path=chromium, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.route("**/*", only_the_service)
            yield page, refused
        finally:
            browser.close()


def test_swagger_ui_renders_every_operation_offline(offline_page, web):
    page, refused = offline_page
    page.goto(f"{web.base_url}/docs")
    page.wait_for_selector(".opblock", timeout=30_000)
    assert page.locator(".opblock").count() >= 40
    assert page.get_by_text("Create a payment intent").count() >= 1
    assert refused == []
