from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from moneyrail.engine.schemas import OperationOut
from moneyrail.kit.clock import to_unix
from moneyrail.kit.schemas import Amount, RequestBody, ResourceOut
from moneyrail.models import ReconciliationRun

IssueType = Literal["missing_at_processor", "missing_in_ledger", "amount_mismatch", "status_mismatch"]


class ReconciliationRunCreate(RequestBody):
    """A run takes no parameters (it compares every transfer of the environment), and still refuses
    unknown ones."""

    model_config = ConfigDict(json_schema_extra={"examples": [{}]})


class IssueOut(BaseModel):
    type: IssueType = Field(
        description="`missing_at_processor`, `missing_in_ledger`, `amount_mismatch` or `status_mismatch`"
    )
    transfer: str | None = Field(description="The `tr_` transfer; null when the ledger has none")
    processor_transfer: str | None = Field(
        description="The sandbox simulator's id for the transfer; null when the processor has none, and on "
        "a real processor (Stripe), whose ids are never shown"
    )
    expected: Any = Field(description="What the ledger says (null when it has nothing)")
    actual: Any = Field(description="What the processor says (null when it has nothing)")


class ReconciliationRunOut(ResourceOut):
    object: Literal["reconciliation_run"] = "reconciliation_run"
    status: Literal["pending", "completed", "failed"] = Field(
        description="`pending` until its operation has compared the books, then `completed` (or `failed`)"
    )
    transfers_checked: int = Field(description="How many transfers were compared")
    issues: list[IssueOut] = Field(
        description="Every disagreement found between the ledger and the processor"
    )
    operation: OperationOut | None = Field(
        description="The `reconciliation` operation doing the comparison (on creation and retrieval)"
    )
    completed_at: int | None = Field(description="When the run completed, in Unix seconds")


class ProcessorTransferChange(RequestBody):
    """A sandbox helper: make the processor's record of a transfer disagree with the ledger."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"amount": 900, "status": "paid"}]})

    amount: Amount | None = Field(
        default=None, description="The amount the processor's record will say, in minor units"
    )
    status: Literal["paid", "reversed", "failed"] | None = Field(
        default=None, description="The status the processor's record will say"
    )


def render_run(run: ReconciliationRun, operation: OperationOut | None) -> ReconciliationRunOut:
    return ReconciliationRunOut(
        id=run.id,
        livemode=run.livemode,
        created=to_unix(run.created_at),
        status=run.status,
        transfers_checked=run.transfers_checked,
        issues=[IssueOut.model_validate(issue) for issue in run.issues],
        operation=operation,
        completed_at=to_unix(run.completed_at) if run.completed_at else None,
    )
