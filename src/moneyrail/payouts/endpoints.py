from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request

from moneyrail.api.context import Principal, request_session
from moneyrail.api.openapi import NEEDS_PROCESSOR
from moneyrail.api.pagination import ListEnvelope, PageRequest, list_envelope, page_request
from moneyrail.api.routing import MoneyrailRoute, scoped

from . import reversals, service
from .schemas import PayoutCreate, PayoutOut, PayoutReverse, render_payout

router = APIRouter(route_class=MoneyrailRoute, tags=["payouts"])


@router.post(
    "/connected-accounts/{connected_account}/payouts", response_model=PayoutOut, responses=NEEDS_PROCESSOR
)
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


@router.post("/payouts", response_model=PayoutOut, responses=NEEDS_PROCESSOR)
async def create_installation_payout(
    request: Request, body: PayoutCreate, principal: Annotated[Principal, scoped("payouts:write")]
) -> PayoutOut:
    """Pay out the installation's balance.

    A direct installation's manual payout from its own available balance (`GET /v1/balance`) to the bank
    account the operator registered for the environment: `pending`, `in_transit`, then `paid` (or
    `failed`, the money back). A platform pays out through its connected accounts (409).
    """
    payout = await service.create_installation_payout(request_session(request), principal.tenant, body)
    return render_payout(payout)


@router.get("/payouts", response_model=ListEnvelope[PayoutOut])
async def list_all_payouts(
    request: Request,
    principal: Annotated[Principal, scoped("payouts:read")],
    page: Annotated[PageRequest, Depends(page_request)],
) -> ListEnvelope[PayoutOut]:
    """List payouts.

    Every payout of the installation's environment (its own and its connected accounts', reversals
    included), newest first.
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


@router.post("/payouts/{payout}/reverse", response_model=PayoutOut, responses=NEEDS_PROCESSOR)
async def reverse_payout(
    request: Request,
    payout: str,
    principal: Annotated[Principal, scoped("payouts:write")],
    body: PayoutReverse | None = None,
) -> PayoutOut:
    """Reverse a paid payout.

    Only a `paid` payout, once: answers the reversal, a new payout (`original_payout` names the reversed
    one) that takes the money back from the bank account to the balance it left, `pending` until its
    operation, then `in_transit` and `paid` on the environment's clock. The instant fee is not returned.
    """
    reversal = await reversals.reverse_payout(
        request_session(request), principal.tenant, payout, body or PayoutReverse()
    )
    return render_payout(reversal)
