"""Sending an invoice: a real worker e-mails it through a real SMTP server with a hosted payment link;
the payer pays on the hosted checkout, and the invoice follows its payment to `paid`."""

from __future__ import annotations

import re
import time
from typing import Any

import httpx

from tests.checkout.support import SUCCESS_URL, card_form, enable_checkout
from tests.deliveries.conftest import wait_until
from tests.deliveries.mailserver import Mailbox
from tests.engine.conftest import wait_for_operation
from tests.harness import TLS
from tests.helpers import assert_error, count_rows
from tests.invoices.conftest import SMTP_FROM, draft, finalize
from tests.payment_methods.support import new_customer
from tests.payments.support import SUCCEEDS, event_types, ledger_balance

LINK = re.compile(r"(http://\S+/checkout/[0-9A-Za-z]{43})")


def sent_invoice(api: httpx.Client, invoice_id: str) -> dict[str, Any]:
    response = api.post(f"/v1/invoices/{invoice_id}/send")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def wait_for_sent(api: httpx.Client, invoice_id: str, delivery_id: str) -> dict[str, Any]:
    def settled() -> dict[str, Any] | None:
        invoice = api.get(f"/v1/invoices/{invoice_id}").json()
        found = next(d for d in invoice["deliveries"] if d["id"] == delivery_id)
        return found if found["status"] in {"sent", "failed"} else None

    delivery: dict[str, Any] = wait_until(settled, 30)
    return delivery


def link_in(mailbox: Mailbox, address: str, count: int = 1) -> str:
    messages = wait_until(lambda: len(mailbox.to(address)) >= count and mailbox.to(address), 30)
    match = LINK.search(messages[count - 1].body)
    assert match is not None, messages[count - 1].body
    return match.group(1)


def test_a_sent_invoice_arrives_by_email_with_its_lines_and_a_link_that_pays_it(seller, mailbox, db):
    address = f"ada.{time.time_ns()}@example.com"
    customer = new_customer(seller, email=address, name="Ada")
    invoice = finalize(seller, draft(seller, customer, description="Thank you for your business."))
    answered = sent_invoice(seller, invoice["id"])
    [pending] = answered["deliveries"]
    assert pending["status"] == "pending" and pending["channel"] == "email"
    assert pending["recipient"] == "a***@example.com" and pending["checkout_session"] is None
    # the answer names the operation that sends it (CONVENTIONS.md §9)
    assert pending["operation"] == _operation_of(db, pending["id"])
    assert seller.get(f"/v1/operations/{pending['operation']}").json()["type"] == "invoice_delivery"

    delivery = wait_for_sent(seller, invoice["id"], pending["id"])
    assert delivery["status"] == "sent", delivery
    assert delivery["checkout_session"].startswith("cs_") and isinstance(delivery["sent_at"], int)
    [received] = mailbox.to(address)
    message = received.message
    assert received.mail_from == "billing@shop.example"
    assert message["From"] == SMTP_FROM and message["To"] == address
    assert message["Subject"] == "Invoice INV-000001 from test installation: €492.50 due"
    assert message["Message-ID"] == f"<invoice.{pending['id']}@shop.example>"
    body = received.body
    assert "3 x Consulting, November: €450.00" in body and "1 x Travel: €42.50" in body
    assert "Amount due: €492.50" in body and "Thank you for your business." in body

    # the link opens the hosted checkout for the invoice's payment, under the invoice's title
    url = link_in(mailbox, address)
    assert url.startswith(str(seller.base_url))
    page = httpx.get(url, verify=TLS)
    assert page.status_code == 200 and "Invoice INV-000001" in page.text and "€492.50" in page.text
    session = seller.get(f"/v1/checkout-sessions/{delivery['checkout_session']}").json()
    assert session["payment_intent"] == invoice["payment_intent"] and session["status"] == "open"
    # the credential is in the e-mail only: not stored, not in the operation
    token = url.rsplit("/", 1)[1]
    operation = wait_for_operation(seller, _operation_of(db, pending["id"]), {"succeeded"})
    assert token not in str(operation)
    assert (
        db.execute("SELECT count(*) FROM operations WHERE payload::text LIKE %s", (f"%{token}%",)).fetchone()[
            0
        ]
        == 0
    )

    paid = httpx.post(url, data=card_form(SUCCEEDS), verify=TLS)
    assert paid.status_code == 303 and paid.headers["location"] == SUCCESS_URL
    after = seller.get(f"/v1/invoices/{invoice['id']}").json()
    assert after["status"] == "paid" and after["amount_paid"] == 49250 and isinstance(after["paid_at"], int)
    payment = seller.get(f"/v1/payment-intents/{invoice['payment_intent']}").json()
    assert payment["status"] == "succeeded" and payment["amount_received"] == 49250
    assert ledger_balance(db, seller.keys.installation_id, "balance:pending") == 49250
    assert event_types(seller, invoice["id"]) == [
        "invoice.created",
        "invoice.finalized",
        "invoice.sent",
        "invoice.paid",
    ]
    # paid: nothing more to send
    assert_error(seller.post(f"/v1/invoices/{invoice['id']}/send"), 409, "resource_state_invalid")


def _operation_of(db: Any, delivery_id: str) -> str:
    row = db.execute("SELECT operation_id FROM invoice_deliveries WHERE id = %s", (delivery_id,)).fetchone()
    return str(row[0])


