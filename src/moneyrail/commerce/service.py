"""Orders of the commerce API, paid as spec 4.B rule 3 describes: the order, then a manual-capture
payment for its amount, bound to it; a checkout authorizes the payment, starting preparation captures
it, cancelling the order releases it. The state machine is data:

    pending -> preparing   preparation starts: the authorization is captured
    pending -> canceled    the order is cancelled: the authorization (if any) is cancelled with it

Binding a payment keeps the order `pending` and moves its version on. Every change names the version
the caller read (`expected_version`); another is 409 `resource_state_invalid`, with the current one.
The order's row is locked first, then its payment's, everywhere, so no two changes interleave.

An order-bound payment belongs to its order: expiring its checkout session is refused (cancel the
order instead), and a link that times out leaves the authorization to the order. Capturing or cancelling
it directly (POST /v1/payment-intents/{id}/capture|cancel) is refused too, rather than making the order
follow: spec 4.B rule 3 names the order's steps as the way ("the commerce side captures it when the
merchant starts preparation"; "cancel such a payment through the order-cancel operation with the current
order version"), and a direct call carries no order version, so letting the order follow it would move
an order that a clerk may be changing at that moment past the version check that keeps them apart.
Incrementing its authorization or changing its amount (POST /v1/payment-intents/{id}/increment-
authorization and /update) is refused for the same reason and one more: the bind checked that the
payment is for the order's total, and an order's total does not change. Updates that leave the amount
alone (description, metadata, receipt e-mail, a saved card) still pass.
"""

from __future__ import annotations

from collections.abc import Sequence

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.checkout import service as checkout
from moneyrail.engine.clock import tenant_now
from moneyrail.errors import (
    AmountInvalid,
    Conflict,
    CurrencyInvalid,
    ParameterInvalid,
    ReferencedResourceMissing,
    ResourceMissing,
)
from moneyrail.events.service import record_event
from moneyrail.kit import states
from moneyrail.kit.clock import utcnow
from moneyrail.kit.ids import new_id
from moneyrail.kit.pagination import Position
from moneyrail.kit.tenant import Tenant
from moneyrail.models import Order, PaymentIntent
from moneyrail.payments import service as payments
from moneyrail.processor.interface import Processor

from . import repository
from .schemas import OrderBind, OrderCreate, render_order

logger = structlog.get_logger("moneyrail.commerce")

TRANSITIONS: dict[str, frozenset[str]] = {
    "pending": frozenset({"preparing", "canceled"}),
    "preparing": frozenset(),
    "canceled": frozenset(),
}
# a payment that can still be authorized, or is authorized and waiting for capture
BINDABLE = frozenset(
    {"requires_payment_method", "requires_confirmation", "requires_action", "requires_capture"}
)
EXPIRE_REFUSAL = (
    "This checkout session pays a payment bound to commerce order {order}: do not expire it. Cancel the "
    "order instead (POST /commerce/v1/orders/{order}/cancel with its current version), so that the order "
    "and the release of the authorization stay together."
)


DIRECT_REFUSALS = {
    "capture": (
        "This payment is bound to commerce order {order}: it is captured when the order's preparation "
        "starts. Start preparation through the commerce API "
        "(POST /commerce/v1/orders/{order}/start-preparation with the order's current version), so that "
        "the order and its payment stay in step."
    ),
    "cancel": (
        "This payment is bound to commerce order {order}: cancel the order through the commerce API "
        "(POST /commerce/v1/orders/{order}/cancel with its current version); that releases the "
        "authorization, and the order and its payment stay in step."
    ),
    # the bind checked that the payment's amount is the order's total: it stays so, or the order would
    # be captured for a sum it never showed
    "increment": (
        "This payment is bound to commerce order {order}: its authorization is the order's total and is not "
        "incremented. To charge another total, cancel the order through the commerce API "
        "(POST /commerce/v1/orders/{order}/cancel with its current version), which releases the "
        "authorization, and create a new order with its own payment."
    ),
    "update": (
        "This payment is bound to commerce order {order}: its amount is the order's total and does not "
        "change. To charge another total, cancel the order through the commerce API "
        "(POST /commerce/v1/orders/{order}/cancel with its current version) and create a new order with its "
        "own payment."
    ),
}


