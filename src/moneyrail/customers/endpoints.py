from __future__ import annotations

from typing import Annotated

import orjson
from fastapi import APIRouter, Depends, Request, Response

from moneyrail.api.context import Principal, request_session, request_uow
from moneyrail.api.idempotency import awaiting_created, pending_claim, with_created
from moneyrail.api.pagination import ListEnvelope, PageRequest, list_envelope, page_request
from moneyrail.api.routing import MoneyrailRoute, scoped
from moneyrail.kit.clock import to_unix

from . import service
from .repository import NewCustomer
from .schemas import CustomerCreate, CustomerOut

router = APIRouter(route_class=MoneyrailRoute, tags=["customers"])


def render(customer: service.CustomerRecord) -> CustomerOut:
    return CustomerOut(
        id=customer.id,
        livemode=customer.livemode,
        created=to_unix(customer.created_at),
        external_reference=customer.external_reference,
        email=customer.email,
        name=customer.name,
        metadata=customer.metadata_,
    )


def _answer(customer: NewCustomer, created: int) -> bytes:
    """`CustomerOut`'s JSON, byte for byte, without the model: the create's answer, whose values were
    validated on the way in (tests/customers/test_answer_bytes.py holds the two together)."""
    return orjson.dumps(
        {
            "id": customer.id,
            "object": "customer",
            "livemode": customer.livemode,
            "created": created,
            "external_reference": customer.external_reference,
            "email": customer.email,
            "name": customer.name,
            "metadata": customer.metadata_,
        }
    )


@router.post("/customers", response_model=CustomerOut)
async def create_customer(
    request: Request,
    principal: Annotated[Principal, scoped("customers:write", claim_in_statement=True)],
    body: CustomerCreate | None = None,
) -> Response:
    """Create a customer.

    Creates a customer. With an `external_reference` already used in this environment, answers the
    existing customer instead of creating a second one.
    """
    drafted: tuple[str, bytes] | None = None

    def answer_awaiting_created(customer: NewCustomer) -> bytes:
        """The answer sealed into the key's record before the database stamps the customer's `created`."""
        nonlocal drafted
        drafted = (customer.id, awaiting_created(_answer(customer, 0)))
        return drafted[1]

    customer = await service.create_or_reuse_customer(
        request_uow(request),  # not its session: the usual create makes none (db/uow.py)
        principal.tenant,
        body or CustomerCreate(),
        pending_claim(request),
        answer_awaiting_created,
    )
    # serialized once: the stored answer's own bytes when this request made the customer, so answer
    # and replay are the same bytes (response_model stays for the docs)
    if drafted is not None and drafted[0] == customer.id:
        return Response(with_created(drafted[1], customer.created_at), media_type="application/json")
    return Response(_answer(customer, to_unix(customer.created_at)), media_type="application/json")


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
