from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request

from moneyrail.api.context import Principal, request_session, request_uow
from moneyrail.api.openapi import CHARGES_CARD
from moneyrail.api.pagination import ListEnvelope, PageRequest, list_envelope, page_request
from moneyrail.api.routing import MoneyrailRoute, scoped
from moneyrail.payments import phases
from moneyrail.processor.provider import processor_for

from . import service
from .schemas import (
    ReviewOut,
    ValueListCreate,
    ValueListItemCreate,
    ValueListItemOut,
    ValueListOut,
    render_item,
    render_review,
    render_value_list,
)

router = APIRouter(route_class=MoneyrailRoute, prefix="/radar", tags=["risk"])


@router.post("/value-lists", response_model=ValueListOut)
async def create_value_list(
    request: Request, body: ValueListCreate, principal: Annotated[Principal, scoped("risk:write")]
) -> ValueListOut:
    """Create a value list.

    A list of values of one type; a payment with a listed value is declined (`block`) or held for a review
    (`review`).
    """
    return render_value_list(
        await service.create_value_list(request_session(request), principal.tenant, body)
    )


@router.get("/value-lists", response_model=ListEnvelope[ValueListOut])
async def list_value_lists(
    request: Request,
    principal: Annotated[Principal, scoped("risk:read")],
    page: Annotated[PageRequest, Depends(page_request)],
) -> ListEnvelope[ValueListOut]:
    """List value lists.

    The environment's value lists, newest first.
    """
    rows = await service.list_value_lists(
        request_session(request), principal.tenant, limit=page.limit, after=page.after
    )
    return list_envelope(rows, page, render_value_list)


@router.get("/value-lists/{value_list}", response_model=ValueListOut)
async def get_value_list(
    request: Request, value_list: str, principal: Annotated[Principal, scoped("risk:read")]
) -> ValueListOut:
    """Retrieve a value list.

    One value list by its `rl_` id.
    """
    return render_value_list(
        await service.get_value_list(request_session(request), principal.tenant, value_list)
    )


@router.post("/value-lists/{value_list}/items", response_model=ValueListItemOut)
async def add_item(
    request: Request,
    value_list: str,
    body: ValueListItemCreate,
    principal: Annotated[Principal, scoped("risk:write")],
) -> ValueListItemOut:
    """Add a value list item.

    Adds one value to the list; payments created afterwards that carry it are blocked or reviewed, as the
    list's `action` says.
    """
    return render_item(await service.add_item(request_session(request), principal.tenant, value_list, body))


@router.get("/value-lists/{value_list}/items", response_model=ListEnvelope[ValueListItemOut])
async def list_items(
    request: Request,
    value_list: str,
    principal: Annotated[Principal, scoped("risk:read")],
    page: Annotated[PageRequest, Depends(page_request)],
) -> ListEnvelope[ValueListItemOut]:
    """List a value list's items.

    The items of one value list, newest first.
    """
    rows = await service.list_items(
        request_session(request), principal.tenant, value_list, limit=page.limit, after=page.after
    )
    return list_envelope(rows, page, render_item)


@router.get("/reviews", response_model=ListEnvelope[ReviewOut])
async def list_reviews(
    request: Request,
    principal: Annotated[Principal, scoped("risk:read")],
    page: Annotated[PageRequest, Depends(page_request)],
    open: Annotated[bool | None, Query(description="true: open reviews only; false: closed ones")] = None,
) -> ListEnvelope[ReviewOut]:
    """List reviews.

    Payments held for a risk review, newest first; `open` filters open or closed ones.
    """
    rows = await service.list_reviews(
        request_session(request), principal.tenant, limit=page.limit, after=page.after, open_only=open
    )
    return list_envelope(rows, page, render_review)


@router.get("/reviews/{review}", response_model=ReviewOut)
async def get_review(
    request: Request, review: str, principal: Annotated[Principal, scoped("risk:read")]
) -> ReviewOut:
    """Retrieve a review.

    One review by its `rv_` id: why the payment was held, and whether it was approved.
    """
    return render_review(await service.get_review(request_session(request), principal.tenant, review))


@router.post("/reviews/{review}/approve", response_model=ReviewOut, responses=CHARGES_CARD)
async def approve_review(
    request: Request, review: str, principal: Annotated[Principal, scoped("risk:write")]
) -> ReviewOut:
    """Approve a review.

    The payment continues: captured now for automatic capture (the card network may refuse or not answer),
    capturable for manual capture. Approving an approved review answers it unchanged.
    """
    uow, tenant = request_uow(request), principal.tenant
    approved = await phases.run_in_phases(  # the capture's call outside any transaction
        uow,
        await processor_for(uow, tenant),
        tenant,
        None,
        phases.request_token(request, tenant),
        lambda session, processor: service.approve_review(session, tenant, processor, review),
    )
    return render_review(approved)
