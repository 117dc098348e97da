from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request

from moneyrail.api.context import Principal, request_session
from moneyrail.api.pagination import ListEnvelope, PageRequest, list_envelope, page_request
from moneyrail.api.routing import MoneyrailRoute, scoped

from . import service
from .schemas import PayoutCreate, PayoutOut, render_payout

router = APIRouter(route_class=MoneyrailRoute, tags=["payouts"])


@router.post("/connected-accounts/{connected_account}/payouts", response_model=PayoutOut)
async def create_payout(
    request: Request,
    connected_account: str,
    body: PayoutCreate,
    principal: Annotated[Principal, scoped("payouts:write")],
) -> PayoutOut:
    """Create a payout.

    A manual payout from the account's available balance: `pending` until its `payout` operation
    hands it to the bank, then `in_transit` until `arrival_date`, then `paid` (or `failed`).
    """
    payout = await service.create_payout(request_session(request), principal.tenant, connected_account, body)
    return render_payout(payout)


@router.get("/connected-accounts/{connected_account}/payouts", response_model=ListEnvelope[PayoutOut])
async def list_payouts(
    request: Request,
    connected_account: str,
    principal: Annotated[Principal, scoped("payouts:read")],
    page: Annotated[PageRequest, Depends(page_request)],
) -> ListEnvelope[PayoutOut]:
    """List a connected account's payouts.

    The payouts of one connected account, newest first.
    """
    rows = await service.list_payouts(
        request_session(request), principal.tenant, connected_account, limit=page.limit, after=page.after
    )
    return list_envelope(rows, page, render_payout)


@router.get("/payouts", response_model=ListEnvelope[PayoutOut])
async def list_all_payouts(
    request: Request,
    principal: Annotated[Principal, scoped("payouts:read")],
    page: Annotated[PageRequest, Depends(page_request)],
) -> ListEnvelope[PayoutOut]:
    """List payouts.

    Every payout of the installation's environment (today: its connected accounts' payouts), newest first.
    """
    rows = await service.list_all_payouts(
        request_session(request), principal.tenant, limit=page.limit, after=page.after
    )
    return list_envelope(rows, page, render_payout)


@router.get("/payouts/{payout}", response_model=PayoutOut)
async def get_payout(
    request: Request, payout: str, principal: Annotated[Principal, scoped("payouts:read")]
) -> PayoutOut:
    """Retrieve a payout.

    One payout by its `po_` id, with its status, arrival date and any failure.
    """
    return render_payout(await service.get_payout(request_session(request), principal.tenant, payout))


@router.post("/payouts/{payout}/cancel", response_model=PayoutOut)
async def cancel_payout(
    request: Request, payout: str, principal: Annotated[Principal, scoped("payouts:write")]
) -> PayoutOut:
    """Cancel a payout.

    Cancel a payout still `pending` (not yet handed to the bank): its money returns to the balance.
    """
    return render_payout(await service.cancel_payout(request_session(request), principal.tenant, payout))
