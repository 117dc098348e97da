from __future__ import annotations

from typing import Annotated, Literal, cast

from fastapi import APIRouter, Depends, Request

from moneyrail.api.context import Principal, request_session, request_uow
from moneyrail.api.openapi import CHARGES_CARD
from moneyrail.api.pagination import PageRequest, list_envelope, page_request
from moneyrail.api.routing import MoneyrailRoute, client_side, scoped
from moneyrail.kit.clock import to_unix
from moneyrail.models import CustomerSession, SetupIntent
from moneyrail.processor.provider import processor_for

from . import service
from .schemas import (
    CustomerSessionAccess,
    CustomerSessionOut,
    CustomerSheetSessionOut,
    NoParameters,
    PaymentMethodList,
    PaymentMethodOut,
    SetupIntentConfirm,
    SetupIntentCreate,
    SetupIntentOut,
    card_input,
    render_payment_method,
)

router = APIRouter(route_class=MoneyrailRoute, tags=["saved payment methods"])

SetupIntentStatus = Literal["requires_payment_method", "succeeded", "canceled"]
CancellationReason = Literal["abandoned"]


def render_setup_intent(setup_intent: SetupIntent, client_secret: str | None = None) -> SetupIntentOut:
    return SetupIntentOut(
        id=setup_intent.id,
        livemode=setup_intent.livemode,
        created=to_unix(setup_intent.created_at),
        customer=setup_intent.customer_id,
        status=cast(SetupIntentStatus, setup_intent.status),
        cancellation_reason=cast(CancellationReason | None, setup_intent.cancellation_reason),
        usage="off_session",
        payment_method=setup_intent.payment_method_id,
        client_secret=client_secret,
        expires_at=to_unix(setup_intent.expires_at),
        metadata=setup_intent.metadata_,
    )


def render_customer_session(customer_session: CustomerSession, client_secret: str) -> CustomerSessionOut:
    return CustomerSessionOut(
        id=customer_session.id,
        livemode=customer_session.livemode,
        created=to_unix(customer_session.created_at),
        customer=customer_session.customer_id,
        client_secret=client_secret,
        expires_at=to_unix(customer_session.expires_at),
    )


def render_methods(found: service.CustomerMethods, page: PageRequest) -> PaymentMethodList:
    envelope = list_envelope(found.methods, page, render_payment_method)
    return PaymentMethodList(
        data=envelope.data,
        has_more=envelope.has_more,
        next_cursor=envelope.next_cursor,
        preferred_payment_method=found.preferred_id,
    )


@router.get("/customers/{customer}/payment-methods", response_model=PaymentMethodList)
async def list_payment_methods(
    request: Request,
    customer: str,
    principal: Annotated[Principal, scoped("customers:read")],
    page: Annotated[PageRequest, Depends(page_request)],
) -> PaymentMethodList:
    """List a customer's saved cards.

    The cards saved for the customer, newest first, with the preferred one named.
    """
    found = await service.list_customer_methods(
        request_session(request), principal.tenant, customer, limit=page.limit, after=page.after
    )
    return render_methods(found, page)


@router.delete("/customers/{customer}/payment-methods/{payment_method}", response_model=PaymentMethodOut)
async def detach_payment_method(
    request: Request,
    customer: str,
    payment_method: str,
    principal: Annotated[Principal, scoped("customers:write")],
) -> PaymentMethodOut:
    """Detach a saved card.

    The card can no longer be used for this customer; payments already made with it keep it.
    """
    method = await service.detach(request_session(request), principal.tenant, customer, payment_method)
    return render_payment_method(method)


@router.post(
    "/customers/{customer}/payment-methods/{payment_method}/default", response_model=PaymentMethodOut
)
async def set_preferred_payment_method(
    request: Request,
    customer: str,
    payment_method: str,
    principal: Annotated[Principal, scoped("customers:write")],
    body: NoParameters | None = None,
) -> PaymentMethodOut:
    """Set the preferred card.

    Makes this saved card the customer's preferred method for later payments.
    """
    method = await service.set_preferred(request_session(request), principal.tenant, customer, payment_method)
    return render_payment_method(method)


