"""Pydantic pieces every domain's schemas share: strict request bodies, metadata, timestamps."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    WithJsonSchema,
)
from pydantic_core import PydanticCustomError

from moneyrail.kit.clock import to_unix
from moneyrail.kit.money import MAX_AMOUNT, is_valid_currency

# Stripe's limits, which callers already design around.
MetadataKey = Annotated[str, StringConstraints(min_length=1, max_length=40)]
MetadataValue = Annotated[str, StringConstraints(max_length=500)]
Metadata = Annotated[
    dict[MetadataKey, MetadataValue],
    Field(
        max_length=50, description="Your own key-value pairs: up to 50 keys of 40, values of 500 characters"
    ),
]


class RequestBody(BaseModel):
    """Unknown fields are refused, never dropped (CONVENTIONS.md §3)."""

    model_config = ConfigDict(extra="forbid", strict=True)


class ResourceOut(BaseModel):
    id: str = Field(description="The object's id: a prefix, `_`, 24 random characters")
    object: str = Field(description="The object's type")
    livemode: bool = Field(description="`true` in live mode, `false` in the sandbox")
    created: int = Field(description="When the object was created, in Unix seconds (UTC)")


class OperationErrorOut(BaseModel):
    """The last error the operation moving an object met (CONVENTIONS.md §9: final means final)."""

    code: str = Field(
        description="What went wrong, such as `processor_unavailable`, `processor_error` or a refusal's code"
    )
    message: str = Field(description="A human-readable explanation")
    at: int = Field(description="When the attempt failed, in Unix seconds")


LAST_OPERATION_ERROR = (
    "The last error its operation met, while the object waits on it (the operation retries, or waits "
    "in `dead_letter` for an operator) and once it failed; null otherwise. The object stays in its "
    "pending state until the operation ends for good"
)


def operation_error_out(stored: dict[str, Any] | None) -> OperationErrorOut | None:
    """A stored engine AttemptError ({code, message, at}) as an answer shows it."""
    if not stored:
        return None
    return OperationErrorOut(
        code=str(stored["code"]),
        message=str(stored["message"]),
        at=to_unix(datetime.fromisoformat(str(stored["at"]))),
    )


def _amount(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_AMOUNT:
        raise PydanticCustomError(
            "amount_invalid",
            "must be a positive integer of minor units, at most {maximum}",
            {"maximum": MAX_AMOUNT},
        )
    return value


def _currency(value: object) -> str:
    if not isinstance(value, str) or not is_valid_currency(value):
        raise PydanticCustomError(
            "currency_invalid", "must be a lowercase ISO 4217 currency code, such as eur"
        )
    return value


def _parseable_url(value: str) -> str:
    """Services split URLs (hosts, ports, query strings): one that cannot be split is refused here,
    where the field is known, instead of failing later as a 500."""
    try:
        parts = urlsplit(value)
        _ = parts.port  # a port out of range or not a number raises only when read
    except ValueError:
        raise PydanticCustomError("url_invalid", "must be an absolute http(s) URL") from None
    return value


# A URL the service will take apart; each field adds its own scheme and length rules.
ParseableUrl = AfterValidator(_parseable_url)


# Request fields whose errors carry their own codes (amount_invalid, currency_invalid) rather than
# parameter_invalid; see api/errors.py.
Amount = Annotated[
    int, BeforeValidator(_amount), WithJsonSchema({"type": "integer", "minimum": 1, "maximum": MAX_AMOUNT})
]
Currency = Annotated[
    str,
    BeforeValidator(_currency),
    WithJsonSchema({"type": "string", "pattern": "^[a-z]{3}$"}),
    Field(description="A lowercase ISO 4217 currency code, such as `eur`"),
]
