from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from moneyrail.kit.clock import to_unix
from moneyrail.kit.schemas import (
    LAST_OPERATION_ERROR,
    Amount,
    Currency,
    Metadata,
    OperationErrorOut,
    RequestBody,
    ResourceOut,
    operation_error_out,
)
from moneyrail.models import Payout

Method = Literal["standard", "instant"]
Status = Literal["pending", "in_transit", "paid", "failed", "canceled"]


class PayoutCreate(RequestBody):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"amount": 2500, "currency": "eur", "method": "standard", "metadata": {}}]
        }
    )

    amount: Amount = Field(description="How much to pay out, in minor units, from the available balance")
    currency: Currency = Field(description="The balance's currency: a lowercase ISO 4217 code")
    method: Method = Field(
        default="standard",
        description="`standard` arrives on the next business days; `instant` within minutes, for a fee",
    )
    metadata: Metadata = Field(default_factory=dict)


class PayoutReverse(RequestBody):
    model_config = ConfigDict(json_schema_extra={"examples": [{"metadata": {"reason": "wrong account"}}]})

    metadata: Metadata = Field(default_factory=dict)


class PayoutOut(ResourceOut):
    object: Literal["payout"] = "payout"
    connected_account: str | None = Field(
        description="The `acct_` connected account paid out; null for the installation's own balance"
    )
    amount: int = Field(description="Paid to the bank account, in minor units")
    fee_amount: int = Field(description="Taken from the balance on top of `amount` (instant payouts)")
    currency: str
    method: Method = Field(description="`standard` or `instant`")
    status: Status = Field(
        description="`pending` (its operation runs, retries or waits in `dead_letter` for an operator), "
        "`in_transit`, `paid`, `failed` (final: refused for good, or its operation discarded by an "
        "operator; the money is back in the balance) or `canceled`"
    )
    arrival_date: int | None = Field(description="Unix seconds on the environment's clock, once in transit")
    failure_code: str | None = Field(
        description="Why the payout failed (such as `account_closed`, or `operation_discarded`); null "
        "otherwise"
    )
    failure_message: str | None = Field(description="A human-readable failure reason; null otherwise")
    operation: str | None = Field(description="The `op_` payout operation that hands it to the bank")
    last_operation_error: OperationErrorOut | None = Field(description=LAST_OPERATION_ERROR)
    original_payout: str | None = Field(
        description="On a reversal: the paid payout whose money it brings back to the balance; else null"
    )
    reversed_by: str | None = Field(description="This payout's reversal (`po_`), once reversed; else null")
    metadata: dict[str, str]


def render_payout(payout: Payout) -> PayoutOut:
    return PayoutOut(
        id=payout.id,
        livemode=payout.livemode,
        created=to_unix(payout.created_at),
        connected_account=payout.connected_account_id,
        amount=payout.amount,
        fee_amount=payout.fee_amount,
        currency=payout.currency,
        method=payout.method,
        status=payout.status,
        arrival_date=to_unix(payout.arrival_date) if payout.arrival_date else None,
        failure_code=payout.failure_code,
        failure_message=payout.failure_message,
        operation=payout.operation_id,
        last_operation_error=(
            operation_error_out(payout.last_operation_error)
            if payout.status in ("pending", "failed")
            else None
        ),
        original_payout=payout.original_payout_id,
        reversed_by=payout.reversed_by_id,
        metadata=payout.metadata_,
    )
