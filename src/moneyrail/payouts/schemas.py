from __future__ import annotations

from typing import Literal

from pydantic import Field

from moneyrail.kit.clock import to_unix
from moneyrail.kit.schemas import Amount, Currency, Metadata, RequestBody, ResourceOut
from moneyrail.models import Payout

Method = Literal["standard", "instant"]
Status = Literal["pending", "in_transit", "paid", "failed", "canceled"]


class PayoutCreate(RequestBody):
    amount: Amount
    currency: Currency
    method: Method = Field(
        default="standard",
        description="`standard` arrives on the next business days; `instant` within minutes, for a fee",
    )
    metadata: Metadata = Field(default_factory=dict)


class PayoutOut(ResourceOut):
    object: Literal["payout"] = "payout"
    connected_account: str
    amount: int
    fee_amount: int = Field(description="Taken from the balance on top of `amount` (instant payouts)")
    currency: str
    method: Method
    status: Status
    arrival_date: int | None = Field(description="Unix seconds on the environment's clock, once in transit")
    failure_code: str | None
    failure_message: str | None
    operation: str | None
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
        metadata=payout.metadata_,
    )
