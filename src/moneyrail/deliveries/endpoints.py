"""Receipts of succeeded payments by e-mail and SMS, and their delivery statuses."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request

from moneyrail.api.context import Principal, request_session
from moneyrail.api.pagination import ListEnvelope, PageRequest, list_envelope, page_request
from moneyrail.api.routing import MoneyrailRoute, scoped
from moneyrail.kit.clock import to_unix
from moneyrail.models import ReceiptDelivery

from . import service
from .recipients import mask
from .schemas import DeliveryOut

router = APIRouter(route_class=MoneyrailRoute, tags=["deliveries"])


def render_delivery(delivery: ReceiptDelivery) -> DeliveryOut:
    return DeliveryOut(
        id=delivery.id,
        livemode=delivery.livemode,
        created=to_unix(delivery.created_at),
        channel=delivery.channel,
        recipient=mask(delivery.channel, delivery.recipient),
        status=delivery.status,
        last_error=delivery.last_error,
        operation=delivery.operation_id,
        sent_at=to_unix(delivery.sent_at) if delivery.sent_at is not None else None,
    )


@router.get("/payment-intents/{payment_intent}/deliveries", response_model=ListEnvelope[DeliveryOut])
async def list_deliveries(
    request: Request,
    payment_intent: str,
    principal: Annotated[Principal, scoped("payments:read")],
    page: Annotated[PageRequest, Depends(page_request)],
) -> ListEnvelope[DeliveryOut]:
    """List a payment's receipts.

    The receipts sent (or being sent) for one payment intent, newest first.
    """
    rows = await service.list_deliveries(
        request_session(request), principal.tenant, payment_intent, limit=page.limit, after=page.after
    )
    return list_envelope(rows, page, render_delivery)
