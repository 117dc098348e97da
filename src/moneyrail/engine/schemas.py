from __future__ import annotations

from typing import Literal

from moneyrail.kit.schemas import ResourceOut


class OperationOut(ResourceOut):
    object: Literal["operation"] = "operation"
    type: str
    status: Literal["pending", "running", "succeeded", "failed", "dead_letter", "canceled"]
    attempts: int
    last_error: str | None
    resource: str | None
    updated: int
