from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from moneyrail.engine.schemas import OperationOut
from moneyrail.kit.clock import to_unix
from moneyrail.kit.schemas import Amount, RequestBody, ResourceOut
from moneyrail.models import ReconciliationRun

IssueType = Literal["missing_at_processor", "missing_in_ledger", "amount_mismatch", "status_mismatch"]


class ReconciliationRunCreate(RequestBody):
    """A run takes no parameters (it compares every transfer of the environment), and still refuses
    unknown ones."""


class IssueOut(BaseModel):
    type: IssueType
    transfer: str | None = Field(description="The `tr_` transfer; null when the ledger has none")
    processor_transfer: str | None
    expected: Any = Field(description="What the ledger says (null when it has nothing)")
    actual: Any = Field(description="What the processor says (null when it has nothing)")


class ReconciliationRunOut(ResourceOut):
    object: Literal["reconciliation_run"] = "reconciliation_run"
    status: Literal["pending", "completed", "failed"]
    transfers_checked: int
    issues: list[IssueOut]
    operation: OperationOut | None
    completed_at: int | None


class ProcessorTransferChange(RequestBody):
    """A sandbox helper: make the processor's record of a transfer disagree with the ledger."""

    amount: Amount | None = None
    status: Literal["paid", "reversed", "failed"] | None = None


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
