from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse

from moneyrail.api.context import Principal, request_session, request_uow
from moneyrail.api.openapi import CALLS_PROCESSOR, NEEDS_PROCESSOR
from moneyrail.api.pagination import ListEnvelope, PageRequest, list_envelope, page_request
from moneyrail.api.routing import MoneyrailRoute, scoped
from moneyrail.engine.schemas import OperationOut, render_operation
from moneyrail.models import AllocationGroup
from moneyrail.processor.provider import processor_for

from . import reversals, service
from .schemas import (
    AllocationCreate,
    AllocationGroupCommit,
    AllocationGroupCreate,
    AllocationGroupOut,
    ReversalCreate,
    ReversalOut,
    TransferCreate,
    TransferOut,
    render_reversal,
    render_transfer,
)

router = APIRouter(route_class=MoneyrailRoute, tags=["allocation groups and transfers"])


async def _group_out(request: Request, group: AllocationGroup) -> AllocationGroupOut:
    return await service.show_group(request_session(request), group)


@router.post("/allocation-groups", response_model=AllocationGroupOut)
async def create_allocation_group(
    request: Request, body: AllocationGroupCreate, principal: Annotated[Principal, scoped("transfers:write")]
) -> AllocationGroupOut:
    """Create an allocation group.

    Reserves part of a captured payment to be shared out by allocations, then committed.
    """
    group = await service.create_group(request_session(request), principal.tenant, body)
    return await _group_out(request, group)


@router.get("/allocation-groups/{allocation_group}", response_model=AllocationGroupOut)
async def get_allocation_group(
    request: Request, allocation_group: str, principal: Annotated[Principal, scoped("transfers:read")]
) -> AllocationGroupOut:
    """Retrieve an allocation group.

    One allocation group by its `ag_` id, with its allocations and transfers.
    """
    group = await service.get_group(request_session(request), principal.tenant, allocation_group)
    return await _group_out(request, group)


@router.post("/allocation-groups/{allocation_group}/allocations", response_model=AllocationGroupOut)
async def add_allocation(
    request: Request,
    allocation_group: str,
    body: AllocationCreate,
    principal: Annotated[Principal, scoped("transfers:write")],
) -> AllocationGroupOut:
    """Add an allocation.

    Adds a recipient's share to an open allocation group, within what the group reserved.
    """
    group = await service.add_allocation(request_session(request), principal.tenant, allocation_group, body)
    return await _group_out(request, group)


@router.post(
    "/allocation-groups/{allocation_group}/commit",
    response_model=OperationOut,
    status_code=202,
    responses={
        202: {"description": "Accepted: follow the operation until `succeeded` or `dead_letter`"},
        **NEEDS_PROCESSOR,
    },
)
async def commit_allocation_group(
    request: Request,
    allocation_group: str,
    principal: Annotated[Principal, scoped("transfers:write")],
    body: AllocationGroupCommit | None = None,
) -> JSONResponse:
    """Commit an allocation group.

    Answers 202 with the `allocation_commit` operation that creates the transfers; follow it until
    `succeeded` or `dead_letter`.
    """
    operation = await service.commit_group(request_session(request), principal.tenant, allocation_group)
    return JSONResponse(render_operation(operation).model_dump(mode="json"), status_code=202)


@router.post("/transfers", response_model=TransferOut, responses=NEEDS_PROCESSOR)
async def create_transfer(
    request: Request, body: TransferCreate, principal: Annotated[Principal, scoped("transfers:write")]
) -> TransferOut:
    """Create a transfer.

    A one-recipient allocation group, reserved and committed at once; the transfer is `pending`
    until its `transfer` operation (its `operation`, the group's) pays it. While that operation retries
    or waits in `dead_letter` the transfer stays `pending` with `last_operation_error`; it becomes
    `failed` only when the operation ends for good.
    """
    created = await service.create_transfer(request_session(request), principal.tenant, body)
    return render_transfer(created.transfer, [])


@router.get("/transfers", response_model=ListEnvelope[TransferOut])
async def list_transfers(
    request: Request,
    principal: Annotated[Principal, scoped("transfers:read")],
    page: Annotated[PageRequest, Depends(page_request)],
    destination: Annotated[str | None, Query(description="Only transfers to this connected account")] = None,
    allocation_group: Annotated[str | None, Query(description="Only this group's transfers")] = None,
    source_transaction: Annotated[str | None, Query(description="Only transfers out of this payment")] = None,
) -> ListEnvelope[TransferOut]:
    """List transfers.

    The environment's transfers, newest first, filtered by destination, group or source payment.
    """
    session = request_session(request)
    rows = await service.list_transfers(
        session,
        principal.tenant,
        limit=page.limit,
        after=page.after,
        destination=destination,
        allocation_group=allocation_group,
        source_transaction=source_transaction,
    )
    reversals = await service.reversals_of(session, [row.id for row in rows])
    return list_envelope(
        rows, page, lambda transfer: render_transfer(transfer, reversals.get(transfer.id, []))
    )


@router.get("/transfers/{transfer}", response_model=TransferOut)
async def get_transfer(
    request: Request, transfer: str, principal: Annotated[Principal, scoped("transfers:read")]
) -> TransferOut:
    """Retrieve a transfer.

    One transfer by its `tr_` id, with its reversals.
    """
    session = request_session(request)
    found = await service.get_transfer(session, principal.tenant, transfer)
    reversals = await service.reversals_of(session, [found.id])
    return render_transfer(found, reversals.get(found.id, []))


@router.post("/transfers/{transfer}/reversals", response_model=ReversalOut, responses=CALLS_PROCESSOR)
async def create_reversal(
    request: Request,
    transfer: str,
    principal: Annotated[Principal, scoped("transfers:write")],
    body: ReversalCreate | None = None,
) -> ReversalOut:
    """Reverse a transfer.

    Takes back all or part of a paid transfer as a new ledger entry; never beyond what was
    transferred.
    """
    reversal = await reversals.create_reversal(
        request_session(request),
        principal.tenant,
        await processor_for(request_uow(request), principal.tenant),
        transfer,
        body or ReversalCreate(),
    )
    return render_reversal(reversal)