@router.post("/customers/{customer}/setup-intents", response_model=SetupIntentOut)
async def create_setup_intent(
    request: Request,
    customer: str,
    principal: Annotated[Principal, scoped("customers:write")],
    body: SetupIntentCreate | None = None,
) -> SetupIntentOut:
    """Start saving a card.

    Creates a setup intent for the customer; the card is then entered client side with the answer's
    `client_secret`, shown once.
    """
    command = body or SetupIntentCreate()
    issued = await service.create_setup_intent(
        request_session(request), principal.tenant, customer, metadata=command.metadata
    )
    return render_setup_intent(issued.setup_intent, issued.client_secret)


@router.get("/setup-intents/{setup_intent}", response_model=SetupIntentOut)
async def get_setup_intent(
    request: Request, setup_intent: str, principal: Annotated[Principal, scoped("customers:read")]
) -> SetupIntentOut:
    """Retrieve a setup intent.

    One setup intent by its `seti_` id; its `client_secret` is not answered again. One not confirmed
    by `expires_at` reads `canceled`, with `cancellation_reason` `abandoned`.
    """
    return render_setup_intent(
        await service.get_setup_intent(request_session(request), principal.tenant, setup_intent)
    )


@router.post("/setup-intents/{setup_intent}/confirm", response_model=SetupIntentOut, responses=CHARGES_CARD)
async def confirm_setup_intent(
    request: Request,
    setup_intent: str,
    principal: Annotated[Principal, client_side("customers:write")],
    body: SetupIntentConfirm,
) -> SetupIntentOut:
    """Save a card (client side).

    Called from the browser or app with the publishable key and the setup intent's `client_secret`:
    the network tokenizes the card and it is saved for the customer. The number is never stored. The
    card is `card` (typed digits) on the sandbox simulator, and `card_token` (the token Stripe.js
    made in the payer's browser) on every live environment and on a sandbox on Stripe's test mode.
    """
    network = await processor_for(request_uow(request), principal.tenant)
    confirmed = await service.confirm_setup_intent(
        request_session(request),
        principal.tenant,
        network,
        setup_intent,
        client_secret=body.client_secret,
        card=card_input(body.card, body.card_token),
    )
    return render_setup_intent(confirmed)


@router.post("/customers/{customer}/customer-sessions", response_model=CustomerSessionOut)
async def create_customer_session(
    request: Request,
    customer: str,
    principal: Annotated[Principal, scoped("customers:write")],
    body: NoParameters | None = None,
) -> CustomerSessionOut:
    """Create a customer session.

    A short-lived session with which a client lists the customer's saved cards, by its
    `client_secret` (shown once).
    """
    issued = await service.create_customer_session(request_session(request), principal.tenant, customer)
    return render_customer_session(issued.customer_session, issued.client_secret)


@router.post("/customer-sessions/{customer_session}/payment-methods", response_model=PaymentMethodList)
async def list_customer_session_payment_methods(
    request: Request,
    customer_session: str,
    principal: Annotated[Principal, client_side("customers:write")],
    body: CustomerSessionAccess,
    page: Annotated[PageRequest, Depends(page_request)],
) -> PaymentMethodList:
    """List saved cards (client side).

    With the publishable key and the customer session's `client_secret`: the customer's saved cards.
    A POST, so the secret travels in the body and never in a URL.
    """
    found = await service.customer_session_methods(
        request_session(request),
        principal.tenant,
        customer_session,
        client_secret=body.client_secret,
        limit=page.limit,
        after=page.after,
    )
    return render_methods(found, page)


@router.post("/customers/{customer}/customer-sheet-sessions", response_model=CustomerSheetSessionOut)
async def create_customer_sheet_session(
    request: Request,
    customer: str,
    principal: Annotated[Principal, scoped("customers:write")],
    body: NoParameters | None = None,
) -> CustomerSheetSessionOut:
    """Create a customer sheet session.

    Everything a native customer sheet needs in one answer: a customer session and a setup intent
    with their client secrets, and the publishable key.
    """
    sheet = await service.create_customer_sheet_session(request_session(request), principal.tenant, customer)
    customer_session = sheet.customer_session.customer_session
    return CustomerSheetSessionOut(
        livemode=customer_session.livemode,
        created=to_unix(customer_session.created_at),
        customer=customer_session.customer_id,
        customer_session=customer_session.id,
        customer_session_client_secret=sheet.customer_session.client_secret,
        setup_intent=sheet.setup_intent.setup_intent.id,
        setup_intent_client_secret=sheet.setup_intent.client_secret,
        publishable_key=sheet.publishable_key,
        expires_at=to_unix(sheet.expires_at),
    )
