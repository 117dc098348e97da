from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, StringConstraints

from moneyrail.kit.emails import Email
from moneyrail.kit.schemas import Metadata, RequestBody, ResourceOut

Reference = Annotated[str, StringConstraints(min_length=1, max_length=255)]
Name = Annotated[str, StringConstraints(max_length=255)]


class CustomerCreate(RequestBody):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"external_reference": "user-42", "email": "ada@example.com", "name": "Ada", "metadata": {}}
            ]
        }
    )

    external_reference: Reference | None = Field(
        default=None, description="Your own reference; a second create with it returns the same customer"
    )
    email: Email | None = Field(default=None, description="Where receipts go")
    name: Name | None = Field(default=None, description="The customer's name")
    metadata: Metadata = Field(default_factory=dict)


class CustomerOut(ResourceOut):
    object: Literal["customer"] = "customer"
    external_reference: str | None = Field(description="Your own reference")
    email: str | None = Field(description="Where receipts go")
    name: str | None = Field(description="The customer's name")
    metadata: dict[str, str]
