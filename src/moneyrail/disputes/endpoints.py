from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request

from moneyrail.api.context import Principal, request_session, request_uow
from moneyrail.api.idempotency import HEADER as IDEMPOTENCY_HEADER
from moneyrail.api.openapi import CALLS_PROCESSOR
from moneyrail.api.pagination import ListEnvelope, PageRequest, list_envelope, page_request
from moneyrail.api.routing import MoneyrailRoute, scoped
from moneyrail.errors import InvalidRequest
from moneyrail.processor.provider import processor_for

from . import files, service
from .schemas import DisputeClose, DisputeOut, EvidenceUpdate, FileOut, TestDisputeCreate, render_file

router = APIRouter(route_class=MoneyrailRoute, tags=["disputes"])
test_helpers = APIRouter(route_class=MoneyrailRoute, prefix="/test-helpers", tags=["sandbox test helpers"])


async def _out(request: Request, principal: Principal, dispute: Any) -> DisputeOut:
    return DisputeOut.model_validate(await service.show(request_session(request), principal.tenant, dispute))


@router.get("/disputes", response_model=ListEnvelope[DisputeOut])
async def list_disputes(
    request: Request,
    principal: Annotated[Principal, scoped("disputes:read")],
    page: Annotated[PageRequest, Depends(page_request)],
    payment_intent: Annotated[str | None, Query(description="Only the dispute of this payment")] = None,
) -> ListEnvelope[DisputeOut]:
    """List disputes.

    The disputes of the installation's payments, newest first; `payment_intent` narrows to one payment's.
    """
    session = request_session(request)
    rows = await service.list_disputes(
        session, principal.tenant, limit=page.limit, after=page.after, payment_intent=payment_intent
    )
    shown = {row.id: await _out(request, principal, row) for row in rows}
    return list_envelope(rows, page, lambda row: shown[row.id])


@router.get("/disputes/{dispute}", response_model=DisputeOut)
async def get_dispute(
    request: Request, dispute: str, principal: Annotated[Principal, scoped("disputes:read")]
) -> DisputeOut:
    """Retrieve a dispute.

    One dispute by its `dp_` id: its status, amounts, saved evidence and the evidence deadline.
    """
    found = await service.get_dispute(request_session(request), principal.tenant, dispute)
    return await _out(request, principal, found)


def bounded_upload(request: Request) -> None:
    """Before the key is claimed: with an Idempotency-Key the request's body is fingerprinted, so it
    must be of a known, bounded size (without one, the body is only ever streamed)."""
    if IDEMPOTENCY_HEADER not in request.headers:
        return
    length = request.headers.get("content-length")
    if length is None or not length.isdigit():
        raise InvalidRequest("An upload with an Idempotency-Key needs a Content-Length header.", param="file")
    if int(length) > files.MAX_FILE_BYTES + files.MULTIPART_OVERHEAD:
        raise files.too_large()


@router.post(
    "/disputes/{dispute}/files",
    response_model=FileOut,
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "multipart/form-data": {
                    "schema": {
                        "type": "object",
                        "required": ["file"],
                        "properties": {
                            "file": {
                                "type": "string",
                                "format": "binary",
                                "description": "The evidence: a PDF, JPEG or PNG of at most 8 MiB",
                            },
                            "purpose": {
                                "type": "string",
                                "enum": ["dispute_evidence"],
                                "description": "What the file is for: `dispute_evidence`",
                            },
                        },
                    },
                    "example": {"file": "receipt.pdf", "purpose": "dispute_evidence"},
                }
            },
        }
    },
    responses={413: {"description": "file_too_large: more than 8 MiB"}},
)
async def upload_file(
    request: Request,
    dispute: str,
    _bounded: Annotated[None, Depends(bounded_upload)],
    principal: Annotated[Principal, scoped("disputes:write")],
) -> FileOut:
    """Upload dispute evidence.

    A PDF, JPEG or PNG of at most 8 MiB, recognised by its content (its name and declared type are not
    trusted), streamed to the files directory. Accepted while the dispute needs a response; refer to the
    returned `file_` id in the evidence.
    """
    stored = await service.receive_file(
        request_session(request),
        principal.tenant,
        dispute,
        request.stream(),
        request.headers.get("content-type"),
    )
    return render_file(stored)


@router.post("/disputes/{dispute}/evidence", response_model=DisputeOut, responses=CALLS_PROCESSOR)
async def update_evidence(
    request: Request,
    dispute: str,
    body: EvidenceUpdate,
    principal: Annotated[Principal, scoped("disputes:write")],
) -> DisputeOut:
    """Save or submit evidence.

    Save evidence (fields merge with what was saved), or with `submit: true` send it to the issuing bank:
    once, before `evidence_details.due_by`; the dispute is then `under_review` and read-only.
    """
    found = await service.update_evidence(
        request_session(request),
        principal.tenant,
        await processor_for(request_uow(request), principal.tenant),
        dispute,
        body,
    )
    return await _out(request, principal, found)


@router.post("/disputes/{dispute}/close", response_model=DisputeOut, responses=CALLS_PROCESSOR)
async def close_dispute(
    request: Request,
    dispute: str,
    principal: Annotated[Principal, scoped("disputes:write")],
    body: DisputeClose | None = None,
) -> DisputeOut:
    """Close a dispute.

    Accept the loss: irreversible. The dispute is `lost`; the money withdrawn stays withdrawn.
    """
    network = await processor_for(request_uow(request), principal.tenant)
    found = await service.close_dispute(request_session(request), principal.tenant, network, dispute)
    return await _out(request, principal, found)


@test_helpers.post("/disputes", response_model=DisputeOut, responses=CALLS_PROCESSOR)
async def open_test_dispute(
    request: Request, body: TestDisputeCreate, principal: Annotated[Principal, scoped("disputes:write")]
) -> DisputeOut:
    """Open a test dispute.

    Sandbox only: the network opens a dispute on a captured payment now, as a cardholder's bank would.
    """
    network = await processor_for(request_uow(request), principal.tenant)
    found = await service.open_test_dispute(request_session(request), principal.tenant, network, body)
    return await _out(request, principal, found)
