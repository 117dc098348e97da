"""A worker with no SMTP server configured: e-mail receipts fail clearly, SMS receipts still go."""

from __future__ import annotations

from tests.deliveries.conftest import create_succeeded_payment, unique_email, wait_for_delivery
from tests.engine.conftest import wait_for_operation


def test_without_smtp_an_email_receipt_fails_with_a_clear_message(api, bridge, money_stack):
    payment = create_succeeded_payment(bridge, api.keys.tenant, email=unique_email(), phone="+33612341234")
    email = wait_for_delivery(api, payment.id, "email", {"sent", "failed"})
    assert email["status"] == "failed"
    assert "SMTP is not configured" in email["last_error"]
    operation = wait_for_operation(api, payment.deliveries["email"].operation_id, {"failed"})
    assert operation["attempts"] == 1  # a configuration gap is not retried
    sms = wait_for_delivery(api, payment.id, "sms", {"sent", "failed"})
    assert sms["status"] == "sent"
