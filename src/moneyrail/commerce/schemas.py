from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from moneyrail.kit.clock import to_unix
from moneyrail.kit.schemas import Amount, Currency, Metadata, RequestBody, ResourceOut
from moneyrail.models import Order

LineDescription = Annotated[str, StringConstraints(min_length=1, max_length=500)]
Reference = Annotated[str, StringConstraints(min_length=1, max_length=255)]
ObjectId = Annotated[str, StringConstraints(min_length=1, max_length=255)]
Version = Annotated[int, Field(ge=1, description="The order's `version` as you last read it")]


class OrderLineIn(RequestBody):
    description: LineDescription = Field(description="What the line is: 1 to 500 characters")
    quantity: int = Field(description="How many: 1 to 10000", default=1, ge=1, le=10000)
    unit_amount: Amount = Field(description="The price of one, in minor units")


class OrderCreate(RequestBody):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "currency": "eur",
                    "lines": [{"description": "Margherita", "quantity": 2, "unit_amount": 900}],
                    "amount_total": 1800,
                    "external_reference": "table-7",
                    "metadata": {},
                }
            ]
        }
    )

    currency: Currency = Field(description="The order's currency: a lowercase ISO 4217 code")
    lines: list[OrderLineIn] = Field(description="The order's lines: 1 to 100", min_length=1, max_length=100)
    amount_total: Amount = Field(description="The order's total; must equal the sum of its lines")
    external_reference: Reference | None = Field(default=None, description="Your own reference for the order")
    metadata: Metadata = Field(default_factory=dict)


class OrderBind(RequestBody):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"expected_version": 1, "payment_intent_id": "pi_000000000000000000000000"}]
        }
    )

    expected_version: Version = Field(description="The order's `version` as you last read it")
    payment_intent_id: ObjectId = Field(
        description="A `pi_` created with capture_method manual, for the order's amount and currency"
    )


class OrderTransition(RequestBody):
    model_config = ConfigDict(json_schema_extra={"examples": [{"expected_version": 2}]})

    expected_version: Version = Field(description="The order's `version` as you last read it")


class OrderLineOut(BaseModel):
    description: str = Field(description="What the line is")
    quantity: int = Field(description="How many")
    unit_amount: int = Field(description="The price of one, in minor units")
    amount: int = Field(description="`quantity` times `unit_amount`, in minor units")


class OrderOut(ResourceOut):
    object: Literal["order"] = "order"
    status: Literal["pending", "preparing", "canceled"] = Field(
        description="`pending`, `preparing` or `canceled`"
    )
    version: int = Field(description="Increases with every change; send it back as `expected_version`")
    currency: str
    amount_total: int = Field(description="The order's total, in minor units")
    lines: list[OrderLineOut] = Field(description="The order's lines")
    payment_intent: str | None = Field(description="The bound `pi_` payment; null until bound")
    external_reference: str | None = Field(description="Your own reference")
    preparation_started_at: int | None = Field(
        description="When preparation started (and the payment was captured), in Unix seconds"
    )
    canceled_at: int | None = Field(description="When the order was canceled, in Unix seconds")
    metadata: dict[str, str]


class ApiBaseOut(BaseModel):
    object: Literal["api"] = "api"
    api: str = Field(description="The API's name")
    version: str = Field(description="The version serving this request")
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
