from __future__ import annotations

from typing import Annotated, Literal, NoReturn

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from moneyrail.api.context import Principal
from moneyrail.api.routing import MoneyrailRoute, scoped
from moneyrail.config import API_VERSIONS
from moneyrail.errors import ResourceMissing

router = APIRouter(prefix="/fiscal/v1", route_class=MoneyrailRoute, tags=["fiscal"])
NOT_IN_INTERFACE = (
    "The fiscal API's operations are not part of this service's interface: only its base "
    "(GET /fiscal/v1) answers. Legal invoice documents come from your fiscal provider."
)


class FiscalBaseOut(BaseModel):
    object: Literal["api"] = "api"
    api: Literal["fiscal"] = Field(default="fiscal", description="The API's name")
    version: str = Field(description="The version serving this request")
    livemode: bool
    # none yet: see NOT_IN_INTERFACE
    operations: list[str] = Field(description="The fiscal operations of this interface: none yet")


@router.get("", response_model=FiscalBaseOut)
async def fiscal_base(principal: Annotated[Principal, scoped("account:read")]) -> FiscalBaseOut:
    """The fiscal API.

    The fiscal API's base: its version; it has no operations in this interface.
    """
    return FiscalBaseOut(version=API_VERSIONS["fiscal"][0], livemode=principal.tenant.livemode, operations=[])


@router.api_route(
    "/{operation:path}",
    methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
    include_in_schema=False,
    response_model=None,
)
async def fiscal_operation(request: Request, operation: str) -> NoReturn:
    raise ResourceMissing(
        f"Unrecognized request URL ({request.method} {request.url.path}). {NOT_IN_INTERFACE}"
    )