def _move(order: Order, status: str) -> None:
    states.move(order, status, TRANSITIONS, "An order")


def _changed(order: Order) -> None:
    order.version += 1
    order.updated_at = utcnow()


async def _announce(session: AsyncSession, tenant: Tenant, order: Order, event_type: str) -> None:
    await record_event(session, tenant, event_type, render_order(order).model_dump(mode="json"))


# --- creating and reading -------------------------------------------------------------------------
async def create_order(session: AsyncSession, tenant: Tenant, command: OrderCreate) -> Order:
    lines = [
        {
            "description": line.description,
            "quantity": line.quantity,
            "unit_amount": line.unit_amount,
            "amount": line.quantity * line.unit_amount,
        }
        for line in command.lines
    ]
    total = sum(line.quantity * line.unit_amount for line in command.lines)
    if total != command.amount_total:
        raise AmountInvalid(
            f"amount_total ({command.amount_total}) is not the sum of the lines ({total}).",
            param="amount_total",
        )
    now = utcnow()
    order = Order(
        id=new_id("ord"),
        installation_id=tenant.installation_id,
        livemode=tenant.livemode,
        status="pending",
        version=1,
        currency=command.currency,
        amount_total=total,
        lines=lines,
        external_reference=command.external_reference,
        metadata_=command.metadata,
        created_at=now,
        updated_at=now,
    )
    session.add(order)
    await session.flush()
    await _announce(session, tenant, order, "order.created")
    logger.info("order_created", order=order.id, amount=total, currency=order.currency)
    return order


async def get_order(session: AsyncSession, tenant: Tenant, order_id: str) -> Order:
    order = await repository.get(session, tenant, order_id)
    if order is None:
        raise ResourceMissing(f"No such order: {order_id!r}", param="order")
    return order


async def list_orders(
    session: AsyncSession, tenant: Tenant, *, limit: int, after: Position | None
) -> Sequence[Order]:
    return await repository.list_page(session, tenant, limit=limit, after=after)


async def _locked(session: AsyncSession, tenant: Tenant, order_id: str, expected_version: int) -> Order:
    order = await repository.get(session, tenant, order_id, for_update=True)
    if order is None:
        raise ResourceMissing(f"No such order: {order_id!r}", param="order")
    if order.version != expected_version:
        raise Conflict(
            f"Order {order.id} is at version {order.version}, not {expected_version}: read it again and "
            "decide again; do not retry blindly.",
            param="expected_version",
            current_version=order.version,
        )
    return order


# --- binding the payment ----------------------------------------------------------------------------
async def _payment_to_bind(
    session: AsyncSession, tenant: Tenant, order: Order, payment_id: str
) -> PaymentIntent:
    try:
        payment = await payments.lock_payment_intent(session, tenant, payment_id)
    except ResourceMissing:
        raise ReferencedResourceMissing(
            f"No such payment_intent: {payment_id!r}", param="payment_intent_id"
        ) from None
    if payment.capture_method != "manual":
        raise ParameterInvalid(
            "An order is paid by a payment created with capture_method manual: it is authorized at "
            "checkout and captured when preparation starts.",
            param="payment_intent_id",
        )
    if payment.currency != order.currency:
        raise CurrencyInvalid(
            f"The payment is in {payment.currency}; the order is in {order.currency}.",
            param="payment_intent_id",
        )
    if payment.amount != order.amount_total:
        raise AmountInvalid(
            f"The payment is for {payment.amount}; the order's total is {order.amount_total}.",
            param="payment_intent_id",
        )
    if payment.status not in BINDABLE:
        raise Conflict(
            f"This payment is {payment.status}: it can no longer pay an order.", param="payment_intent_id"
        )
    other = await repository.get_by_payment(session, tenant, payment.id)
    if other is not None:
        raise Conflict(f"This payment is already bound to order {other.id}.", param="payment_intent_id")
    return payment


