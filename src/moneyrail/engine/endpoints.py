from __future__ import annotations

from typing import Annotated, Literal, cast

from fastapi import APIRouter, Request

from moneyrail.api.context import Principal, request_session
from moneyrail.api.routing import MoneyrailRoute, scoped
from moneyrail.kit.clock import to_unix
from moneyrail.models import Operation

from . import service
from .schemas import OperationOut

router = APIRouter(route_class=MoneyrailRoute, tags=["operations"])

Status = Literal["pending", "running", "succeeded", "failed", "dead_letter", "canceled"]


def render(operation: Operation) -> OperationOut:
    return OperationOut(
        id=operation.id,
        livemode=operation.livemode,
        created=to_unix(operation.created_at),
        updated=to_unix(operation.updated_at),
        type=operation.type,
        status=cast(Status, operation.status),
        attempts=operation.attempts,
        last_error=operation.last_error,
        resource=operation.resource,
    )


@router.get("/operations/{operation}", response_model=OperationOut)
async def get_operation(
    request: Request, operation: str, principal: Annotated[Principal, scoped("operations:read")]
) -> OperationOut:
    return render(await service.get_operation(request_session(request), principal.tenant, operation))
