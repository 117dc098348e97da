from __future__ import annotations

from typing import Annotated, Literal

from pydantic import EmailStr, Field, StringConstraints

from moneyrail.kit.schemas import Metadata, RequestBody, ResourceOut

Reference = Annotated[str, StringConstraints(min_length=1, max_length=255)]
Name = Annotated[str, StringConstraints(max_length=255)]


class CustomerCreate(RequestBody):
    external_reference: Reference | None = Field(
        default=None, description="Your own reference; a second create with it returns the same customer"
    )
    email: EmailStr | None = None
    name: Name | None = None
    metadata: Metadata = Field(default_factory=dict)


class CustomerOut(ResourceOut):
    object: Literal["customer"] = "customer"
    external_reference: str | None
    email: str | None
    name: str | None
    metadata: dict[str, str]
