from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request

from moneyrail.api.context import Principal, request_session
from moneyrail.api.idempotency import pending_claim
from moneyrail.api.pagination import ListEnvelope, PageRequest, list_envelope, page_request
from moneyrail.api.routing import MoneyrailRoute, scoped
from moneyrail.kit.clock import to_unix
from moneyrail.models import Customer

from . import service
from .schemas import CustomerCreate, CustomerOut

router = APIRouter(route_class=MoneyrailRoute, tags=["customers"])


def render(customer: Customer) -> CustomerOut:
    return CustomerOut(
        id=customer.id,
        livemode=customer.livemode,
        created=to_unix(customer.created_at),
        external_reference=customer.external_reference,
        email=customer.email,
        name=customer.name,
        metadata=customer.metadata_,
    )


@router.post("/customers", response_model=CustomerOut)
async def create_customer(
    request: Request,
    principal: Annotated[Principal, scoped("customers:write", claim_in_statement=True)],
    body: CustomerCreate | None = None,
) -> CustomerOut:
    """Create a customer.

    Creates a customer. With an `external_reference` already used in this environment, answers the
    existing customer instead of creating a second one.
    """
    customer = await service.create_or_reuse_customer(
        request_session(request), principal.tenant, body or CustomerCreate(), pending_claim(request)
    )
    return render(customer)


@router.get("/customers", response_model=ListEnvelope[CustomerOut])
async def list_customers(
    request: Request,
    principal: Annotated[Principal, scoped("customers:read")],
    page: Annotated[PageRequest, Depends(page_request)],
) -> ListEnvelope[CustomerOut]:
    """List customers.

    The environment's customers, newest first, a page at a time (`limit`, `cursor`).
    """
    rows = await service.list_customers(
        request_session(request), principal.tenant, limit=page.limit, after=page.after
    )
    return list_envelope(rows, page, render)


@router.get("/customers/{customer}", response_model=CustomerOut)
async def get_customer(
    request: Request, customer: str, principal: Annotated[Principal, scoped("customers:read")]
) -> CustomerOut:
    """Retrieve a customer.

    One customer by its `cus_` id.
    """
    return render(await service.get_customer(request_session(request), principal.tenant, customer))
