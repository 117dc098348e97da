from __future__ import annotations

from typing import Literal

from pydantic import Field

from moneyrail.kit.schemas import ResourceOut


class DeliveryOut(ResourceOut):
    """One channel's receipt of a succeeded payment."""

    object: Literal["delivery"] = "delivery"
    channel: Literal["email", "sms"] = Field(description="How the receipt is sent")
    recipient: str = Field(description="Masked: `j***@example.com`, `+*******1234`")
    status: Literal["pending", "sent", "failed"] = Field(description="Where the sending stands")
    last_error: str | None = Field(description="Why the receipt could not be sent, when `failed`")
    sent_at: int | None = Field(description="Unix seconds, when `sent`")
