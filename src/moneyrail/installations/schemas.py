from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from moneyrail.kit.schemas import ResourceOut


class AccountSettingsOut(BaseModel):
    checkout_enabled: bool = Field(description="Hosted checkout is active in this environment")
    recurring_enabled: bool = Field(description="Subscriptions are active in this environment")
    commission_basis_points: int = Field(description="The service's commission rate, in basis points")
    commission_fixed_amount: int = Field(description="The commission's fixed part, in minor units")


class AccountOut(ResourceOut):
    """The installation as its own key sees it in this environment."""

    object: Literal["account"] = "account"
    name: str = Field(description="The installation's name")
    kind: Literal["direct", "platform"] = Field(
        description="`direct` sells for itself; `platform` distributes payments to merchants"
    )
    publishable_key: str | None = Field(description="The key for client-side calls in this environment")
    settings: AccountSettingsOut = Field(description="What the operator set for this environment")
