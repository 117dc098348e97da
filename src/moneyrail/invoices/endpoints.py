from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request

from moneyrail.api.context import Principal, request_session
from moneyrail.api.openapi import NEEDS_PROCESSOR
from moneyrail.api.pagination import ListEnvelope, PageRequest, list_envelope, page_request
from moneyrail.api.routing import MoneyrailRoute, scoped

from . import service
from .schemas import InvoiceCreate, InvoiceFinalize, InvoiceOut, InvoiceSend, InvoiceUpdate, render_invoice

router = APIRouter(route_class=MoneyrailRoute, tags=["invoices"])


def _render(view: service.InvoiceView) -> InvoiceOut:
    return render_invoice(view.invoice, view.deliveries)


@router.post("/invoices", response_model=InvoiceOut)
async def create_invoice(
    request: Request, body: InvoiceCreate, principal: Annotated[Principal, scoped("payments:write")]
) -> InvoiceOut:
    """Create a draft invoice.

    A draft: lines for a customer. Nothing is numbered or payable until it is finalized.
    """
    session = request_session(request)
    invoice = await service.create_invoice(session, principal.tenant, body)
    return _render(await service.view_of(session, principal.tenant, invoice))


@router.get("/invoices", response_model=ListEnvelope[InvoiceOut])
async def list_invoices(
    request: Request,
    principal: Annotated[Principal, scoped("payments:read")],
    page: Annotated[PageRequest, Depends(page_request)],
    customer: Annotated[str | None, Query(description="Only this customer's invoices")] = None,
) -> ListEnvelope[InvoiceOut]:
    """List invoices.

    The environment's payment invoices, newest first.
    """
    views = await service.list_invoices(
        request_session(request), principal.tenant, limit=page.limit, after=page.after, customer=customer
    )
    by_id = {view.invoice.id: view for view in views}
    return list_envelope([view.invoice for view in views], page, lambda row: _render(by_id[row.id]))


@router.get("/invoices/{invoice}", response_model=InvoiceOut)
async def get_invoice(
    request: Request, invoice: str, principal: Annotated[Principal, scoped("payments:read")]
) -> InvoiceOut:
    """Retrieve an invoice.

    One invoice by its `in_` id, with its lines, payment and deliveries.
    """
    return _render(await service.get_invoice(request_session(request), principal.tenant, invoice))


@router.post("/invoices/{invoice}", response_model=InvoiceOut)
async def update_invoice(
    request: Request,
    invoice: str,
    body: InvoiceUpdate,
    principal: Annotated[Principal, scoped("payments:write")],
) -> InvoiceOut:
    """Update a draft invoice.

    A draft's lines, description, return URLs or metadata; a finalized invoice is refused (409).
    """
    session = request_session(request)
    updated = await service.update_invoice(session, principal.tenant, invoice, body)
    return _render(await service.view_of(session, principal.tenant, updated))


@router.post("/invoices/{invoice}/finalize", response_model=InvoiceOut, responses=NEEDS_PROCESSOR)
async def finalize_invoice(
    request: Request,
    invoice: str,
    principal: Annotated[Principal, scoped("payments:write")],
    body: InvoiceFinalize | None = None,
) -> InvoiceOut:
    """Finalize an invoice.

    Gives it the environment's next number (no gaps) and creates the payment for the amount due; immutable
    after.
    """
    session = request_session(request)
    finalized = await service.finalize_invoice(session, principal.tenant, invoice)
    return _render(await service.view_of(session, principal.tenant, finalized))


@router.post("/invoices/{invoice}/send", response_model=InvoiceOut)
async def send_invoice(
    request: Request,
    invoice: str,
    principal: Annotated[Principal, scoped("payments:write")],
    body: InvoiceSend | None = None,
) -> InvoiceOut:
    """Send an invoice.

    E-mails the invoice to the customer with a new hosted payment link (sent by a worker: the delivery in
    `deliveries` turns `sent` or `failed`).
    """
    return _render(await service.send_invoice(request_session(request), principal.tenant, invoice))
