from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field, StringConstraints

from moneyrail.kit.clock import to_unix
from moneyrail.kit.schemas import Amount, Currency, Metadata, RequestBody, ResourceOut
from moneyrail.models import Allocation, AllocationGroup, Transfer, TransferReversal

ObjectId = Annotated[str, StringConstraints(min_length=1, max_length=255)]
Role = Literal["merchant", "developer", "courier", "driver", "other"]
GroupStatus = Literal["open", "committing", "committed", "failed"]
TransferStatus = Literal["pending", "paid", "failed", "reversed"]


class AllocationGroupCreate(RequestBody):
    payment_intent: ObjectId = Field(description="A captured `pi_` payment of this installation")
    amount: Amount = Field(description="Reserved; at most what is captured and not refunded or reserved")
    metadata: Metadata = Field(default_factory=dict)


class AllocationCreate(RequestBody):
    recipient: ObjectId = Field(description="A connected account (`acct_`) of this installation")
    amount: Amount
    role: Role | None = None
    metadata: Metadata = Field(default_factory=dict)


class AllocationGroupCommit(RequestBody):
    """Commit takes no parameters, and still refuses unknown ones."""


class TransferCreate(RequestBody):
    destination: ObjectId = Field(description="A connected account (`acct_`) of this installation")
    amount: Amount
    source_transaction: ObjectId = Field(description="The captured `pi_` payment the money comes from")
    currency: Currency | None = Field(default=None, description="Must be the payment's; defaults to it")
    metadata: Metadata = Field(default_factory=dict)


class ReversalCreate(RequestBody):
    amount: Amount | None = Field(default=None, description="Defaults to everything not yet reversed")
    metadata: Metadata = Field(default_factory=dict)


class ReversalOut(ResourceOut):
    object: Literal["transfer_reversal"] = "transfer_reversal"
    transfer: str
    amount: int
    currency: str
    refund: str | None = Field(description="The refund that reversed it, when a refund did")
    metadata: dict[str, str]


class TransferOut(ResourceOut):
    object: Literal["transfer"] = "transfer"
    amount: int
    currency: str
    destination: str
    source_transaction: str
    allocation_group: str
    allocation: str
    status: TransferStatus
    amount_reversed: int
    reversals: list[ReversalOut]
    failure_code: str | None
    failure_message: str | None
    metadata: dict[str, str]


class AllocationOut(BaseModel):
    id: str
    object: Literal["allocation"] = "allocation"
    recipient: str
    role: str | None
    gross_amount: int = Field(description="As declared")
    commission: int = Field(description="The share of the commission taken from it (merchant allocations)")
    amount: int = Field(description="What is transferred: gross_amount minus commission")
    transfer: str | None
    metadata: dict[str, str]


class AllocationGroupOut(ResourceOut):
    object: Literal["allocation_group"] = "allocation_group"
    payment_intent: str
    amount: int
    amount_allocated: int
    currency: str
    status: GroupStatus
    source: Literal["api", "distribution", "transfer"]
    operation: str | None
    failure_reason: str | None
    allocations: list[AllocationOut]
    transfers: list[TransferOut]
    metadata: dict[str, str]


def render_reversal(reversal: TransferReversal) -> ReversalOut:
    return ReversalOut(
        id=reversal.id,
        livemode=reversal.livemode,
        created=to_unix(reversal.created_at),
        transfer=reversal.transfer_id,
        amount=reversal.amount,
        currency=reversal.currency,
        refund=reversal.refund_id,
        metadata=reversal.metadata_,
    )


def render_transfer(transfer: Transfer, reversals: list[TransferReversal]) -> TransferOut:
    return TransferOut(
        id=transfer.id,
        livemode=transfer.livemode,
        created=to_unix(transfer.created_at),
        amount=transfer.amount,
        currency=transfer.currency,
        destination=transfer.destination,
        source_transaction=transfer.source_payment_intent_id,
        allocation_group=transfer.allocation_group_id,
        allocation=transfer.allocation_id,
        status=transfer.status,
        amount_reversed=transfer.amount_reversed,
        reversals=[render_reversal(reversal) for reversal in reversals],
        failure_code=transfer.failure_code,
        failure_message=transfer.failure_message,
        metadata=transfer.metadata_,
    )


def render_group(
    group: AllocationGroup,
    allocations: list[Allocation],
    transfers: list[Transfer],
    reversals: dict[str, list[TransferReversal]],
) -> AllocationGroupOut:
    transfer_of = {transfer.allocation_id: transfer.id for transfer in transfers}
    return AllocationGroupOut(
        id=group.id,
        livemode=group.livemode,
        created=to_unix(group.created_at),
        payment_intent=group.payment_intent_id,
        amount=group.amount,
        amount_allocated=group.amount_allocated,
        currency=group.currency,
        status=group.status,
        source=group.source,
        operation=group.operation_id,
        failure_reason=group.failure_reason,
        allocations=[
            AllocationOut(
                id=allocation.id,
                recipient=allocation.recipient,
                role=allocation.role,
                gross_amount=allocation.gross_amount,
                commission=allocation.commission,
                amount=allocation.amount,
                transfer=transfer_of.get(allocation.id),
                metadata=allocation.metadata_,
            )
            for allocation in allocations
        ],
        transfers=[render_transfer(transfer, reversals.get(transfer.id, [])) for transfer in transfers],
        metadata=group.metadata_,
    )
