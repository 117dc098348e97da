"""The processor's webhooks: where Stripe posts what it reports (service.py)."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Request

from moneyrail.api.context import request_session
from moneyrail.api.routing import MoneyrailRoute

from . import service
from .schemas import EventReceived

router = APIRouter(route_class=MoneyrailRoute, tags=["processor webhooks"])

STRIPE_EVENT_EXAMPLE = {
    "id": "evt_1NG8Du2eZvKYlo2CUI79vXWy",
    "object": "event",
    "type": "charge.dispute.created",
    "livemode": False,
    "created": 1686089970,
    "data": {"object": {"id": "dp_1NG8Du2eZvKYlo2C0mhzVDlg", "object": "dispute", "amount": 1000}},
}


@router.post(
    "/processor/stripe/webhooks/{installation}/{environment}",
    operation_id="processor_webhooks_stripe_receive",
    response_model=EventReceived,
    responses={
        400: {
            "description": "Not an event Stripe signed for this endpoint (`signature_invalid`: a missing, "
            "wrong or older than 5 minutes `Stripe-Signature`), or one of the other mode; nothing recorded."
        },
        404: {
            "description": "No Stripe webhook endpoint is set for this installation and environment "
            "(`resource_missing`)."
        },
        413: {"description": "The event is larger than the service accepts (`request_too_large`)."},
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "description": "A Stripe event, as Stripe sends it, signed in the `Stripe-Signature` header.",
            "content": {"application/json": {"schema": {"type": "object"}, "example": STRIPE_EVENT_EXAMPLE}},
        },
        "parameters": [
            {
                "name": "Stripe-Signature",
                "in": "header",
                "required": True,
                "description": "Stripe's signature of the body (`t=<time>,v1=<HMAC-SHA256>`), made with "
                "the endpoint's signing secret (`whsec_…`).",
                "schema": {"type": "string"},
            }
        ],
    },
)
async def receive_stripe_event(
    request: Request, installation: str, environment: Literal["live", "sandbox"]
) -> EventReceived:
    """Receive a Stripe event.

    Where an installation's Stripe webhook endpoint posts (register it at Stripe with this address and
    store its signing secret with `moneyrail settings set --processor-webhook-secret-file`). A verified
    event is kept once by its id and applied by a `processor_sync` operation: disputes opened and
    closed, payouts paid and failed, a charge's cost booked (fees final). A replayed event answers 200
    and changes nothing.
    """
    duplicate = await service.receive_stripe_event(
        request_session(request),
        installation,
        environment,
        await request.body(),
        request.headers.get("stripe-signature"),
    )
    return EventReceived(duplicate=duplicate)
