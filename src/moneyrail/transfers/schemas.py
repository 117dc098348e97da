from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

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
from moneyrail.models import Allocation, AllocationGroup, Transfer, TransferReversal

ObjectId = Annotated[str, StringConstraints(min_length=1, max_length=255)]
Role = Literal["merchant", "developer", "courier", "driver", "other"]
GroupStatus = Literal["open", "committing", "committed", "failed", "canceled"]
TransferStatus = Literal["pending", "paid", "failed", "reversed", "canceled"]


class AllocationGroupCreate(RequestBody):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"payment_intent": "pi_0000000000000000000000000", "amount": 4000}]}
    )

    payment_intent: ObjectId = Field(description="A captured `pi_` payment of this installation")
    amount: Amount = Field(description="Reserved; at most what is captured and not refunded or reserved")
    metadata: Metadata = Field(default_factory=dict)


class AllocationCreate(RequestBody):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"recipient": "acct_0000000000000000000000000", "amount": 1500, "role": "courier"}]
        }
    )

    recipient: ObjectId = Field(description="A connected account (`acct_`) of this installation")
    amount: Amount = Field(description="The recipient's share, in minor units")
    role: Role | None = Field(default=None, description="The recipient's role, such as `courier`")
    metadata: Metadata = Field(default_factory=dict)


class AllocationGroupCommit(RequestBody):
    """Commit takes no parameters, and still refuses unknown ones."""

    model_config = ConfigDict(json_schema_extra={"examples": [{}]})


class TransferCreate(RequestBody):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "destination": "acct_0000000000000000000000000",
                    "amount": 1500,
                    "source_transaction": "pi_0000000000000000000000000",
                }
            ]
        }
    )

    destination: ObjectId = Field(description="A connected account (`acct_`) of this installation")
    amount: Amount = Field(description="What moves, in minor units")
    source_transaction: ObjectId = Field(description="The captured `pi_` payment the money comes from")
    currency: Currency | None = Field(default=None, description="Must be the payment's; defaults to it")
    metadata: Metadata = Field(default_factory=dict)


class ReversalCreate(RequestBody):
    model_config = ConfigDict(json_schema_extra={"examples": [{"amount": 500}]})

    amount: Amount | None = Field(default=None, description="Defaults to everything not yet reversed")
    metadata: Metadata = Field(default_factory=dict)


class ReversalOut(ResourceOut):
    object: Literal["transfer_reversal"] = "transfer_reversal"
    transfer: str = Field(description="The `tr_` id reversed")
    amount: int = Field(description="What came back, in minor units")
    currency: str
    refund: str | None = Field(description="The refund that reversed it, when a refund did")
    metadata: dict[str, str]


class TransferOut(ResourceOut):
    object: Literal["transfer"] = "transfer"
    amount: int = Field(description="What moved, in minor units")
    currency: str
    destination: str = Field(description="The `acct_` id that received it")
    source_transaction: str = Field(description="The `pi_` payment the money came from")
    allocation_group: str = Field(description="The allocation group it carries out")
    allocation: str = Field(description="The allocation it carries out")
    status: TransferStatus = Field(
        description="`pending` (its operation runs, retries or waits in `dead_letter` for an operator), "
        "`paid`, `failed` (final: the operation ended for good, refused or discarded), `reversed` or "
        "`canceled` (never sent: a refund of its subscription payment stopped it)"
    )
    amount_reversed: int = Field(description="What was reversed so far, in minor units")
    reversals: list[ReversalOut] = Field(description="Its reversals, newest first")
    failure_code: str | None = Field(
        description="Why it failed, when `failed`: a refusal's code, or `operation_discarded`"
    )
    failure_message: str | None = Field(description="A human-readable explanation of the failure")
    operation: str | None = Field(
        description="The `op_` operation that makes it (its allocation group's commit): "
        "GET /v1/operations/{id}"
    )
    last_operation_error: OperationErrorOut | None = Field(description=LAST_OPERATION_ERROR)
    metadata: dict[str, str]


class AllocationOut(BaseModel):
    id: str
    object: Literal["allocation"] = "allocation"
    recipient: str = Field(description="The `acct_` or `mer_` id receiving the share")
    role: str | None = Field(description="The recipient's role")
    gross_amount: int = Field(description="As declared")
    commission: int = Field(description="The share of the commission taken from it (merchant allocations)")
    amount: int = Field(description="What is transferred: gross_amount minus commission")
    transfer: str | None = Field(description="The `tr_` id that moved it, once committed")
    metadata: dict[str, str]


class AllocationGroupOut(ResourceOut):
    object: Literal["allocation_group"] = "allocation_group"
    payment_intent: str = Field(description="The `pi_` payment distributed")
    amount: int = Field(description="Reserved from the payment, in minor units")
    amount_allocated: int = Field(description="Allocated so far, in minor units")
    currency: str
    status: GroupStatus = Field(
        description="`open`, `committing` (its commit runs, retries or waits in `dead_letter` for an "
        "operator), `committed`, `failed` (final: the commit ended for good, refused or discarded) or "
        "`canceled` (a refund of a subscription payment stopped it before it was sent)"
    )
    source: Literal["api", "distribution", "transfer"] = Field(
        description="What created it: the API, a payment's distribution or a direct transfer"
    )
    operation: str | None = Field(description="The `op_` id committing it, once committed")
    failure_reason: str | None = Field(description="Why the commit failed, when `failed`")
    last_operation_error: OperationErrorOut | None = Field(description=LAST_OPERATION_ERROR)
    allocations: list[AllocationOut] = Field(description="Its allocations")
    transfers: list[TransferOut] = Field(description="The transfers made by its commit")
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
        operation=transfer.operation_id,
        last_operation_error=(
            operation_error_out(transfer.last_operation_error)
            if transfer.status in ("pending", "failed")
            else None
        ),
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
        last_operation_error=(
            operation_error_out(group.last_operation_error)
            if group.status in ("committing", "failed")
            else None
        ),
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
