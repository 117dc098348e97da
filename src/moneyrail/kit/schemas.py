"""Pydantic pieces every domain's schemas share: strict request bodies, metadata, timestamps."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

# Stripe's limits, which callers already design around.
MetadataKey = Annotated[str, StringConstraints(min_length=1, max_length=40)]
MetadataValue = Annotated[str, StringConstraints(max_length=500)]
Metadata = Annotated[dict[MetadataKey, MetadataValue], Field(max_length=50)]


class RequestBody(BaseModel):
    """Unknown fields are refused, never dropped (CONVENTIONS.md §3)."""

    model_config = ConfigDict(extra="forbid", strict=True)


class ResourceOut(BaseModel):
    id: str
    object: str
    livemode: bool
    created: int
