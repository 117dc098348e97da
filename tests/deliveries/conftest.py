"""Succeeded payments written straight to the database (the payment intents API is not needed to send
their receipts), with receipts scheduled in the same unit of work, as the payments domain does."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
from sqlalchemy import update

from moneyrail.deliveries.service import schedule_receipts
from moneyrail.kit.clock import utcnow
from moneyrail.kit.ids import new_id
from moneyrail.kit.tenant import Tenant
from moneyrail.models import Operation, PaymentIntent, PaymentMethod
from tests.harness import AsyncBridge

SMTP_FROM = "Shop Receipts <receipts@shop.example>"


@dataclass(frozen=True)
class ScheduledDelivery:
    id: str
    channel: str
    operation_id: str


@dataclass(frozen=True)
class SucceededPayment:
    id: str
    deliveries: dict[str, ScheduledDelivery]  # by channel


def unique_email(name: str = "jane") -> str:
    return f"{name}.{secrets.token_hex(4)}@example.com"


def create_succeeded_payment(
    bridge: AsyncBridge,
    tenant: Tenant,
    *,
    email: str | None = None,
    phone: str | None = None,
    amount: int = 1234,
    currency: str = "eur",
    description: str | None = "Two coffees",
    with_card: bool = True,
    max_attempts: int | None = None,
) -> SucceededPayment:
    """A succeeded payment (paid with a saved Visa ending in 4242) and its receipts, in one transaction.

    `max_attempts` shrinks the receipts' attempt budget, to reach a dead letter without waiting minutes.
    """

    async def work(session: Any) -> SucceededPayment:
        card_id = None
        if with_card:
            card = PaymentMethod(
                id=new_id("pm"),
                installation_id=tenant.installation_id,
                livemode=tenant.livemode,
                processor_token=f"tok_{secrets.token_hex(8)}",
                brand="visa",
                last4="4242",
                exp_month=12,
                exp_year=2034,
                fingerprint=secrets.token_hex(8),
            )
            session.add(card)
            await session.flush()  # no ORM relationship orders the inserts: the card goes first
            card_id = card.id
        payment = PaymentIntent(
            id=new_id("pi"),
            installation_id=tenant.installation_id,
            livemode=tenant.livemode,
            amount=amount,
            currency=currency,
            status="succeeded",
            capture_method="automatic",
            amount_received=amount,
            client_secret_hash=secrets.token_hex(32),
            payment_method_id=card_id,
            description=description,
            receipt_email=email,
            receipt_phone=phone,
            captured_at=utcnow(),
        )
        session.add(payment)
        deliveries = await schedule_receipts(session, tenant, payment, email=email, phone=phone)
        if max_attempts is not None:
            await session.execute(
                update(Operation)
                .where(Operation.id.in_([d.operation_id for d in deliveries]))
                .values(max_attempts=max_attempts)
            )
        return SucceededPayment(
            payment.id,
            {d.channel: ScheduledDelivery(d.id, d.channel, d.operation_id or "") for d in deliveries},
        )

    result: SucceededPayment = bridge.in_unit_of_work(work)
    return result


def wait_until(condition: Callable[[], Any], timeout: float = 30, interval: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = condition()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out; last: {last!r}")


def deliveries(api: httpx.Client, payment_id: str) -> list[dict[str, Any]]:
    response = api.get(f"/v1/payment-intents/{payment_id}/deliveries")
    assert response.status_code == 200, response.text
    data: list[dict[str, Any]] = response.json()["data"]
    return data


def wait_for_delivery(
    api: httpx.Client, payment_id: str, channel: str, statuses: set[str], timeout: float = 30
) -> dict[str, Any]:
    def settled() -> dict[str, Any] | None:
        for delivery in deliveries(api, payment_id):
            if delivery["channel"] == channel and delivery["status"] in statuses:
                return delivery
        return None

    found: dict[str, Any] = wait_until(settled, timeout)
    return found
