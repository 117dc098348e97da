"""Receipts of succeeded payments, by e-mail and SMS.

The payments domain calls `schedule_receipts` in the transaction where a payment succeeds: one
`ReceiptDelivery` per channel, each with a `receipt_delivery` operation that a worker runs
(`send_receipt`), retried with backoff on the `default` queue.

Delivery statuses (the operation's outcome decides them):
    pending -> sent      the handler sent it (in the attempt's own transaction)
    pending -> failed    final: the operation ended for good, refused or its dead letter discarded by an
                         operator (an outcome listener, in the outcome's transaction: the handler's own
                         one was rolled back)

While the operation retries or waits in `dead_letter` the delivery stays `pending` with `last_error`
(final means final, CONVENTIONS.md §9); an operator's retry that goes through makes it `sent`.

Sending is at least once, made recognisable: every attempt of one e-mail carries the same Message-ID
(derived from the delivery id), and every attempt of one SMS the same idempotency key (derived from the
operation id), so a send whose commit was lost is deduplicated by the receiving side.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from email.message import EmailMessage
from email.utils import format_datetime, parseaddr

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.config import get_settings
from moneyrail.engine.outcomes import AttemptError, PermanentFailure
from moneyrail.engine.policy import RetryPolicy, register_policy
from moneyrail.engine.service import (
    create_operation,
    register_attempt_failure_listener,
    register_outcome_listener,
)
from moneyrail.errors import Conflict, ResourceMissing
from moneyrail.kit.clock import utcnow
from moneyrail.kit.ids import new_id
from moneyrail.kit.money import format_amount
from moneyrail.kit.pagination import Position
from moneyrail.kit.tenant import Tenant
from moneyrail.models import Operation, PaymentIntent, PaymentMethod, ReceiptDelivery
from moneyrail.processor.interface import operation_key

from . import repository, senders
from .recipients import is_valid_email, is_valid_phone, mask

logger = structlog.get_logger("moneyrail.deliveries")

RECEIPT_TYPE = "receipt_delivery"
RECEIPT_ACTOR = "deliveries.send_receipt"
RECEIPT_QUEUE = "default"
CHANNELS = ("email", "sms")
# By default 2 s doubling to a 10 min ceiling over 10 attempts (the receipt_* settings): about 9 to 17
# minutes in all, long enough to outlast a greylisting mail server (typically 5 minutes), short enough
# that a receipt is still timely.
register_policy(
    RECEIPT_TYPE,
    RetryPolicy(
        max_attempts=get_settings().receipt_max_attempts,
        base_delay=timedelta(seconds=get_settings().receipt_retry_base_seconds),
        max_delay=timedelta(minutes=10),
        queue_name=RECEIPT_QUEUE,
    ),
)

CARD_BRANDS = {
    "amex": "American Express",
    "diners": "Diners Club",
    "discover": "Discover",
    "jcb": "JCB",
    "mastercard": "Mastercard",
    "unionpay": "UnionPay",
    "visa": "Visa",
}


# --- scheduling --------------------------------------------------------------------------------
async def schedule_receipts(
    session: AsyncSession,
    tenant: Tenant,
    payment: PaymentIntent,
    *,
    email: str | None,
    phone: str | None,
) -> list[ReceiptDelivery]:
    """One pending delivery and its operation per channel given, in the caller's transaction.

    Idempotent: a channel that already has a delivery for this payment gets nothing new (the first
    recipient stands). Returns the deliveries of the channels given, created now or before.
    A malformed recipient is not refused here (that would undo the payment's own transaction): its
    delivery fails with `recipient_invalid`; the payments domain validates at intake.
    """
    if payment.installation_id != tenant.installation_id or payment.livemode != tenant.livemode:
        raise ValueError("schedule_receipts: the payment belongs to another tenant")
    if payment.status != "succeeded":
        raise Conflict(
            f"Receipts are sent for succeeded payments only; {payment.id} is {payment.status}.",
            param="payment_intent",
        )
    await session.flush()  # the payment row exists before a delivery references it
    wanted = {
        channel: recipient.strip()
        for channel, recipient in (("email", email), ("sms", phone))
        if recipient is not None and recipient.strip()
    }
    for channel, recipient in wanted.items():
        delivery = await repository.insert_delivery_unless_present(
            session,
            tenant,
            delivery_id=new_id("dlv"),
            payment_intent_id=payment.id,
            channel=channel,
            recipient=recipient,
        )
        if delivery is None:
            continue  # scheduled before: nothing new
        operation = await create_operation(
            session,
            tenant,
            operation_type=RECEIPT_TYPE,
            actor_name=RECEIPT_ACTOR,
            resource=delivery.id,
            payload={"delivery": delivery.id, "payment_intent": payment.id, "channel": channel},
        )
        delivery.operation_id = operation.id
    await session.flush()
    if not wanted:
        return []
    return list(await repository.deliveries_of_payment(session, tenant, payment.id, list(wanted)))


async def list_deliveries(
    session: AsyncSession, tenant: Tenant, payment_intent_id: str, *, limit: int, after: Position | None
) -> Sequence[ReceiptDelivery]:
    if await repository.get_payment(session, tenant, payment_intent_id) is None:
        raise ResourceMissing(f"No such payment intent: {payment_intent_id!r}", param="payment_intent")
    return await repository.list_deliveries(session, tenant, payment_intent_id, limit=limit, after=after)


# --- composing ---------------------------------------------------------------------------------
def describe_card(card: PaymentMethod) -> str:
    """Brand and last4 only: a card number is never stored, so it can never be written."""
    brand = CARD_BRANDS.get(card.brand.lower(), card.brand.title())
    return f"{brand} ending in {card.last4}"


@dataclass(frozen=True)
class Receipt:
    subject: str
    text: str  # the e-mail body
    short_text: str  # the SMS


def compose_receipt(payment: PaymentIntent, card: PaymentMethod | None) -> Receipt:
    amount = format_amount(payment.amount_received or payment.amount, payment.currency)
    paid_at: datetime = payment.captured_at or payment.created_at
    lines = [
        "Thank you for your payment.",
        "",
        f"Amount paid: {amount}",
        f"Payment: {payment.id}",
    ]
    if payment.description:
        lines.append(f"Description: {payment.description}")
    if card is not None:
        lines.append(f"Paid with: {describe_card(card)}")
    lines += [f"Date: {paid_at:%Y-%m-%d %H:%M} UTC", "", "Keep this e-mail as your receipt."]
    short = f"Receipt: {amount} paid"
    if payment.description:
        short += f" for {payment.description[:60]}"
    if card is not None:
        short += f" with {describe_card(card)}"
    short += f". Ref {payment.id}"
    return Receipt(subject=f"Your receipt for {amount}", text="\n".join(lines) + "\n", short_text=short)


def _mail_domain(address: str) -> str:
    _, parsed = parseaddr(address)
    domain = parsed.rpartition("@")[2]
    return domain or "moneyrail.localhost"


def message_id(delivery: ReceiptDelivery, sender: str) -> str:
    """The same for every attempt of one delivery, so a retried send is recognisable as the same mail."""
    return f"<receipt.{delivery.id}@{_mail_domain(sender)}>"


def build_email(delivery: ReceiptDelivery, receipt: Receipt, *, sender: str) -> EmailMessage:
    message = EmailMessage()
    message["From"] = sender
    message["To"] = delivery.recipient
    message["Subject"] = receipt.subject
    message["Date"] = format_datetime(delivery.created_at)  # fixed too: every attempt sends the same mail
    message["Message-ID"] = message_id(delivery, sender)
    message["X-Moneyrail-Delivery"] = delivery.id
    message["Auto-Submitted"] = "auto-generated"  # RFC 3834: no vacation replies to receipts
    message.set_content(receipt.text)
    return message


# --- sending (the `receipt_delivery` operation handler) ----------------------------------------
async def send_receipt(session: AsyncSession, operation: Operation) -> None:
    """One attempt to send one receipt; the delivery becomes `sent` in the attempt's transaction."""
    tenant = Tenant(operation.installation_id, operation.livemode)
    delivery = await repository.get_delivery(session, tenant, operation.payload["delivery"], for_update=True)
    if delivery is None:
        raise PermanentFailure("delivery_missing", "The receipt delivery no longer exists.")
    if delivery.status == "sent":
        return  # an earlier attempt sent it and committed
    payment = await repository.get_payment(session, tenant, delivery.payment_intent_id)
    if payment is None:
        raise PermanentFailure("payment_missing", "The payment of this receipt no longer exists.")
    card = None
    if payment.payment_method_id is not None:
        card = await repository.get_payment_method(session, tenant, payment.payment_method_id)
    receipt = compose_receipt(payment, card)
    settings = get_settings()
    if delivery.channel == "email":
        if not is_valid_email(delivery.recipient):
            raise PermanentFailure("recipient_invalid", "The receipt e-mail address is not a valid address.")
        if not settings.smtp_url:
            raise PermanentFailure("smtp_not_configured", "SMTP is not configured")
        server = senders.parse_smtp_url(settings.smtp_url)
        message = build_email(delivery, receipt, sender=settings.smtp_from)
        envelope_sender = parseaddr(settings.smtp_from)[1] or settings.smtp_from  # no display name
        await senders.send_email(server, message, sender=envelope_sender, recipient=delivery.recipient)
    else:
        if not is_valid_phone(delivery.recipient):
            raise PermanentFailure(
                "recipient_invalid", "The receipt phone number is not in international (E.164) form."
            )
        await senders.sms_sender(settings.sms_sender).send(
            session,
            tenant,
            recipient=delivery.recipient,
            body=receipt.short_text,
            idempotency_key=operation_key(operation.id, "sms"),
        )
    now = utcnow()
    delivery.status = "sent"
    delivery.sent_at = now
    delivery.last_error = None
    delivery.updated_at = now
    logger.info(
        "receipt_sent",
        delivery=delivery.id,
        channel=delivery.channel,
        recipient=mask(delivery.channel, delivery.recipient),
        payment_intent=payment.id,
    )


async def record_receipt_attempt_failed(
    session: AsyncSession, operation: Operation, error: AttemptError
) -> None:
    """An attempt failed: the delivery stays `pending` while its operation retries or waits in
    `dead_letter` for an operator (final means final), showing the reason."""
    if operation.type != RECEIPT_TYPE:
        return
    tenant = Tenant(operation.installation_id, operation.livemode)
    delivery = await repository.get_delivery(session, tenant, operation.payload["delivery"], for_update=True)
    if delivery is None or delivery.status != "pending":
        return
    delivery.last_error = operation.last_error or error.message
    delivery.updated_at = utcnow()


async def record_receipt_outcome(session: AsyncSession, operation: Operation) -> None:
    """An operation that ended for good without sending (refused, or its dead letter discarded by an
    operator) leaves its delivery `failed`, with the reason."""
    if operation.type != RECEIPT_TYPE or operation.status not in {"failed", "canceled"}:
        return
    tenant = Tenant(operation.installation_id, operation.livemode)
    delivery = await repository.get_delivery(session, tenant, operation.payload["delivery"], for_update=True)
    if delivery is None or delivery.status != "pending":
        return
    delivery.status = "failed"
    if operation.status == "canceled":
        delivery.last_error = f"Discarded by an operator: {operation.discard_reason}"
    delivery.last_error = delivery.last_error or operation.last_error or "The receipt could not be sent."
    delivery.updated_at = utcnow()
    logger.warning(
        "receipt_failed", delivery=delivery.id, channel=delivery.channel, error=delivery.last_error
    )


register_attempt_failure_listener(record_receipt_attempt_failed)
register_outcome_listener(record_receipt_outcome)
