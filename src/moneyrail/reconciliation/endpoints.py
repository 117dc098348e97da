from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from moneyrail.api.context import Principal, request_session, request_uow
from moneyrail.api.openapi import NEEDS_PROCESSOR
from moneyrail.api.pagination import ListEnvelope, PageRequest, list_envelope, page_request
from moneyrail.api.routing import MoneyrailRoute, scoped
from moneyrail.engine.schemas import render_operation
from moneyrail.errors import ResourceMissing
from moneyrail.processor.provider import processor_for, sandbox_processor, sandbox_simulator
from moneyrail.processor.sandbox import SandboxProcessor

from . import service
from .schemas import ProcessorTransferChange, ReconciliationRunCreate, ReconciliationRunOut, render_run

router = APIRouter(route_class=MoneyrailRoute, tags=["reconciliation"])


@router.post(
    "/reconciliation-runs",
    response_model=ReconciliationRunOut,
    status_code=202,
    responses={
        202: {"description": "Accepted: the run's `operation` compares the books in a worker"},
        **NEEDS_PROCESSOR,
    },
)
async def create_reconciliation_run(
    request: Request,
    principal: Annotated[Principal, scoped("reconciliation:write")],
    body: ReconciliationRunCreate | None = None,
) -> JSONResponse:
    """Start a reconciliation run.

    Compares the immutable transfer ledger with the processor's records. Answers 202 with the run and its
    `reconciliation` operation; the issues appear when the run is `completed`.
    """
    run, operation = await service.create_run(request_session(request), principal.tenant)
    shown = render_run(run, render_operation(operation))
    return JSONResponse(shown.model_dump(mode="json"), status_code=202)


@router.get("/reconciliation-runs", response_model=ListEnvelope[ReconciliationRunOut])
async def list_reconciliation_runs(
    request: Request,
    principal: Annotated[Principal, scoped("reconciliation:read")],
    page: Annotated[PageRequest, Depends(page_request)],
) -> ListEnvelope[ReconciliationRunOut]:
    """List reconciliation runs.

    The environment's reconciliation runs, newest first.
    """
    rows = await service.list_runs(
        request_session(request), principal.tenant, limit=page.limit, after=page.after
    )
    return list_envelope(rows, page, lambda run: render_run(run, None))


@router.get("/reconciliation-runs/{run}", response_model=ReconciliationRunOut)
async def get_reconciliation_run(
    request: Request, run: str, principal: Annotated[Principal, scoped("reconciliation:read")]
) -> ReconciliationRunOut:
    """Retrieve a reconciliation run.

    One run by its `recon_` id, with the issues it found and its operation.
    """
    session = request_session(request)
    found = await service.get_run(session, principal.tenant, run)
    operation = await service.operation_of(session, principal.tenant, found)
    return render_run(found, render_operation(operation) if operation else None)


async def _sandbox_processor(request: Request, principal: Principal) -> SandboxProcessor:
    """The simulator itself (its books are what the helpers alter), for a tenant whose money moves on it."""
    if await processor_for(request_uow(request), principal.tenant) is not sandbox_processor():
        raise ResourceMissing("Unrecognized request URL: test helpers exist only in the sandbox.")
    return sandbox_simulator()


@router.post("/test-helpers/processor-transfers/{transfer}/lose", status_code=204)
async def lose_processor_transfer(
    request: Request, transfer: str, principal: Annotated[Principal, scoped("reconciliation:write")]
) -> None:
    """Lose a processor transfer.

    Sandbox only: the processor loses its record of this transfer, so a reconciliation run finds it
    `missing_at_processor`.
    """
    processor_id = await service.processor_id_of(request_session(request), principal.tenant, transfer)
    await (await _sandbox_processor(request, principal)).lose_transfer(principal.tenant, processor_id)


@router.post("/test-helpers/processor-transfers/{transfer}/alter", status_code=204)
async def alter_processor_transfer(
    request: Request,
    transfer: str,
    body: ProcessorTransferChange,
    principal: Annotated[Principal, scoped("reconciliation:write")],
) -> None:
    """Alter a processor transfer.

    Sandbox only: the processor's record of this transfer says another amount or status, so a
    reconciliation run finds the mismatch.
    """
    processor_id = await service.processor_id_of(request_session(request), principal.tenant, transfer)
    await (await _sandbox_processor(request, principal)).alter_transfer(
        principal.tenant, processor_id, amount=body.amount, status=body.status
    )
