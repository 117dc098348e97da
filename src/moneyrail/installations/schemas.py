from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from moneyrail.kit.schemas import ResourceOut


class AccountSettingsOut(BaseModel):
    checkout_enabled: bool
    recurring_enabled: bool
    commission_basis_points: int
    commission_fixed_amount: int


class AccountOut(ResourceOut):
    """The installation as its own key sees it in this environment."""

    object: Literal["account"] = "account"
    name: str
    kind: Literal["direct", "platform"]
    publishable_key: str | None
    settings: AccountSettingsOut
