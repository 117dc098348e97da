from __future__ import annotations

from typing import Literal

from pydantic import Field

from moneyrail.kit.schemas import ResourceOut


class DeliveryOut(ResourceOut):
    """One channel's receipt of a succeeded payment."""

    object: Literal["delivery"] = "delivery"
    channel: Literal["email", "sms"] = Field(description="How the receipt is sent")
    recipient: str = Field(description="Masked: `j***@example.com`, `+*******1234`")
    status: Literal["pending", "sent", "failed"] = Field(
        description="`pending` (its operation runs, retries or waits in `dead_letter` for an operator), "
        "`sent`, or `failed` (final: refused, or its operation discarded by an operator)"
    )
    last_error: str | None = Field(
        description="Why the last attempt failed: while `pending` (retried) and once `failed`"
    )
    operation: str | None = Field(description="The `op_` operation that sends it (GET /v1/operations/{id})")
    sent_at: int | None = Field(description="Unix seconds, when `sent`")
