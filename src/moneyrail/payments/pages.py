"""Hosted pages of payments: the sandbox bank's authentication screen (a card that requires action).

The link itself is the credential: it names one payment waiting for authentication and stops
working once that payment has moved on.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse, Response

from moneyrail.api.context import request_session, request_uow
from moneyrail.api.routing import MoneyrailRoute
from moneyrail.errors import ResourceMissing
from moneyrail.kit.money import format_amount
from moneyrail.kit.tenant import Tenant
from moneyrail.processor.provider import processor_for
from moneyrail.web import origin_of, public_base_url, render_page

from . import phases, service

router = APIRouter(route_class=MoneyrailRoute, include_in_schema=False)

LINK_EXPIRED = {
    "heading": "This link is no longer valid",
    "message": "The payment has moved on, or the link was already used. Return to the shop to continue.",
    "is_error": True,
}


@router.get("/authenticate/{token}")
async def authentication_page(request: Request, token: str) -> Response:
    try:
        view = await service.authentication_view(request_session(request), token)
    except ResourceMissing:
        return render_page(request, "message.html", LINK_EXPIRED, status_code=404)
    payment = view.payment
    return render_page(
        request,
        "authenticate.html",
        {
            "seller": view.seller,
            "amount": format_amount(payment.amount, payment.currency),
            "action": f"/authenticate/{token}",
        },
        form_targets=origin_of(payment.return_url),
    )


@router.post("/authenticate/{token}")
async def complete_authentication(
    request: Request, token: str, decision: Annotated[Literal["approve", "fail"], Form()]
) -> Response:
    uow = request_uow(request)
    base_url, approved = public_base_url(request), decision == "approve"
    try:
        view = await service.authentication_view(uow.session, token)
        tenant = Tenant(view.payment.installation_id, view.payment.livemode)
        outcome = await phases.run_in_phases(
            uow,
            await processor_for(uow, tenant),
            tenant,
            view.payment.id,
            phases.request_token(request, tenant),
            lambda session, processor: service.complete_authentication(
                session, processor, token, approved=approved, base_url=base_url
            ),
        )
    except ResourceMissing:
        return render_page(request, "message.html", LINK_EXPIRED, status_code=404)
    if outcome.redirect_url is not None:
        return RedirectResponse(outcome.redirect_url, status_code=303)
    done = {
        "heading": "Payment authenticated" if outcome.succeeded else "Authentication failed",
        "message": "You can close this page and return to the shop."
        if outcome.succeeded
        else "The payment was not authorized. Return to the shop to try another card.",
        "is_error": not outcome.succeeded,
    }
    return render_page(request, "message.html", done)
