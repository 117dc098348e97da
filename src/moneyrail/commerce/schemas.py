from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, StringConstraints

from moneyrail.kit.clock import to_unix
from moneyrail.kit.schemas import Amount, Currency, Metadata, RequestBody, ResourceOut
from moneyrail.models import Order

LineDescription = Annotated[str, StringConstraints(min_length=1, max_length=500)]
Reference = Annotated[str, StringConstraints(min_length=1, max_length=255)]
ObjectId = Annotated[str, StringConstraints(min_length=1, max_length=255)]
Version = Annotated[int, Field(ge=1, description="The order's `version` as you last read it")]


class OrderLineIn(RequestBody):
    description: LineDescription
    quantity: int = Field(default=1, ge=1, le=10000)
    unit_amount: Amount


class OrderCreate(RequestBody):
    currency: Currency
    lines: list[OrderLineIn] = Field(min_length=1, max_length=100)
    amount_total: Amount = Field(description="The order's total; must equal the sum of its lines")
    external_reference: Reference | None = None
    metadata: Metadata = Field(default_factory=dict)


class OrderBind(RequestBody):
    expected_version: Version
    payment_intent_id: ObjectId = Field(
        description="A `pi_` created with capture_method manual, for the order's amount and currency"
    )


class OrderTransition(RequestBody):
    expected_version: Version


class OrderLineOut(BaseModel):
    description: str
    quantity: int
    unit_amount: int
    amount: int


class OrderOut(ResourceOut):
    object: Literal["order"] = "order"
    status: Literal["pending", "preparing", "canceled"]
    version: int
    currency: str
    amount_total: int
    lines: list[OrderLineOut]
    payment_intent: str | None
    external_reference: str | None
    preparation_started_at: int | None
    canceled_at: int | None
    metadata: dict[str, str]


class ApiBaseOut(BaseModel):
    object: Literal["api"] = "api"
    api: str
    version: str
    livemode: bool


def render_order(order: Order) -> OrderOut:
    lines: list[dict[str, Any]] = order.lines
    return OrderOut(
        id=order.id,
        livemode=order.livemode,
        created=to_unix(order.created_at),
        status=order.status,
        version=order.version,
        currency=order.currency,
        amount_total=order.amount_total,
        lines=[OrderLineOut(**line) for line in lines],
        payment_intent=order.payment_intent_id,
        external_reference=order.external_reference,
        preparation_started_at=to_unix(order.preparation_started_at)
        if order.preparation_started_at
        else None,
        canceled_at=to_unix(order.canceled_at) if order.canceled_at else None,
        metadata=order.metadata_,
    )
