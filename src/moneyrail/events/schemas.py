from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, Strict, StringConstraints

from moneyrail.kit.schemas import ParseableUrl, RequestBody, ResourceOut

from .types import EnabledEvent

Url = Annotated[str, StringConstraints(min_length=1, max_length=2048), ParseableUrl]
# strict=False: JSON strings are the enum's values (the body model is strict otherwise)
EnabledEvents = Annotated[
    list[Annotated[EnabledEvent, Strict(False)]],
    Field(
        min_length=1,
        max_length=100,
        description="Event types to deliver (see the README's table), or `*` for every one",
    ),
]
Description = Annotated[str, StringConstraints(max_length=500)]

MAX_OVERLAP_SECONDS = 7 * 24 * 3600


class EventOut(ResourceOut):
    object: Literal["event"] = "event"
    type: str = Field(description="What happened, such as `payment_intent.succeeded`")
    api_version: str = Field(description="The API version the object is rendered in")
    data: dict[str, Any] = Field(description='`{"object": {...}}`: the object as it was after the change')


class WebhookEndpointCreate(RequestBody):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"url": "https://shop.example/webhooks", "enabled_events": ["payment_intent.succeeded"]}
            ]
        }
    )

    url: Url = Field(description="Where events are posted; `https` to a public address in live mode")
    enabled_events: EnabledEvents
    description: Description | None = Field(default=None, description="A note for yourself")


class WebhookEndpointUpdate(RequestBody):
    model_config = ConfigDict(json_schema_extra={"examples": [{"disabled": True}]})

    url: Url | None = Field(default=None, description="Where events are posted")
    enabled_events: EnabledEvents | None = Field(
        default=None, description="Event types to deliver, or `*` for every one; replaces the list"
    )
    description: Description | None = Field(default=None, description="A note for yourself")
    disabled: bool | None = Field(
        default=None, description="true stops deliveries (pending ones fail); false resumes them"
    )


class SecretRotation(RequestBody):
    model_config = ConfigDict(json_schema_extra={"examples": [{"expire_previous_in_seconds": 3600}]})

    expire_previous_in_seconds: Annotated[
        int,
        Field(
            ge=0,
            le=MAX_OVERLAP_SECONDS,
            description="How long the previous secret keeps signing beside the new one (0: at once; "
            "default 24 hours; at most 7 days)",
        ),
    ] = 24 * 3600


class WebhookEndpointOut(ResourceOut):
    object: Literal["webhook_endpoint"] = "webhook_endpoint"
    url: str = Field(description="Where events are posted")
    description: str | None = Field(description="A note for yourself")
    enabled_events: list[str] = Field(description="Event types sent, or `*` for all")
    status: Literal["enabled", "disabled"] = Field(
        description="`enabled`, or `disabled` while deliveries are paused"
    )
    previous_secret_expires_at: int | None = Field(
        description="While set and in the future, deliveries carry a signature by the previous secret too"
    )
    secret: str | None = Field(
        default=None, description="Only in the answer to the creation and to a secret rotation"
    )


class DeliveryAttemptOut(BaseModel):
    number: int = Field(description="The attempt's number, from 1")
    attempted_at: int = Field(description="When it was made, in Unix seconds")
    outcome: Literal["succeeded", "failed"] = Field(description="`succeeded` (a 2xx answer) or `failed`")
    response_status: int | None = Field(description="The receiver's HTTP status; null if none came")
    latency_ms: float | None = Field(
        description="How long the receiver took to answer, in milliseconds; null if it did not"
    )
    error: str | None = Field(description="Why the attempt failed; null when it succeeded")


class WebhookDeliveryOut(BaseModel):
    id: str = Field(description="The delivery's id, which is its operation's (op_…)")
    object: Literal["webhook_delivery"] = "webhook_delivery"
    livemode: bool
    created: int
    webhook_endpoint: str = Field(description="The `we_` endpoint delivered to")
    event: str = Field(description="The `evt_` event delivered")
    event_type: str = Field(description="The event's type")
    status: str = Field(description="pending, running, succeeded, failed, dead_letter or canceled")
    operation: str = Field(description="The `op_` operation that delivers it: the delivery's own id")
    next_attempt_at: int | None = Field(description="While pending: when the next attempt is due")
    resend_of: str | None = Field(description="The delivery this one resends; null for a first delivery")
    attempts: list[DeliveryAttemptOut] = Field(description="Every attempt, oldest first")


class DeletedOut(BaseModel):
    id: str = Field(description="The deleted object's id")
    object: str
    deleted: Literal[True] = Field(default=True, description="Always `true`")
