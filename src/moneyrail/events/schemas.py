from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, Strict, StringConstraints

from moneyrail.kit.schemas import RequestBody, ResourceOut

from .types import EnabledEvent

Url = Annotated[str, StringConstraints(min_length=1, max_length=2048)]
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
    type: str
    api_version: str
    data: dict[str, Any]


class WebhookEndpointCreate(RequestBody):
    url: Url
    enabled_events: EnabledEvents
    description: Description | None = None


class WebhookEndpointUpdate(RequestBody):
    url: Url | None = None
    enabled_events: EnabledEvents | None = None
    description: Description | None = None
    disabled: bool | None = Field(
        default=None, description="true stops deliveries (pending ones fail); false resumes them"
    )


class SecretRotation(RequestBody):
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
    url: str
    description: str | None
    enabled_events: list[str]
    status: Literal["enabled", "disabled"]
    previous_secret_expires_at: int | None = Field(
        description="While set and in the future, deliveries carry a signature by the previous secret too"
    )
    secret: str | None = Field(
        default=None, description="Only in the answer to the creation and to a secret rotation"
    )


class DeliveryAttemptOut(BaseModel):
    number: int
    attempted_at: int
    outcome: Literal["succeeded", "failed"]
    response_status: int | None = Field(description="The receiver's HTTP status; null if none came")
    latency_ms: float | None
    error: str | None


class WebhookDeliveryOut(BaseModel):
    id: str = Field(description="The delivery's id, which is its operation's (op_…)")
    object: Literal["webhook_delivery"] = "webhook_delivery"
    livemode: bool
    created: int
    webhook_endpoint: str
    event: str
    event_type: str
    status: str = Field(description="pending, running, succeeded, failed, dead_letter or canceled")
    next_attempt_at: int | None = Field(description="While pending: when the next attempt is due")
    resend_of: str | None
    attempts: list[DeliveryAttemptOut]


class DeletedOut(BaseModel):
    id: str
    object: str
    deleted: Literal[True] = True
