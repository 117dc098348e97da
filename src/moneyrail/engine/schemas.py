from __future__ import annotations

from typing import Literal, cast

from pydantic import Field

from moneyrail.kit.clock import to_unix
from moneyrail.kit.schemas import ResourceOut
from moneyrail.models import Operation

Status = Literal["pending", "running", "succeeded", "failed", "dead_letter", "canceled"]


class OperationOut(ResourceOut):
    object: Literal["operation"] = "operation"
    type: str = Field(description="What the operation does, such as `refund` or `transfer`")
    status: Status = Field(
        description="`pending`, `running`, `succeeded`, `failed` (a business refusal), `dead_letter` "
        "(retries exhausted) or `canceled`"
    )
    attempts: int = Field(description="Attempts made so far")
    last_error: str | None = Field(description="Why the last attempt failed, if it did")
    resource: str | None = Field(description="The id of the object the operation acts on")
    updated: int = Field(description="When the operation last changed, in Unix seconds")


def render_operation(operation: Operation) -> OperationOut:
    return OperationOut(
        id=operation.id,
        livemode=operation.livemode,
        created=to_unix(operation.created_at),
        updated=to_unix(operation.updated_at),
        type=operation.type,
        status=cast(Status, operation.status),
        attempts=operation.attempts,
        last_error=operation.last_error,
        resource=operation.resource,
    )
