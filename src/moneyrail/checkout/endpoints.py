from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Request

from moneyrail.api.context import Principal, request_session
from moneyrail.api.openapi import CHARGES_CARD
from moneyrail.api.routing import MoneyrailRoute, scoped
from moneyrail.payments import phases
from moneyrail.web import public_base_url

from . import service
from .schemas import (
    CheckoutSessionCreate,
    CheckoutSessionExpire,
    CheckoutSessionOut,
    render_checkout_session,
)

router = APIRouter(route_class=MoneyrailRoute, tags=["checkout"])


@router.post("/checkout-sessions", response_model=CheckoutSessionOut)
async def create_checkout_session(
    request: Request, body: CheckoutSessionCreate, principal: Annotated[Principal, scoped("payments:write")]
) -> CheckoutSessionOut:
    """Create a checkout session.

    A hosted page for an existing payment. `checkout_url` is a temporary credential (30 minutes):
    send it to the payer's browser only, and keep it out of logs and analytics.
    """
    created = await service.create_checkout_session(request_session(request), principal.tenant, body)
    return render_checkout_session(
        created.checkout, checkout_url=service.checkout_url(public_base_url(request), created.token)
    )


@router.get("/checkout-sessions/{checkout_session}", response_model=CheckoutSessionOut)
async def get_checkout_session(
    request: Request, checkout_session: str, principal: Annotated[Principal, scoped("payments:read")]
) -> CheckoutSessionOut:
    """Retrieve a checkout session.

    State and expiry; the checkout URL is never answered again (`checkout_url` is null).
    """
    checkout = await service.get_checkout_session(
        request_session(request), principal.tenant, checkout_session
    )
    return render_checkout_session(checkout)


@router.post(
    "/checkout-sessions/{checkout_session}/expire", response_model=CheckoutSessionOut, responses=CHARGES_CARD
)
async def expire_checkout_session(
    request: Request,
    checkout_session: str,
    principal: Annotated[Principal, scoped("payments:write")],
    body: CheckoutSessionExpire | None = None,
) -> CheckoutSessionOut:
    """Expire a checkout session.

    Revoke the link of an open session; its unfinished one-off payment is cancelled (`abandoned`).
    """
    tenant = principal.tenant
    checkout = await phases.run_request_step(  # the payment's cancel outside any transaction
        request,
        tenant,
        None,
        lambda session, processor: service.expire_checkout_session(
            session, tenant, processor, checkout_session
        ),
    )
    return render_checkout_session(checkout)
