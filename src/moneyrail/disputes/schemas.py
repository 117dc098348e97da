from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from moneyrail.kit.clock import to_unix
from moneyrail.kit.schemas import Amount, Metadata, RequestBody, ResourceOut
from moneyrail.models import Dispute, DisputeFile

DisputeStatus = Literal["needs_response", "under_review", "won", "lost"]
WithdrawalStatus = Literal["pending", "running", "succeeded", "failed", "dead_letter", "canceled"]
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

    product_description: EvidenceText | None = Field(default=None, description="What was sold")
    customer_name: EvidenceText | None = Field(default=None, description="The customer's name")
    customer_email_address: EvidenceText | None = Field(
        default=None, description="The customer's e-mail address"
    )
    billing_address: EvidenceText | None = Field(default=None, description="The billing address")
    service_date: EvidenceText | None = Field(
        default=None, description="When the service was provided or the goods delivered"
    )
    refund_policy_disclosure: EvidenceText | None = Field(
        default=None, description="How the refund policy was shown to the customer"
    )
    cancellation_rebuttal: EvidenceText | None = Field(
        default=None, description="Why the customer is not owed a cancellation"
    )
    access_activity_log: EvidenceText | None = Field(
        default=None, description="The customer's use of the service"
    )
    uncategorized_text: EvidenceText | None = Field(default=None, description="Anything else")
    receipt: FileId | None = Field(default=None, description="A `file_` id: the receipt")
    customer_communication: FileId | None = Field(
        default=None, description="A `file_` id: correspondence with the customer"
    )
    shipping_documentation: FileId | None = Field(default=None, description="A `file_` id: proof of shipping")
    refund_policy: FileId | None = Field(default=None, description="A `file_` id: the refund policy")
    uncategorized_file: FileId | None = Field(default=None, description="A `file_` id: any other document")


class EvidenceUpdate(RequestBody):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "evidence": {"product_description": "A year of hosting", "customer_name": "Ada"},
                    "submit": False,
                    "metadata": {},
                }
            ]
        }
    )

    evidence: Evidence | None = Field(
        default=None, description="Evidence fields to save; those left out keep what was saved before"
    )
    submit: bool = Field(
        default=False,
        description="true sends the evidence to the issuing bank: once, and the dispute is then read-only",
    )
    metadata: Metadata | None = Field(default=None, description="Your own key-value pairs, merged")


class DisputeClose(RequestBody):
    """Closing takes no parameters, and still refuses unknown ones."""

    model_config = ConfigDict(json_schema_extra={"examples": [{}]})


class TestDisputeCreate(RequestBody):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"payment_intent": "pi_000000000000000000000000", "reason": "fraudulent"}]
        }
    )

    payment_intent: Annotated[str, StringConstraints(min_length=1, max_length=255)] = Field(
        description="A captured `pi_` payment of this installation"
    )
    reason: Reason = Field(default="fraudulent", description="The cardholder's bank's reason")
    amount: Amount | None = Field(default=None, description="Defaults to everything not refunded")


class EvidenceDetails(BaseModel):
    due_by: int = Field(description="Unix seconds: evidence is accepted until then")
    has_evidence: bool = Field(description="true once any evidence was saved")
    past_due: bool = Field(description="true once `due_by` has passed without a submission")
    submission_count: int = Field(description="How many times evidence was submitted: 0 or 1")


class DisputeOut(ResourceOut):
    object: Literal["dispute"] = "dispute"
    payment_intent: str = Field(description="The disputed `pi_` payment")
    amount: int = Field(description="The disputed amount, in minor units")
    currency: str
    reason: str = Field(description="The cardholder's bank's reason, such as `fraudulent`")
    status: DisputeStatus = Field(description="`needs_response`, `under_review`, `won` or `lost`")
    fee_amount: int = Field(description="The network's dispute fee; kept by the network even when won")
    amount_withdrawn: int = Field(description="Taken from the balance: the disputed amount plus the fee")
    amount_reinstated: int = Field(description="Given back when the dispute was won: the disputed amount")
    amount_reversed: int = Field(description="Of the withdrawal, what reversals took back from transfers")
    withdrawal_operation: str | None = Field(
        description="The `op_` operation that withdraws the money (GET /v1/operations/{id})"
    )
    withdrawal_status: WithdrawalStatus = Field(
        description="`succeeded` once the money is withdrawn; until then the operation's status "
        "(`dead_letter`: stopped until an operator retries it; the dispute is still decided meanwhile)"
    )
    evidence: dict[str, str] = Field(description="The evidence saved so far, by field")
    evidence_details: EvidenceDetails = Field(description="The deadline and the submission's state")
    metadata: dict[str, str]


class FileOut(ResourceOut):
    object: Literal["file"] = "file"
    purpose: Literal["dispute_evidence"] = Field(
        default="dispute_evidence", description="What the file is for"
    )
    dispute: str = Field(description="The `dp_` dispute it was uploaded to")
    type: Literal["pdf", "jpeg", "png"] = Field(description="Recognised from the content, not the name")
    size: int = Field(description="Its size in bytes")
    sha256: str = Field(description="The SHA-256 of its content, in hex")
    filename: str | None = Field(description="The name it was uploaded with, if any; not trusted")


def render_dispute(dispute: Dispute, *, past_due: bool, withdrawal_status: str) -> DisputeOut:
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
        withdrawal_operation=dispute.withdrawal_operation_id,
        withdrawal_status=withdrawal_status,
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
