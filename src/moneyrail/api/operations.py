"""`GET /v1/operations/{operation}`: the engine's operations over HTTP. In api/, above engine/ (which
knows no HTTP route), as the other cross-cutting resources of the edge."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Request

from moneyrail.api.context import Principal, request_session
from moneyrail.api.routing import MoneyrailRoute, scoped
from moneyrail.engine import service
from moneyrail.engine.schemas import OperationOut, render_operation

router = APIRouter(route_class=MoneyrailRoute, tags=["operations"])


@router.get("/operations/{operation}", response_model=OperationOut)
async def get_operation(
    request: Request, operation: str, principal: Annotated[Principal, scoped("operations:read")]
) -> OperationOut:
    """Retrieve an operation.

    An asynchronous operation (a refund, a transfer, a payout, ...) and where it stands: status,
    attempts and the last error.
    """
    return render_operation(
        await service.get_operation(request_session(request), principal.tenant, operation)
    )
