from __future__ import annotations

from typing import Literal, cast

from moneyrail.kit.clock import to_unix
from moneyrail.kit.schemas import ResourceOut
from moneyrail.models import Operation

Status = Literal["pending", "running", "succeeded", "failed", "dead_letter", "canceled"]


class OperationOut(ResourceOut):
    object: Literal["operation"] = "operation"
    type: str
    status: Status
    attempts: int
    last_error: str | None
    resource: str | None
    updated: int


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
