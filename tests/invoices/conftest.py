"""Invoices sent by a real worker to a real SMTP server (aiosmtpd), with links to the hosted checkout."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.checkout.support import CANCEL_URL, SUCCESS_URL, enable_checkout
from tests.deliveries.mailserver import Mailbox, mail_server
from tests.payment_methods.support import new_customer
from tests.stacks import start_scheduler, start_worker

SMTP_FROM = "Shop Billing <billing@shop.example>"


@pytest.fixture(scope="module")
def mailbox(servers, web) -> Iterator[Mailbox]:
    with mail_server() as box:
        env = {
            "MONEYRAIL_SMTP_URL": box.url,
            "MONEYRAIL_SMTP_FROM": SMTP_FROM,
            # the links in the e-mails point at the test's web server
            "MONEYRAIL_PUBLIC_BASE_URL": web.base_url,
            "MONEYRAIL_RECEIPT_RETRY_BASE_SECONDS": "1",
        }
        worker = start_worker(servers, name="worker-invoices", **env)
        scheduler = start_scheduler(servers, name="scheduler-invoices", **env)
        try:
            yield box
        finally:
            worker.stop()
            scheduler.stop()


@pytest.fixture
def seller(api, bridge):
    """A sandbox with hosted checkout enabled and the shop's return URLs registered."""
    enable_checkout(bridge, api.keys)
    return api


def draft(api: httpx.Client, customer: str | None = None, **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "customer": customer or new_customer(api, email="ada@example.com", name="Ada"),
        "currency": "eur",
        "lines": [
            {"description": "Consulting, November", "quantity": 3, "unit_amount": 15000},
            {"description": "Travel", "unit_amount": 4250},
        ],
        "success_url": SUCCESS_URL,
        "cancel_url": CANCEL_URL,
    } | fields
    response = api.post("/v1/invoices", json=body)
    assert response.status_code == 200, response.text
    created: dict[str, Any] = response.json()
    return created


def finalize(api: httpx.Client, invoice: dict[str, Any]) -> dict[str, Any]:
    response = api.post(f"/v1/invoices/{invoice['id']}/finalize")
    assert response.status_code == 200, response.text
    finalized: dict[str, Any] = response.json()
    return finalized
