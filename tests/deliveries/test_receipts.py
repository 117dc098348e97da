"""Receipts of succeeded payments, sent by real worker processes to a real SMTP server (and the
sandbox SMS sender), and read back over HTTP."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import httpx
import pytest

from moneyrail.deliveries.senders import sms_sender
from moneyrail.engine.service import discard_dead_letter
from moneyrail.kit.tenant import Tenant
from moneyrail.processor.interface import operation_key
from tests.deliveries.conftest import (
    SMTP_FROM,
    create_succeeded_payment,
    deliveries,
    unique_email,
    wait_for_delivery,
)
from tests.deliveries.mailserver import Mailbox, mail_server
from tests.engine.conftest import wait_for_operation
from tests.harness import TLS, add_key
from tests.helpers import assert_error
from tests.payments.support import confirm, create_payment
from tests.stacks import start_scheduler, start_worker

CARD_NUMBER = "4242424242424242"


@pytest.fixture(scope="module")
def mailbox(servers) -> Iterator[Mailbox]:
    with mail_server() as box:
        env = {"MONEYRAIL_SMTP_URL": box.url, "MONEYRAIL_SMTP_FROM": SMTP_FROM}
        worker = start_worker(servers, name="worker-receipts", **env)
        scheduler = start_scheduler(servers, name="scheduler-receipts", **env)
        try:
            yield box
        finally:
            worker.stop()
            scheduler.stop()


def sms_rows(db, installation_id: str) -> list[tuple[str, str, str]]:
    return db.execute(
        "SELECT recipient, body, idempotency_key FROM sandbox_sms_messages WHERE installation_id = %s",
        (installation_id,),
    ).fetchall()


def test_an_email_receipt_arrives_once_with_the_amount_and_last4_and_no_card_number(api, bridge, mailbox):
    address = unique_email("jane")
    payment = create_succeeded_payment(bridge, api.keys.tenant, email=address, amount=1234, currency="eur")
    scheduled = payment.deliveries["email"]

    delivery = wait_for_delivery(api, payment.id, "email", {"sent", "failed"})
    assert delivery["status"] == "sent", delivery
    assert delivery == {
        "id": scheduled.id,
        "object": "delivery",
        "channel": "email",
        "recipient": "j***@example.com",
        "status": "sent",
        "last_error": None,
        "operation": scheduled.operation_id,  # it names the operation that sends it
        "sent_at": delivery["sent_at"],
        "livemode": False,
        "created": delivery["created"],
    }
    assert re.fullmatch(r"dlv_[0-9A-Za-z]{24}", delivery["id"])
    assert isinstance(delivery["sent_at"], int) and delivery["sent_at"] >= delivery["created"]
    assert wait_for_operation(api, scheduled.operation_id, {"succeeded"})["resource"] == scheduled.id

    time.sleep(0.5)  # nothing else arrives afterwards
    [received] = mailbox.to(address)
    message = received.message
    assert received.mail_from == "receipts@shop.example"  # the envelope sender, without display name
    assert message["From"] == SMTP_FROM and message["To"] == address
    assert "€12.34" in message["Subject"]
    body = received.body
    assert "€12.34" in body
    assert payment.id in body and "Two coffees" in body
    assert "Visa ending in 4242" in body
    assert CARD_NUMBER not in message.as_string()
    # retries of this delivery would carry the same identity
    assert message["Message-ID"] == f"<receipt.{scheduled.id}@shop.example>"
    assert message["X-Moneyrail-Delivery"] == scheduled.id


def test_an_sms_receipt_is_recorded_once_by_the_sandbox_sender(api, bridge, db, mailbox):
    payment = create_succeeded_payment(
        bridge, api.keys.tenant, phone="+33612341234", amount=500, currency="usd"
    )
    scheduled = payment.deliveries["sms"]

    delivery = wait_for_delivery(api, payment.id, "sms", {"sent", "failed"})
    assert delivery["status"] == "sent", delivery
    assert delivery["recipient"] == "+*******1234"
    assert delivery["id"] == scheduled.id and delivery["last_error"] is None
    [(recipient, body, key)] = sms_rows(db, api.keys.installation_id)
    assert recipient == "+33612341234"
    assert "$5.00" in body and "Visa ending in 4242" in body and payment.id in body
    assert CARD_NUMBER not in body
    assert key == operation_key(scheduled.operation_id, "sms")

    # a retried attempt (the same operation) records nothing more
    async def send_again(session):
        await sms_sender("sandbox").send(
            session, api.keys.tenant, recipient=recipient, body=body, idempotency_key=key
        )

    bridge.in_unit_of_work(send_again)
    assert len(sms_rows(db, api.keys.installation_id)) == 1


def test_both_channels_are_sent_and_listed_newest_first_in_pages(api, bridge, mailbox):
    address = unique_email("amir")
    payment = create_succeeded_payment(
        bridge, api.keys.tenant, email=address, phone="+14155550123", amount=100000, currency="jpy"
    )
    wait_for_delivery(api, payment.id, "email", {"sent"})
    wait_for_delivery(api, payment.id, "sms", {"sent"})
    listed = deliveries(api, payment.id)
    assert sorted(d["channel"] for d in listed) == ["email", "sms"]
    assert {d["recipient"] for d in listed} == {"a***@example.com", "+*******0123"}
    # newest first (rows of one transaction keep their insertion order: the later one first)
    assert [d["created"] for d in listed] == sorted((d["created"] for d in listed), reverse=True)
    first = api.get(f"/v1/payment-intents/{payment.id}/deliveries", params={"limit": 1}).json()
    assert first["object"] == "list" and first["has_more"] is True and first["next_cursor"]
    second = api.get(
        f"/v1/payment-intents/{payment.id}/deliveries", params={"limit": 1, "cursor": first["next_cursor"]}
    ).json()
    assert second["has_more"] is False and second["next_cursor"] is None
    assert [first["data"][0]["id"], second["data"][0]["id"]] == [d["id"] for d in listed]
    [received] = mailbox.to(address)
    assert "¥100,000" in received.body


def test_a_recipient_refused_with_a_5xx_reply_ends_failed_without_retry(api, bridge, mailbox):
    address = unique_email("gone")
    mailbox.refuse[address] = f"550 5.1.1 <{address}>: mailbox unavailable"
    payment = create_succeeded_payment(bridge, api.keys.tenant, email=address)
    scheduled = payment.deliveries["email"]

    delivery = wait_for_delivery(api, payment.id, "email", {"sent", "failed"})
    assert delivery["status"] == "failed"
    assert delivery["sent_at"] is None
    assert "550" in delivery["last_error"] and "mailbox unavailable" in delivery["last_error"]
    assert address not in delivery["last_error"]  # the server's echo of the address is masked too
    operation = wait_for_operation(api, scheduled.operation_id, {"failed"})
    assert operation["attempts"] == 1
    time.sleep(0.5)
    assert mailbox.attempts(address) == 1 and mailbox.to(address) == []


def test_a_4xx_reply_is_retried_until_the_server_accepts(api, bridge, mailbox):
    address = unique_email("grey")
    mailbox.defer[address] = 2  # greylisted twice, then accepted
    payment = create_succeeded_payment(bridge, api.keys.tenant, email=address)
    scheduled = payment.deliveries["email"]

    delivery = wait_for_delivery(api, payment.id, "email", {"sent", "failed"}, timeout=60)
    assert delivery["status"] == "sent", delivery
    assert delivery["last_error"] is None
    operation = wait_for_operation(api, scheduled.operation_id, {"succeeded"})
    assert operation["attempts"] == 3
    assert mailbox.attempts(address) == 3
    assert len(mailbox.to(address)) == 1


def test_a_receipt_whose_retries_run_out_waits_for_an_operator_with_the_last_reply(api, bridge, mailbox):
    address = unique_email("never")
    mailbox.defer[address] = 1000
    payment = create_succeeded_payment(bridge, api.keys.tenant, email=address, max_attempts=2)
    scheduled = payment.deliveries["email"]

    operation = wait_for_operation(api, scheduled.operation_id, {"dead_letter"}, timeout=60)
    assert operation["attempts"] == 2
    # final means final: dead-lettered is not failed; the delivery waits, showing the last reply
    (delivery,) = [d for d in deliveries(api, payment.id) if d["channel"] == "email"]
    assert (delivery["status"], delivery["operation"]) == ("pending", scheduled.operation_id)
    assert "451" in delivery["last_error"] and "Greylisted" in delivery["last_error"]
    assert mailbox.to(address) == []

    async def discard(session):
        await discard_dead_letter(
            session, scheduled.operation_id, operator="ops@example.com", reason="address no longer used"
        )

    bridge.in_unit_of_work(discard)
    (failed,) = [d for d in deliveries(api, payment.id) if d["channel"] == "email"]
    assert failed["status"] == "failed" and "address no longer used" in failed["last_error"]


def test_scheduling_receipts_twice_for_a_payment_creates_nothing_new(api, bridge, db, mailbox):
    address = unique_email("twice")
    payment = create_succeeded_payment(bridge, api.keys.tenant, email=address, phone="+447700900123")

    async def schedule_again(session):
        from moneyrail.deliveries.service import schedule_receipts
        from moneyrail.models import PaymentIntent

        row = await session.get(PaymentIntent, payment.id)
        again = await schedule_receipts(
            session, api.keys.tenant, row, email=unique_email("other"), phone="+447700900999"
        )
        return {d.channel: (d.id, d.operation_id, d.recipient) for d in again}

    again = bridge.in_unit_of_work(schedule_again)
    assert {channel: (d[0], d[1]) for channel, d in again.items()} == {
        channel: (d.id, d.operation_id) for channel, d in payment.deliveries.items()
    }
    assert again["email"][2] == address  # the first recipient stands
    counts = db.execute(
        "SELECT (SELECT count(*) FROM receipt_deliveries WHERE payment_intent_id = %s),"
        " (SELECT count(*) FROM operations WHERE type = 'receipt_delivery' AND installation_id = %s)",
        (payment.id, api.keys.installation_id),
    ).fetchone()
    assert counts == (2, 2)
    wait_for_delivery(api, payment.id, "email", {"sent"})
    wait_for_delivery(api, payment.id, "sms", {"sent"})
    time.sleep(0.5)
    assert len(mailbox.to(address)) == 1
    assert len(sms_rows(db, api.keys.installation_id)) == 1


def test_a_payment_with_no_receipt_recipient_gets_no_delivery(api, bridge):
    payment = create_succeeded_payment(bridge, api.keys.tenant)
    assert payment.deliveries == {}
    assert deliveries(api, payment.id) == []


def test_deliveries_of_an_unknown_or_foreign_payment_are_404(api, make_api, bridge, web):
    payment = create_succeeded_payment(bridge, api.keys.tenant, email=unique_email())
    other = make_api()
    assert_error(
        other.get(f"/v1/payment-intents/{payment.id}/deliveries"), 404, "resource_missing", "payment_intent"
    )
    assert_error(
        api.get("/v1/payment-intents/pi_000000000000000000000000/deliveries"),
        404,
        "resource_missing",
        "payment_intent",
    )
    # the same installation's live environment does not see a sandbox payment either
    live_key = add_key(bridge, Tenant(api.keys.installation_id, True), ("*",))
    with httpx.Client(
        base_url=web.base_url, headers={"Authorization": f"Bearer {live_key}"}, verify=TLS
    ) as live:
        assert_error(
            live.get(f"/v1/payment-intents/{payment.id}/deliveries"),
            404,
            "resource_missing",
            "payment_intent",
        )


def test_listing_deliveries_needs_the_payments_read_scope(api, bridge, web):
    payment = create_succeeded_payment(bridge, api.keys.tenant, email=unique_email())
    path = f"/v1/payment-intents/{payment.id}/deliveries"
    for scopes, status in ((("customers:read",), 403), (("payments:read",), 200), (("payments:write",), 200)):
        secret = add_key(bridge, api.keys.tenant, scopes)
        with httpx.Client(
            base_url=web.base_url, headers={"Authorization": f"Bearer {secret}"}, verify=TLS
        ) as client:
            response = client.get(path)
        if status == 403:
            assert_error(response, 403, "insufficient_scope")
        else:
            assert response.status_code == 200, response.text


def test_a_malformed_recipient_fails_without_retry(api, bridge, mailbox):
    payment = create_succeeded_payment(bridge, api.keys.tenant, phone="06 12 34 56 78")
    sms = wait_for_delivery(api, payment.id, "sms", {"sent", "failed"})
    assert sms["status"] == "failed" and "E.164" in sms["last_error"]
    assert sms["recipient"] == "******5678"


def test_a_payment_confirmed_over_the_api_sends_its_receipts_to_the_customer(api, db, mailbox):
    address = unique_email("ada")
    customer = api.post("/v1/customers", json={"email": address, "name": "Ada"}).json()
    payment = create_payment(api, 990, customer=customer["id"], receipt_phone="+4915112345678")
    assert confirm(api, payment, CARD_NUMBER).json()["status"] == "succeeded"

    email = wait_for_delivery(api, payment["id"], "email", {"sent", "failed"})
    sms = wait_for_delivery(api, payment["id"], "sms", {"sent", "failed"})
    assert (email["status"], sms["status"]) == ("sent", "sent")
    [received] = mailbox.to(address)
    assert "€9.90" in received.body and "4242" in received.body
    assert CARD_NUMBER not in received.body
    [(recipient, body, _key)] = sms_rows(db, api.keys.installation_id)
    assert recipient == "+4915112345678" and "€9.90" in body
