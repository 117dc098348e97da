from __future__ import annotations

from typing import Annotated, Literal, cast

from fastapi import APIRouter, Query, Request

from moneyrail.api import idempotency
from moneyrail.api.context import Principal, request_session, request_uow
from moneyrail.api.routing import MoneyrailRoute, scoped
from moneyrail.kit.clock import to_unix

from . import service
from .schemas import ClockAdvance, ClockOut, FaultCreate, FaultList, FaultOut

router = APIRouter(route_class=MoneyrailRoute, prefix="/test-helpers", tags=["sandbox test helpers"])


def render_clock(clock: service.ClockView) -> ClockOut:
    return ClockOut(now=to_unix(clock.now), offset_seconds=clock.offset_seconds, work_done=clock.work_done)


@router.get("/clock", response_model=ClockOut)
async def read_clock(request: Request, principal: Annotated[Principal, scoped("account:read")]) -> ClockOut:
    """Read the sandbox clock.

    The installation's sandbox time, which everything time-based follows. Sandbox keys only: a live
    key gets 404.
    """
    return render_clock(await service.read_clock(request_session(request), principal.tenant))


@router.post("/clock/advance", response_model=ClockOut)
async def advance_clock(
    request: Request, body: ClockAdvance, principal: Annotated[Principal, scoped("account:write")]
) -> ClockOut:
    """Advance the sandbox clock.

    Moves the sandbox clock forward by `seconds` and runs the work that fell due (expiries, cost
    reports, renewals). Sandbox keys only.
    """
    clock = await service.advance_clock(
        request_uow(request),
        principal.tenant,
        body.seconds,
        idempotency_key_claimed=idempotency.claimed_key(request) is not None,
    )
    return render_clock(clock)


@router.post("/processor-faults", response_model=FaultOut)
async def inject_processor_faults(
    request: Request, body: FaultCreate, principal: Annotated[Principal, scoped("account:write")]
) -> FaultOut:
    """Inject processor faults.

    The next `count` sandbox processor calls of `operation_type` fail, to exercise retries and dead
    letters. Sandbox keys only.
    """
    fault = await service.inject_processor_faults(
        request_session(request),
        principal.tenant,
        operation_type=body.operation_type,
        mode=body.mode,
        count=body.count,
    )
    return render_fault(fault)


def render_fault(fault: service.FaultView) -> FaultOut:
    return FaultOut(
        operation_type=fault.operation_type,
        mode=cast(Literal["transient", "permanent"], fault.mode),
        count=fault.count,
    )


@router.get("/processor-faults", response_model=FaultList)
async def list_processor_faults(
    request: Request, principal: Annotated[Principal, scoped("account:read")]
) -> FaultList:
    """List processor faults.

    The injected faults still armed, each with the number of calls it has left to fail.
    """
    faults = await service.list_processor_faults(request_session(request), principal.tenant)
    return FaultList(data=[render_fault(fault) for fault in faults])


@router.delete("/processor-faults", response_model=FaultList)
async def clear_processor_faults(
    request: Request,
    principal: Annotated[Principal, scoped("account:write")],
    operation_type: Annotated[
        str | None, Query(max_length=100, description="Only this type's fault; all when absent")
    ] = None,
) -> FaultList:
    """Clear processor faults.

    Disarm the injected faults; answers those that were still armed.
    """
    faults = await service.clear_processor_faults(
        request_session(request), principal.tenant, operation_type=operation_type
    )
    return FaultList(data=[render_fault(fault) for fault in faults])
