from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field, StringConstraints

from moneyrail.kit.clock import to_unix
from moneyrail.kit.schemas import Amount, Metadata, RequestBody, ResourceOut
from moneyrail.models import Dispute, DisputeFile

DisputeStatus = Literal["needs_response", "under_review", "won", "lost"]
# Stripe's dispute reasons, which card networks map their reason codes onto
Reason = Literal[
    "bank_cannot_process",
    "credit_not_processed",
    "customer_initiated",
    "debit_not_authorized",
    "duplicate",
    "fraudulent",
    "general",
    "incorrect_account_details",
    "insufficient_funds",
    "product_not_received",
    "product_unacceptable",
    "subscription_canceled",
    "unrecognized",
]
EvidenceText = Annotated[str, StringConstraints(max_length=20_000)]
FileId = Annotated[str, StringConstraints(min_length=1, max_length=255)]

EVIDENCE_TEXT_FIELDS = (
    "product_description",
    "customer_name",
    "customer_email_address",
    "billing_address",
    "service_date",
    "refund_policy_disclosure",
    "cancellation_rebuttal",
    "access_activity_log",
    "uncategorized_text",
)
EVIDENCE_FILE_FIELDS = (
    "receipt",
    "customer_communication",
    "shipping_documentation",
    "refund_policy",
    "uncategorized_file",
)


class Evidence(RequestBody):
    """Text answers, and `file_` ids uploaded to this dispute (POST /v1/disputes/{id}/files).
    Fields left out keep what was saved before; an empty string clears one."""

    product_description: EvidenceText | None = None
    customer_name: EvidenceText | None = None
    customer_email_address: EvidenceText | None = None
    billing_address: EvidenceText | None = None
    service_date: EvidenceText | None = None
    refund_policy_disclosure: EvidenceText | None = None
    cancellation_rebuttal: EvidenceText | None = None
    access_activity_log: EvidenceText | None = None
    uncategorized_text: EvidenceText | None = None
    receipt: FileId | None = None
    customer_communication: FileId | None = None
    shipping_documentation: FileId | None = None
    refund_policy: FileId | None = None
    uncategorized_file: FileId | None = None


class EvidenceUpdate(RequestBody):
    evidence: Evidence | None = None
    submit: bool = Field(
        default=False,
        description="true sends the evidence to the issuing bank: once, and the dispute is then read-only",
    )
    metadata: Metadata | None = None


class DisputeClose(RequestBody):
    """Closing takes no parameters, and still refuses unknown ones."""


class TestDisputeCreate(RequestBody):
    payment_intent: Annotated[str, StringConstraints(min_length=1, max_length=255)] = Field(
        description="A captured `pi_` payment of this installation"
    )
    reason: Reason = "fraudulent"
    amount: Amount | None = Field(default=None, description="Defaults to everything not refunded")


class EvidenceDetails(BaseModel):
    due_by: int = Field(description="Unix seconds: evidence is accepted until then")
    has_evidence: bool
    past_due: bool
    submission_count: int


class DisputeOut(ResourceOut):
    object: Literal["dispute"] = "dispute"
    payment_intent: str
    amount: int
    currency: str
    reason: str
    status: DisputeStatus
    fee_amount: int = Field(description="The network's dispute fee; kept by the network even when won")
    amount_withdrawn: int = Field(description="Taken from the balance: the disputed amount plus the fee")
    amount_reinstated: int = Field(description="Given back when the dispute was won: the disputed amount")
    amount_reversed: int = Field(description="Of the withdrawal, what reversals took back from transfers")
    evidence: dict[str, str]
    evidence_details: EvidenceDetails
    metadata: dict[str, str]


class FileOut(ResourceOut):
    object: Literal["file"] = "file"
    purpose: Literal["dispute_evidence"] = "dispute_evidence"
    dispute: str
    type: Literal["pdf", "jpeg", "png"] = Field(description="Recognised from the content, not the name")
    size: int
    sha256: str
    filename: str | None


def render_dispute(dispute: Dispute, *, past_due: bool) -> DisputeOut:
    return DisputeOut(
        id=dispute.id,
        livemode=dispute.livemode,
        created=to_unix(dispute.created_at),
        payment_intent=dispute.payment_intent_id,
        amount=dispute.amount,
        currency=dispute.currency,
        reason=dispute.reason,
        status=dispute.status,
        fee_amount=dispute.fee_amount,
        amount_withdrawn=dispute.amount_withdrawn,
        amount_reinstated=dispute.amount_reinstated,
        amount_reversed=dispute.amount_reversed,
        evidence=dispute.evidence,
        evidence_details=EvidenceDetails(
            due_by=to_unix(dispute.evidence_due_by),
            has_evidence=bool(dispute.evidence),
            past_due=past_due,
            submission_count=dispute.submission_count,
        ),
        metadata=dispute.metadata_,
    )


def render_file(stored: DisputeFile) -> FileOut:
    return FileOut(
        id=stored.id,
        livemode=stored.livemode,
        created=to_unix(stored.created_at),
        dispute=stored.dispute_id,
        type=stored.type,
        size=stored.size,
        sha256=stored.sha256,
        filename=stored.filename,
    )
