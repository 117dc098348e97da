from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request

from moneyrail.api.context import Principal, request_session
from moneyrail.api.openapi import CALLS_PROCESSOR, CHARGES_CARD
from moneyrail.api.pagination import ListEnvelope, PageRequest, list_envelope, page_request
from moneyrail.api.routing import MoneyrailRoute, scoped
from moneyrail.config import API_VERSIONS
from moneyrail.payments import phases

from . import service
from .schemas import ApiBaseOut, OrderBind, OrderCreate, OrderOut, OrderTransition, render_order

router = APIRouter(prefix="/commerce/v1", route_class=MoneyrailRoute, tags=["commerce"])


@router.get("", response_model=ApiBaseOut)
async def commerce_base(principal: Annotated[Principal, scoped("commerce:read")]) -> ApiBaseOut:
    """The commerce API.

    The commerce API's base: its name and the version serving this request.
    """
    return ApiBaseOut(api="commerce", version=API_VERSIONS["commerce"][0], livemode=principal.tenant.livemode)


@router.post("/orders", response_model=OrderOut)
async def create_order(
    request: Request, body: OrderCreate, principal: Annotated[Principal, scoped("commerce:write")]
) -> OrderOut:
    """Create an order.

    An order with its lines and total (which must be their sum), at version 1.
    """
    return render_order(await service.create_order(request_session(request), principal.tenant, body))


@router.get("/orders", response_model=ListEnvelope[OrderOut])
async def list_orders(
    request: Request,
    principal: Annotated[Principal, scoped("commerce:read")],
    page: Annotated[PageRequest, Depends(page_request)],
) -> ListEnvelope[OrderOut]:
    """List orders.

    The environment's commerce orders, newest first.
    """
    rows = await service.list_orders(
        request_session(request), principal.tenant, limit=page.limit, after=page.after
    )
    return list_envelope(rows, page, render_order)


@router.get("/orders/{order}", response_model=OrderOut)
async def get_order(
    request: Request, order: str, principal: Annotated[Principal, scoped("commerce:read")]
) -> OrderOut:
    """Retrieve an order.

    One order by its `ord_` id, with its lines, status, version and bound payment.
    """
    return render_order(await service.get_order(request_session(request), principal.tenant, order))


@router.post("/orders/{order}/bind", response_model=OrderOut)
async def bind_payment(
    request: Request, order: str, body: OrderBind, principal: Annotated[Principal, scoped("commerce:write")]
) -> OrderOut:
    """Bind a payment to an order.

    Binds a manual-capture payment for the order's amount and currency; once per order. `expected_version`
    must be the order's current version.
    """
    return render_order(await service.bind_payment(request_session(request), principal.tenant, order, body))


@router.post("/orders/{order}/start-preparation", response_model=OrderOut, responses=CHARGES_CARD)
async def start_preparation(
    request: Request,
    order: str,
    body: OrderTransition,
    principal: Annotated[Principal, scoped("commerce:write")],
) -> OrderOut:
    """Start preparing an order.

    Captures the authorized payment (the card network may refuse or not answer); the order is `preparing`.
    """
    tenant = principal.tenant
    prepared = await phases.run_request_step(  # the payment's call outside any transaction
        request,
        tenant,
        None,
        lambda session, processor: service.start_preparation(
            session, tenant, processor, order, body.expected_version
        ),
    )
    return render_order(prepared)


@router.post("/orders/{order}/cancel", response_model=OrderOut, responses=CALLS_PROCESSOR)
async def cancel_order(
    request: Request,
    order: str,
    body: OrderTransition,
    principal: Annotated[Principal, scoped("commerce:write")],
) -> OrderOut:
    """Cancel an order.

    Cancels the order and, with it, the payment's authorization (released at the processor, nothing
    captured).
    """
    tenant = principal.tenant
    canceled = await phases.run_request_step(  # the payment's call outside any transaction
        request,
        tenant,
        None,
        lambda session, processor: service.cancel_order(
            session, tenant, processor, order, body.expected_version
        ),
    )
    return render_order(canceled)
