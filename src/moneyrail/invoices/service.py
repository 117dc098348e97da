"""Payment invoices (spec 4.K). The state machine is data:

    draft -> open    finalized: the environment's next number, and a payment for the amount due;
                     from then on the invoice's terms never change (the database refuses it)
    open  -> paid    its payment succeeded (a capture listener, in the capture's transaction)

Sending (`open` only) writes an `invoice_delivery` and its operation; a worker creates a fresh hosted
payment link (a checkout session for the invoice's payment) and e-mails it through SMTP. The link is a
credential, so it exists only in the e-mail: it is made where the e-mail is made, never stored. A link
that expires unused leaves the payment to the invoice (the checkout's owner hook below); sending again
makes a new link.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from email.message import EmailMessage
from email.utils import format_datetime, parseaddr

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.checkout import service as checkout
from moneyrail.checkout.schemas import CheckoutSessionCreate
from moneyrail.config import get_settings
from moneyrail.customers import service as customers
from moneyrail.deliveries import senders
from moneyrail.deliveries.recipients import is_valid_email, mask
from moneyrail.engine.clock import tenant_now
from moneyrail.engine.outcomes import AttemptError, PermanentFailure
from moneyrail.engine.policy import RetryPolicy, register_policy
from moneyrail.engine.service import (
    create_operation,
    register_attempt_failure_listener,
    register_outcome_listener,
)
from moneyrail.errors import (
    AmountInvalid,
    CheckoutNotEnabled,
    Conflict,
    MoneyrailError,
    ParameterInvalid,
    ParameterMissing,
    ReferencedResourceMissing,
    ResourceMissing,
    UrlNotRegistered,
)
from moneyrail.events.service import record_event
from moneyrail.installations import service as installations
from moneyrail.kit import states
from moneyrail.kit.clock import utcnow
from moneyrail.kit.ids import new_id
from moneyrail.kit.money import MAX_AMOUNT, format_amount
from moneyrail.kit.pagination import Position
from moneyrail.kit.tenant import Tenant
from moneyrail.models import Invoice, InvoiceDelivery, Operation, PaymentIntent
from moneyrail.payments import service as payments
from moneyrail.payments.schemas import PaymentIntentCreate

from . import repository
from .schemas import InvoiceCreate, InvoiceLineIn, InvoiceUpdate, render_invoice

logger = structlog.get_logger("moneyrail.invoices")

TRANSITIONS: dict[str, frozenset[str]] = {
    "draft": frozenset({"open"}),
    "open": frozenset({"paid"}),
    "paid": frozenset(),
}
DELIVERY_TYPE = "invoice_delivery"
DELIVERY_ACTOR = "invoices.send_invoice"
DELIVERY_QUEUE = "default"
register_policy(
    DELIVERY_TYPE,
    RetryPolicy(
        max_attempts=get_settings().receipt_max_attempts,
        base_delay=timedelta(seconds=get_settings().receipt_retry_base_seconds),
        max_delay=timedelta(minutes=10),
        queue_name=DELIVERY_QUEUE,
    ),
)


def number_label(sequence: int) -> str:
    return f"INV-{sequence:06d}"


def _move(invoice: Invoice, status: str) -> None:
    states.move(invoice, status, TRANSITIONS, "An invoice")


async def _announce(session: AsyncSession, tenant: Tenant, invoice: Invoice, event_type: str) -> None:
    deliveries = await repository.deliveries_of(session, tenant, [invoice.id])
    shown = render_invoice(invoice, deliveries)
    await record_event(session, tenant, event_type, shown.model_dump(mode="json"))


def _priced_lines(lines: Sequence[InvoiceLineIn]) -> tuple[list[dict[str, object]], int]:
    priced = [
        {
            "description": line.description,
            "quantity": line.quantity,
            "unit_amount": line.unit_amount,
            "amount": line.quantity * line.unit_amount,
        }
        for line in lines
    ]
    total = sum(int(str(line["amount"])) for line in priced)
    if total > MAX_AMOUNT:
        raise AmountInvalid(f"The invoice's total ({total}) is more than {MAX_AMOUNT}.", param="lines")
    return priced, total


# --- drafts ---------------------------------------------------------------------------------------
async def create_invoice(session: AsyncSession, tenant: Tenant, command: InvoiceCreate) -> Invoice:
    try:
        customer = await customers.get_customer(session, tenant, command.customer)
    except ResourceMissing:
        raise ReferencedResourceMissing(f"No such customer: {command.customer!r}", param="customer") from None
    lines, total = _priced_lines(command.lines)
    now = utcnow()
    invoice = Invoice(
        id=new_id("in"),
        installation_id=tenant.installation_id,
        livemode=tenant.livemode,
        status="draft",
        customer_id=customer.id,
        currency=command.currency,
        lines=lines,
        amount_due=total,
        description=command.description,
        metadata_=command.metadata,
        success_url=command.success_url,
        cancel_url=command.cancel_url,
        created_at=now,
        updated_at=now,
    )
    session.add(invoice)
    await session.flush()
    await _announce(session, tenant, invoice, "invoice.created")
    logger.info("invoice_created", invoice=invoice.id, amount=total, currency=invoice.currency)
    return invoice


async def _locked(session: AsyncSession, tenant: Tenant, invoice_id: str) -> Invoice:
    invoice = await repository.get(session, tenant, invoice_id, for_update=True)
    if invoice is None:
        raise ResourceMissing(f"No such invoice: {invoice_id!r}", param="invoice")
    return invoice


async def update_invoice(
    session: AsyncSession, tenant: Tenant, invoice_id: str, command: InvoiceUpdate
) -> Invoice:
    invoice = await _locked(session, tenant, invoice_id)
    if invoice.status != "draft":
        raise Conflict(
            f"Invoice {invoice.number} is {invoice.status}: a finalized invoice cannot change. "
            "Create a new invoice for different terms."
        )
    if command.lines is not None:
        invoice.lines, invoice.amount_due = _priced_lines(command.lines)
    for field in ("description", "success_url", "cancel_url"):
        if field in command.model_fields_set:
            setattr(invoice, field, getattr(command, field))
    if command.metadata is not None:
        invoice.metadata_ = command.metadata
    invoice.updated_at = utcnow()
    await session.flush()
    return invoice


# --- finalizing -------------------------------------------------------------------------------------
async def finalize_invoice(session: AsyncSession, tenant: Tenant, invoice_id: str) -> Invoice:
    """The next number of the environment and the payment that pays the invoice, in one transaction."""
    invoice = await _locked(session, tenant, invoice_id)
    if invoice.status != "draft":
        raise Conflict(f"Invoice {invoice.id} is already finalized (number {invoice.number}).")
    sequence = await repository.take_next_number(session, tenant)  # given back if anything below refuses
    invoice.number_sequence = sequence
    invoice.number = number_label(sequence)
    created = await payments.create_payment_intent(
        session,
        tenant,
        PaymentIntentCreate(
            amount=invoice.amount_due,
            currency=invoice.currency,
            capture_method="automatic",
            customer=invoice.customer_id,
            external_reference=invoice.id,
            description=f"Invoice {invoice.number}",
            metadata={"invoice": invoice.id},
        ),
    )
    invoice.payment_intent_id = created.payment.id
    invoice.finalized_at = await tenant_now(session, tenant)
    _move(invoice, "open")
    await session.flush()
    await _announce(session, tenant, invoice, "invoice.finalized")
    logger.info(
        "invoice_finalized", invoice=invoice.id, number=invoice.number, payment_intent=created.payment.id
    )
    return invoice


# --- reading ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class InvoiceView:
    invoice: Invoice
    deliveries: list[InvoiceDelivery]


async def get_invoice(session: AsyncSession, tenant: Tenant, invoice_id: str) -> InvoiceView:
    invoice = await repository.get(session, tenant, invoice_id)
    if invoice is None:
        raise ResourceMissing(f"No such invoice: {invoice_id!r}", param="invoice")
    return InvoiceView(invoice, await repository.deliveries_of(session, tenant, [invoice.id]))


async def view_of(session: AsyncSession, tenant: Tenant, invoice: Invoice) -> InvoiceView:
    return InvoiceView(invoice, await repository.deliveries_of(session, tenant, [invoice.id]))


async def list_invoices(
    session: AsyncSession, tenant: Tenant, *, limit: int, after: Position | None, customer: str | None
) -> list[InvoiceView]:
    rows = await repository.list_page(session, tenant, limit=limit, after=after, customer=customer)
    deliveries = await repository.deliveries_of(session, tenant, [row.id for row in rows])
    return [InvoiceView(row, [d for d in deliveries if d.invoice_id == row.id]) for row in rows]


# --- sending ------------------------------------------------------------------------------------------
async def _check_sendable(session: AsyncSession, tenant: Tenant, invoice: Invoice) -> None:
    """What the worker would refuse, refused now, before anything is written."""
    settings = await installations.get_environment_settings(session, tenant)
    if not settings.checkout_enabled:
        raise CheckoutNotEnabled(
            f"An invoice is paid on the hosted checkout, which is not enabled for this installation's "
            f"{tenant.environment}; the operator enables it (moneyrail settings set --checkout)."
        )
    for param in ("success_url", "cancel_url"):
        url = getattr(invoice, param)
        if url is None:
            raise ParameterMissing(
                f"The invoice has no {param}: the hosted payment page needs one. Set it on the draft.",
                param=param,
            )
        if url not in settings.return_urls:
            raise UrlNotRegistered(
                f"{param} {url!r} is not a return URL registered for this environment; the operator "
                "registers each one exactly (moneyrail settings set --return-url).",
                param=param,
            )


async def send_invoice(session: AsyncSession, tenant: Tenant, invoice_id: str) -> InvoiceView:
    invoice = await _locked(session, tenant, invoice_id)
    if invoice.status == "draft":
        raise Conflict("A draft is not sent: finalize the invoice first (POST /v1/invoices/{id}/finalize).")
    if invoice.status == "paid":
        raise Conflict(f"Invoice {invoice.number} is paid: there is nothing left to pay.")
    customer = await customers.get_customer(session, tenant, invoice.customer_id)
    if customer.email is None or not is_valid_email(customer.email):
        raise ParameterInvalid(
            f"Customer {customer.id} has no usable e-mail address to send the invoice to.", param="customer"
        )
    await _check_sendable(session, tenant, invoice)
    delivery = InvoiceDelivery(
        id=new_id("dlv"),
        installation_id=tenant.installation_id,
        livemode=tenant.livemode,
        invoice_id=invoice.id,
        channel="email",
        recipient=customer.email,
        status="pending",
        created_at=utcnow(),
        updated_at=utcnow(),
    )
    session.add(delivery)
    await session.flush()
    operation = await create_operation(
        session,
        tenant,
        operation_type=DELIVERY_TYPE,
        actor_name=DELIVERY_ACTOR,
        resource=delivery.id,
        payload={"delivery": delivery.id, "invoice": invoice.id},
    )
    delivery.operation_id = operation.id
    await session.flush()
    await _announce(session, tenant, invoice, "invoice.sent")
    logger.info("invoice_send_scheduled", invoice=invoice.id, delivery=delivery.id)
    return await view_of(session, tenant, invoice)


@dataclass(frozen=True)
class InvoiceMail:
    subject: str
    text: str


def compose_invoice_mail(invoice: Invoice, *, seller: str, pay_url: str) -> InvoiceMail:
    total = format_amount(invoice.amount_due, invoice.currency)
    lines = [f"Invoice {invoice.number} from {seller}", ""]
    if invoice.description:
        lines += [invoice.description, ""]
    for line in invoice.lines:
        amount = format_amount(int(line["amount"]), invoice.currency)
        lines.append(f"{line['quantity']} x {line['description']}: {amount}")
    lines += [
        "",
        f"Amount due: {total}",
        "",
        "Pay online (this link works for 30 minutes; ask for the invoice again after that):",
        pay_url,
        "",
    ]
    return InvoiceMail(subject=f"Invoice {invoice.number} from {seller}: {total} due", text="\n".join(lines))


def build_email(delivery: InvoiceDelivery, mail: InvoiceMail, *, sender: str) -> EmailMessage:
    message = EmailMessage()
    message["From"] = sender
    message["To"] = delivery.recipient
    message["Subject"] = mail.subject
    message["Date"] = format_datetime(delivery.created_at)
    domain = parseaddr(sender)[1].rpartition("@")[2] or "moneyrail.localhost"
    message["Message-ID"] = f"<invoice.{delivery.id}@{domain}>"  # every attempt: the same mail
    message["X-Moneyrail-Delivery"] = delivery.id
    message["Auto-Submitted"] = "auto-generated"
    message.set_content(mail.text)
    return message


async def deliver_invoice(session: AsyncSession, operation: Operation) -> None:
    """The `invoice_delivery` handler: a fresh payment link and the e-mail that carries it. The link's
    session commits with `sent`; a failed send rolls it back, and the next attempt makes another."""
    tenant = Tenant(operation.installation_id, operation.livemode)
    delivery = await repository.get_delivery(session, tenant, operation.payload["delivery"], for_update=True)
    if delivery is None:
        raise PermanentFailure("delivery_missing", "The invoice delivery no longer exists.")
    if delivery.status == "sent":
        return
    invoice = await repository.get(session, tenant, delivery.invoice_id, for_update=True)
    if invoice is None or invoice.payment_intent_id is None or invoice.number is None:
        raise PermanentFailure("invoice_missing", "The invoice of this delivery is not finalized.")
    if invoice.status == "paid":
        raise PermanentFailure("invoice_paid", f"Invoice {invoice.number} was paid before it was sent.")
    settings = get_settings()
    if not settings.smtp_url:
        raise PermanentFailure("smtp_not_configured", "SMTP is not configured")
    server = senders.parse_smtp_url(settings.smtp_url)
    try:
        created = await checkout.create_checkout_session(
            session,
            tenant,
            CheckoutSessionCreate(
                payment_intent=invoice.payment_intent_id,
                title=f"Invoice {invoice.number}",
                success_url=invoice.success_url or "",
                cancel_url=invoice.cancel_url or "",
            ),
        )
    except MoneyrailError as refused:  # checkout turned off or URLs unregistered since: no retry helps
        raise PermanentFailure(refused.code, refused.message) from None
    seller = (await installations.require_installation(session, tenant.installation_id)).name
    mail = compose_invoice_mail(
        invoice, seller=seller, pay_url=checkout.checkout_url(settings.base_url.rstrip("/"), created.token)
    )
    message = build_email(delivery, mail, sender=settings.smtp_from)
    envelope_sender = parseaddr(settings.smtp_from)[1] or settings.smtp_from
    await senders.send_email(server, message, sender=envelope_sender, recipient=delivery.recipient)
    now = utcnow()
    delivery.status = "sent"
    delivery.checkout_session_id = created.checkout.id
    delivery.sent_at = now
    delivery.last_error = None
    delivery.updated_at = now
    logger.info(
        "invoice_sent",
        invoice=invoice.id,
        delivery=delivery.id,
        recipient=mask(delivery.channel, delivery.recipient),
        checkout_session=created.checkout.id,
    )


async def record_delivery_attempt_failed(
    session: AsyncSession, operation: Operation, error: AttemptError
) -> None:
    """An attempt failed: the delivery stays `pending` while its operation retries or waits in
    `dead_letter` for an operator (final means final), showing the reason."""
    if operation.type != DELIVERY_TYPE:
        return
    tenant = Tenant(operation.installation_id, operation.livemode)
    delivery = await repository.get_delivery(session, tenant, operation.payload["delivery"], for_update=True)
    if delivery is None or delivery.status != "pending":
        return
    delivery.last_error = operation.last_error or error.message
    delivery.updated_at = utcnow()


async def record_delivery_outcome(session: AsyncSession, operation: Operation) -> None:
    """An operation that ended for good without sending (refused, or its dead letter discarded by an
    operator) leaves its delivery `failed`, with the reason."""
    if operation.type != DELIVERY_TYPE or operation.status not in {"failed", "canceled"}:
        return
    tenant = Tenant(operation.installation_id, operation.livemode)
    delivery = await repository.get_delivery(session, tenant, operation.payload["delivery"], for_update=True)
    if delivery is None or delivery.status != "pending":
        return
    delivery.status = "failed"
    if operation.status == "canceled":
        delivery.last_error = f"Discarded by an operator: {operation.discard_reason}"
    delivery.last_error = delivery.last_error or operation.last_error or "The invoice could not be sent."
    delivery.updated_at = utcnow()
    logger.warning("invoice_delivery_failed", delivery=delivery.id, error=delivery.last_error)


register_attempt_failure_listener(record_delivery_attempt_failed)
register_outcome_listener(record_delivery_outcome)


# --- paying -------------------------------------------------------------------------------------------
async def follow_payment(session: AsyncSession, tenant: Tenant, payment: PaymentIntent) -> None:
    """A capture listener: the invoice of a payment that succeeded is paid, in the same transaction."""
    invoice = await repository.get_by_payment(session, tenant, payment.id, for_update=True)
    if invoice is None or invoice.status != "open":
        return
    _move(invoice, "paid")
    invoice.paid_at = payment.captured_at or await tenant_now(session, tenant)
    await session.flush()
    await _announce(session, tenant, invoice, "invoice.paid")
    logger.info("invoice_paid", invoice=invoice.id, payment_intent=payment.id)


async def owns_payment(
    session: AsyncSession, tenant: Tenant, payment_id: str
) -> checkout.PaymentOwner | None:
    """An invoice's payment outlives an expired link: the invoice is still due and can be sent again."""
    if await repository.get_by_payment(session, tenant, payment_id) is None:
        return None
    return checkout.PaymentOwner(kind="invoice", expire_refusal=None)


async def follow_payments(session: AsyncSession, tenant: Tenant, captured: Sequence[PaymentIntent]) -> None:
    """`follow_payment` for payments captured together: one statement finds which pay an invoice."""
    paying = await repository.open_among_payments(session, tenant, [payment.id for payment in captured])
    for payment in captured:
        if payment.id in paying:
            await follow_payment(session, tenant, payment)


PAYS_INVOICE = "pays_invoice"
payments.register_payment_fact(PAYS_INVOICE, repository.paid_by_payment)
payments.register_capture_listener(follow_payment, together=follow_payments, when=PAYS_INVOICE)
checkout.register_payment_owner(owns_payment)