def test_an_expired_link_leaves_the_invoice_payable_and_sending_again_makes_a_new_link(seller, mailbox):
    address = f"bob.{time.time_ns()}@example.com"
    invoice = finalize(seller, draft(seller, new_customer(seller, email=address)))
    first = sent_invoice(seller, invoice["id"])["deliveries"][0]
    sent = wait_for_sent(seller, invoice["id"], first["id"])
    old_link = link_in(mailbox, address)

    expired = seller.post(f"/v1/checkout-sessions/{sent['checkout_session']}/expire")
    assert expired.status_code == 200 and expired.json()["status"] == "expired"
    # the link is gone, the invoice's payment is not: it belongs to the invoice, which is still due
    assert httpx.get(old_link, verify=TLS).status_code == 410
    payment = seller.get(f"/v1/payment-intents/{invoice['payment_intent']}").json()
    assert payment["status"] == "requires_payment_method"
    assert seller.get(f"/v1/invoices/{invoice['id']}").json()["status"] == "open"

    again = sent_invoice(seller, invoice["id"])
    assert [d["id"] for d in again["deliveries"]][1] == first["id"]  # newest first
    second = wait_for_sent(seller, invoice["id"], again["deliveries"][0]["id"])
    assert second["checkout_session"] != sent["checkout_session"]
    new_link = link_in(mailbox, address, count=2)
    assert new_link != old_link
    assert httpx.post(new_link, data=card_form(SUCCEEDS), verify=TLS).status_code == 303
    assert seller.get(f"/v1/invoices/{invoice['id']}").json()["status"] == "paid"


def test_any_checkout_that_pays_the_invoice_payment_marks_the_invoice_paid(seller):
    invoice = finalize(seller, draft(seller))
    created = seller.post(
        "/v1/checkout-sessions",
        json={
            "payment_intent": invoice["payment_intent"],
            "title": "Invoice",
            "success_url": SUCCESS_URL,
            "cancel_url": invoice["cancel_url"],
        },
    ).json()
    assert httpx.post(created["checkout_url"], data=card_form(SUCCEEDS), verify=TLS).status_code == 303
    assert seller.get(f"/v1/invoices/{invoice['id']}").json()["status"] == "paid"


def test_sending_is_refused_for_a_draft_without_an_email_or_without_checkout_and_writes_nothing(
    api, bridge, db
):
    enable_checkout(bridge, api.keys)
    a_draft = draft(api)
    assert_error(api.post(f"/v1/invoices/{a_draft['id']}/send"), 409, "resource_state_invalid")

    no_email = finalize(api, draft(api, new_customer(api, name="No mail")))
    assert_error(api.post(f"/v1/invoices/{no_email['id']}/send"), 400, "parameter_invalid", "customer")

    no_urls = finalize(api, draft(api, success_url=None, cancel_url=None))
    assert_error(api.post(f"/v1/invoices/{no_urls['id']}/send"), 400, "parameter_missing", "success_url")

    unregistered = finalize(api, draft(api, cancel_url="https://elsewhere.example/cancel"))
    assert_error(api.post(f"/v1/invoices/{unregistered['id']}/send"), 400, "url_not_registered", "cancel_url")

    enable_checkout(bridge, api.keys, enabled=False)
    ready = finalize(api, draft(api))
    assert_error(api.post(f"/v1/invoices/{ready['id']}/send"), 403, "checkout_not_enabled")

    assert count_rows(db, "invoice_deliveries", api.keys.installation_id) == 0
    assert count_rows(db, "operations", api.keys.installation_id) == 0


def test_a_refused_recipient_leaves_the_delivery_failed_with_the_reason(seller, mailbox):
    address = f"nobody.{time.time_ns()}@example.com"
    mailbox.refuse[address] = "550 5.1.1 No such user"
    invoice = finalize(seller, draft(seller, new_customer(seller, email=address)))
    pending = sent_invoice(seller, invoice["id"])["deliveries"][0]
    failed = wait_for_sent(seller, invoice["id"], pending["id"])
    assert failed["status"] == "failed"
    assert "550" in failed["last_error"] and address not in failed["last_error"]
    assert failed["checkout_session"] is None  # the link made for it was rolled back with the attempt
    assert seller.get(f"/v1/invoices/{invoice['id']}").json()["status"] == "open"


def test_a_deferred_send_is_retried_and_leaves_one_mail_and_one_link(seller, mailbox, db):
    address = f"grey.{time.time_ns()}@example.com"
    mailbox.defer[address] = 1  # the first attempt is greylisted (451), the retry goes through
    invoice = finalize(seller, draft(seller, new_customer(seller, email=address)))
    pending = sent_invoice(seller, invoice["id"])["deliveries"][0]
    delivery = wait_for_sent(seller, invoice["id"], pending["id"])
    assert delivery["status"] == "sent"
    assert mailbox.attempts(address) == 2
    assert len(mailbox.to(address)) == 1
    # the first attempt's link was rolled back with it: the payment has exactly the link that was mailed
    sessions = db.execute(
        "SELECT id FROM checkout_sessions WHERE payment_intent_id = %s", (invoice["payment_intent"],)
    ).fetchall()
    assert [row[0] for row in sessions] == [delivery["checkout_session"]]
