from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, StringConstraints

from moneyrail.kit.schemas import RequestBody, ResourceOut

EventType = Annotated[
    str, StringConstraints(min_length=1, max_length=100, pattern=r"^(\*|[a-z_]+(\.[a-z_]+)+)$")
]


class EventOut(ResourceOut):
    object: Literal["event"] = "event"
    type: str
    api_version: str
    data: dict[str, Any]


class WebhookEndpointCreate(RequestBody):
    url: Annotated[str, StringConstraints(min_length=1, max_length=2048)]
    enabled_events: Annotated[list[EventType], Field(min_length=1, max_length=100)]
    description: Annotated[str, StringConstraints(max_length=500)] | None = None


class WebhookEndpointOut(ResourceOut):
    object: Literal["webhook_endpoint"] = "webhook_endpoint"
    url: str
    description: str | None
    enabled_events: list[str]
    secret: str | None = Field(default=None, description="Only in the answer to the creation")


class DeletedOut(BaseModel):
    id: str
    object: str
    deleted: Literal[True] = True
