from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from moneyrail.kit.schemas import ParseableUrl, RequestBody, ResourceOut

EventType = Annotated[
    str, StringConstraints(min_length=1, max_length=100, pattern=r"^(\*|[a-z_]+(\.[a-z_]+)+)$")
]


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

    url: Annotated[str, StringConstraints(min_length=1, max_length=2048), ParseableUrl] = Field(
        description="Where events are posted; `https` to a public address in live mode"
    )
    enabled_events: Annotated[list[EventType], Field(min_length=1, max_length=100)] = Field(
        description="Event types to send, or `*` for all"
    )
    description: Annotated[str, StringConstraints(max_length=500)] | None = Field(
        default=None, description="A note for yourself"
    )


class WebhookEndpointOut(ResourceOut):
    object: Literal["webhook_endpoint"] = "webhook_endpoint"
    url: str = Field(description="Where events are posted")
    description: str | None = Field(description="A note for yourself")
    enabled_events: list[str] = Field(description="Event types sent, or `*` for all")
    secret: str | None = Field(default=None, description="Only in the answer to the creation")


class DeletedOut(BaseModel):
    id: str = Field(description="The deleted object's id")
    object: str
    deleted: Literal[True] = Field(default=True, description="Always `true`")