async def bind_payment(session: AsyncSession, tenant: Tenant, order_id: str, command: OrderBind) -> Order:
    order = await _locked(session, tenant, order_id, command.expected_version)
    if order.status != "pending":
        raise Conflict(f"Order {order.id} is {order.status}: a payment is bound to a pending order only.")
    if order.payment_intent_id is not None:
        raise Conflict(
            f"Order {order.id} is already paid by {order.payment_intent_id}; a second payment is not bound. "
            "Cancel the order to release it.",
            param="payment_intent_id",
        )
    payment = await _payment_to_bind(session, tenant, order, command.payment_intent_id)
    order.payment_intent_id = payment.id
    _changed(order)
    await session.flush()
    await _announce(session, tenant, order, "order.payment_bound")
    logger.info("order_payment_bound", order=order.id, payment_intent=payment.id)
    return order


# --- preparation and cancellation -----------------------------------------------------------------
async def start_preparation(
    session: AsyncSession, tenant: Tenant, processor: Processor, order_id: str, expected_version: int
) -> Order:
    order = await _locked(session, tenant, order_id, expected_version)
    if order.status != "pending":
        raise Conflict(f"Order {order.id} is {order.status}: preparation starts once, from pending.")
    if order.payment_intent_id is None:
        raise Conflict(f"Order {order.id} has no payment: bind one, and let the payer authorize it, first.")
    payment = await payments.lock_payment_intent(session, tenant, order.payment_intent_id)
    if payment.status != "requires_capture":
        raise Conflict(
            f"The order's payment is {payment.status}: preparation starts once the payer has authorized it "
            "(requires_capture)."
        )
    await payments.capture_payment_intent(session, tenant, processor, payment.id, None, by_owner=True)
    _move(order, "preparing")
    order.preparation_started_at = await tenant_now(session, tenant)
    _changed(order)
    await session.flush()
    await _announce(session, tenant, order, "order.preparation_started")
    logger.info("order_preparation_started", order=order.id, payment_intent=payment.id)
    return order


async def cancel_order(
    session: AsyncSession, tenant: Tenant, processor: Processor, order_id: str, expected_version: int
) -> Order:
    order = await _locked(session, tenant, order_id, expected_version)
    if order.status == "preparing":
        raise Conflict(
            f"Order {order.id} is in preparation: its payment is captured. Refund the payment instead "
            "(POST /v1/refunds)."
        )
    if order.status != "pending":
        raise Conflict(f"Order {order.id} is {order.status}.")
    if order.payment_intent_id is not None:
        payment = await payments.lock_payment_intent(session, tenant, order.payment_intent_id)
        if payment.status in payments.CANCELABLE:
            await payments.cancel_payment_intent(
                session, tenant, processor, payment.id, "requested_by_customer", by_owner=True
            )
    _move(order, "canceled")
    order.canceled_at = await tenant_now(session, tenant)
    _changed(order)
    await session.flush()
    await _announce(session, tenant, order, "order.canceled")
    logger.info("order_canceled", order=order.id, payment_intent=order.payment_intent_id)
    return order


# --- the checkout's owner hook ----------------------------------------------------------------------
async def owns_payment(
    session: AsyncSession, tenant: Tenant, payment_id: str
) -> checkout.PaymentOwner | None:
    order = await repository.get_by_payment(session, tenant, payment_id)
    if order is None:
        return None
    return checkout.PaymentOwner(kind="order", expire_refusal=EXPIRE_REFUSAL.format(order=order.id))


async def refuse_direct_change(
    session: AsyncSession, tenant: Tenant, payment: PaymentIntent, action: str
) -> str | None:
    """Payments asks before a direct capture, cancel, increment or amount change: an order-bound payment
    moves with its order, and its amount stays the order's total."""
    order = await repository.get_by_payment(session, tenant, payment.id)
    if order is None:
        return None
    return DIRECT_REFUSALS[action].format(order=order.id)


BOUND_TO_ORDER = "bound_to_order"
checkout.register_payment_owner(owns_payment)
payments.register_payment_fact(BOUND_TO_ORDER, repository.binds_payment)
payments.register_owner_refusal(refuse_direct_change, when=BOUND_TO_ORDER)
