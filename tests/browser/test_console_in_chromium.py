"""The operator console in a real Chromium (issue 27): an operator sets up and signs in with a password
and a TOTP code (computed here as an authenticator app does), finds a dead-lettered transfer by its
error, reads its attempts and its money, retries it with a reason and sees it succeed and the audit
entry; a viewer sees everything and can change nothing (no form, a forged post is 403); a post without
its CSRF token is refused; a bulk retry shows its count in a dry run, then retries exactly those.

Real worker and scheduler processes run the transfers (a sandbox processor fault dead-letters one),
and the pages run under their strict Content-Security-Policy, with no script at all."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from tests.browser.conftest import SCREENSHOTS
from tests.console.support import Account, new_operator
from tests.console.test_audit_log import dead_letters_made_by_hand
from tests.engine.conftest import (
    create_probes,
    wait_for_operation,
)
from tests.transfers.support import FINAL
from tests.transfers.test_final_means_final import waiting_transfer

ERROR_TEXT = "injected permanent fault"


@pytest.fixture
def platform(make_api):
    """A platform installation's sandbox: it distributes payments to connected accounts."""
    return make_api(kind="platform")


@pytest.fixture
def console_browser(chromium: str) -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(headless=True, executable_path=chromium, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


def open_page(browser: Browser, violations: list[str]) -> Page:
    context = browser.new_context(viewport={"width": 1366, "height": 900})  # a laptop
    opened = context.new_page()
    opened.on(
        "console",
        lambda message: (
            violations.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    return opened


def set_up_and_sign_in(page: Page, base_url: str, account: Account, link: str) -> None:
    """As a new operator does: the one-time link, the app fed with the key shown, then the sign-in."""
    answered = page.goto(base_url + httpx.URL(link).path)
    assert answered is not None and answered.status == 200
    expect(page.get_by_test_id("setup-email")).to_have_text(account.email)
    expect(page.locator("svg.segno")).to_be_visible()  # the QR code, drawn by the server
    account.totp_secret = page.get_by_test_id("totp-secret").inner_text().replace(" ", "")
    assert (page.get_by_test_id("totp-uri").text_content() or "").startswith("otpauth://totp/")
    page.get_by_label("Password (12 characters or more)").fill(account.password)
    page.get_by_label("The password again").fill(account.password)
    page.get_by_label("The code your app shows now").fill(account.code())
    page.get_by_role("button", name="Finish set-up").click()
    expect(page.get_by_role("heading", name="Your account is ready")).to_be_visible()
    page.get_by_role("link", name="Sign in").click()
    page.get_by_label("E-mail").fill(account.email)
    page.get_by_label("Password").fill(account.password)
    page.get_by_label("Code from your authenticator app").fill(account.code())
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_test_id("signed-in-as")).to_have_text(account.email)


def form_token(page: Page) -> str:
    """The session's CSRF token, as every form of the page carries it (the sign-out form's)."""
    token = page.locator("input[name=csrf_token]").first.get_attribute("value")
    assert token
    return token


def reload_until(page: Page, test_id: str, text: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while text not in page.get_by_test_id(test_id).inner_text():
        assert time.monotonic() < deadline, f"{test_id} never showed {text!r}"
        time.sleep(0.5)
        page.reload()


def test_an_operator_finds_a_dead_lettered_transfer_by_its_error_reads_its_money_and_retries_it(
    servers, web, platform, money_stack, console_browser
):
    transfer, _payment, courier = waiting_transfer(platform)
    operation_id = transfer["operation"]
    account, link = new_operator(servers, "operator", "chromium")
    violations: list[str] = []
    page = open_page(console_browser, violations)
    base = web.base_url

    # a page asked for before signing in leads to the sign-in form
    page.goto(f"{base}/console/operations")
    expect(page.get_by_role("heading", name="Sign in to the console")).to_be_visible()
    set_up_and_sign_in(page, base, account, link)
    page.goto(f"{base}/console")
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    expect(page.get_by_test_id("leader")).to_contain_text("leading")
    expect(page.get_by_test_id("leader")).to_contain_text("moneyrail scheduler on")
    expect(page.get_by_test_id("broker")).to_contain_text("reachable")
    expect(page.get_by_test_id("dead-letters")).to_contain_text(ERROR_TEXT)
    expect(page.get_by_test_id("throughput-chart")).to_be_visible()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "console-overview.png"), full_page=True)

    # found by its error (and its installation, among the suite's other dead letters)
    page.get_by_role("link", name="Operations", exact=True).click()
    page.get_by_label("Status").select_option("dead_letter")
    page.get_by_label("Installation").fill(platform.keys.installation_id)
    page.get_by_label("Error contains").fill(ERROR_TEXT)
    page.get_by_role("button", name="Show").click()
    rows = page.get_by_test_id("operations").locator("tbody tr")
    expect(rows).to_have_count(1)
    page.get_by_role("link", name=operation_id).click()

    # its attempts, its object waiting with the error, and no money moved yet
    expect(page.get_by_test_id("operation-status")).to_have_text("dead_letter")
    attempts = page.get_by_test_id("attempts").locator("tbody tr")
    expect(attempts).to_have_count(5)
    expect(attempts.first).to_contain_text(ERROR_TEXT)
    expect(attempts.first).to_contain_text("retry")
    expect(attempts.last).to_contain_text("dead_letter")
    expect(attempts.first).to_contain_text(" s")  # its duration
    expect(page.get_by_test_id("object")).to_contain_text("committing")
    parts = page.get_by_test_id("object-parts")
    expect(parts).to_contain_text(transfer["id"])
    expect(parts).to_contain_text("pending")
    expect(parts).to_contain_text("processor_error")
    expect(page.get_by_test_id("no-ledger")).to_be_visible()
    # the operating guide's picture (docs/guides/images/console.png) is one of these, copied by hand
    page.screenshot(path=str(SCREENSHOTS / "console-dead-letter.png"))

    # a post without the session's CSRF token is refused, and changes nothing
    forged = page.request.post(f"{base}/console/operations/{operation_id}/retry", form={"reason": "no token"})
    assert forged.status == 403
    assert platform.get(f"/v1/operations/{operation_id}").json()["status"] == "dead_letter"

    reason = "processor fixed; paying the courier"
    page.get_by_label("Why retry").fill(reason)
    page.get_by_role("button", name="Retry", exact=True).click()
    expect(page.get_by_test_id("done")).to_contain_text("Retried")
    reload_until(page, "operation-status", "succeeded")
    expect(page.get_by_test_id("object-parts")).to_contain_text("paid")
    ledger = page.get_by_test_id("ledger")
    expect(ledger).to_contain_text(transfer["id"])
    expect(ledger).to_contain_text("transfer")
    expect(ledger).to_contain_text(f"connect:{courier}")
    decisions = page.get_by_test_id("decisions")
    expect(decisions).to_contain_text(account.email)
    expect(decisions).to_contain_text(reason)
    expect(page.locator("[data-testid=retry-form]")).to_have_count(0)  # nothing left to decide
    page.screenshot(path=str(SCREENSHOTS / "console-operation.png"), full_page=True)

    page.get_by_role("link", name="Audit log").click()
    first = page.get_by_test_id("audit").locator("tbody tr").first
    expect(first).to_contain_text(account.email)
    expect(first).to_contain_text("dead_letter.retry")
    expect(first).to_contain_text(operation_id)
    expect(first).to_contain_text(reason)

    assert platform.get(f"/v1/transfers/{transfer['id']}").json()["status"] == "paid"
    assert violations == []
    page.context.close()


@pytest.fixture
def waiting_by_hand(bridge, tenant) -> list[str]:
    return dead_letters_made_by_hand(bridge, tenant, 1, operation_type="viewer_check")


def test_a_viewer_sees_everything_and_can_retry_nothing(servers, web, api, waiting_by_hand, console_browser):
    (operation_id,) = waiting_by_hand
    account, link = new_operator(servers, "viewer", "chromium")
    violations: list[str] = []
    page = open_page(console_browser, violations)
    base = web.base_url
    set_up_and_sign_in(page, base, account, link)
    expect(page.get_by_test_id("role")).to_have_text("viewer")

    page.goto(f"{base}/console/operations?status=dead_letter&installation={api.keys.installation_id}")
    expect(page.get_by_test_id("operations")).to_contain_text(operation_id)
    expect(page.get_by_test_id("bulk-retry")).to_have_count(0)
    page.get_by_role("link", name=operation_id).click()
    expect(page.get_by_test_id("operation-status")).to_have_text("dead_letter")
    expect(page.get_by_test_id("last-error")).to_contain_text("made by hand")
    expect(page.get_by_test_id("read-only")).to_be_visible()
    expect(page.locator("[data-testid=retry-form], [data-testid=discard-form]")).to_have_count(0)
    page.goto(
        f"{base}/console/operations/bulk?status=dead_letter&action=retry&installation={api.keys.installation_id}"
    )
    expect(page.get_by_test_id("dry-run-count")).to_contain_text("1 dead letter")
    expect(page.locator("[data-testid=bulk-form]")).to_have_count(0)

    # a post forged with the viewer's own valid session and token: refused by role
    token = form_token(page)
    for path, form in (
        (f"/console/operations/{operation_id}/retry", {"reason": "forged", "csrf_token": token}),
        (
            "/console/operations/bulk",
            {"action": "discard", "operation": operation_id, "reason": "forged", "csrf_token": token},
        ),
    ):
        forged = page.request.post(base + path, form=form)
        assert forged.status == 403, forged.text()
        assert "Your role cannot do this" in forged.text()
    assert api.get(f"/v1/operations/{operation_id}").json()["status"] == "dead_letter"
    assert violations == []
    page.context.close()


@pytest.fixture
def probe_dead_letters(api, bridge, money_stack) -> tuple[list[str], str]:
    """Three probe operations dead-lettered by transient faults (one per attempt, three attempts each),
    and one more dead letter of the same installation that the bulk filter leaves out."""
    faulted = api.post(
        "/v1/test-helpers/processor-faults",
        json={"operation_type": "transfer", "mode": "transient", "count": 9},
    )
    assert faulted.status_code == 200, faulted.text
    chosen = create_probes(bridge, api.keys.tenant, [{"amount": amount} for amount in (100, 200, 300)])
    (left_out,) = dead_letters_made_by_hand(bridge, api.keys, 1, operation_type="left_out_check")
    for operation_id in chosen:
        assert wait_for_operation(api, operation_id, FINAL, timeout=60)["status"] == "dead_letter"
    return chosen, left_out


def test_a_bulk_retry_shows_its_count_in_a_dry_run_then_retries_exactly_those(
    servers, web, api, probe_dead_letters, console_browser
):
    chosen, left_out = probe_dead_letters
    account, link = new_operator(servers, "operator", "bulk")
    violations: list[str] = []
    page = open_page(console_browser, violations)
    base = web.base_url
    set_up_and_sign_in(page, base, account, link)

    page.goto(f"{base}/console/operations?installation={api.keys.installation_id}&status=dead_letter")
    expect(page.get_by_test_id("operations").locator("tbody tr")).to_have_count(4)
    page.get_by_label("Type").fill("probe_transfer")
    page.get_by_role("button", name="Show").click()
    expect(page.get_by_test_id("operations").locator("tbody tr")).to_have_count(3)
    page.get_by_test_id("bulk-retry").click()

    expect(page.get_by_test_id("dry-run-count")).to_contain_text("3 dead letters match")
    listed = page.get_by_test_id("dry-run").locator("tbody tr code").all_inner_texts()
    assert sorted(text for text in listed if text.startswith("op_")) == sorted(chosen)
    for operation_id in [*chosen, left_out]:  # a dry run changes nothing
        assert api.get(f"/v1/operations/{operation_id}").json()["status"] == "dead_letter"

    page.get_by_label(re.compile("Why retry these 3")).fill("faults cleared")
    page.get_by_role("button", name="Retry these 3").click()
    expect(page.get_by_test_id("audit-actor")).to_contain_text(account.email)
    expect(page.get_by_test_id("audit-reason")).to_have_text("faults cleared")
    expect(page.get_by_test_id("audit-count")).to_have_text("3")
    shown = page.get_by_test_id("audit-operations").locator("tbody tr td:first-child").all_inner_texts()
    assert sorted(shown) == sorted(chosen)

    for operation_id in chosen:
        assert wait_for_operation(api, operation_id, FINAL, timeout=60)["status"] == "succeeded"
    assert api.get(f"/v1/operations/{left_out}").json()["status"] == "dead_letter"
    assert violations == []
    page.context.close()
