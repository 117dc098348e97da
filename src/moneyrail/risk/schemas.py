from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, StringConstraints

from moneyrail.kit.clock import to_unix
from moneyrail.kit.schemas import Metadata, RequestBody, ResourceOut
from moneyrail.models import Review, ValueList, ValueListItem

ItemType = Literal["card_fingerprint", "email", "ip_address", "customer_id", "card_country"]
Action = Literal["block", "review"]


class ValueListCreate(RequestBody):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "alias": "blocked_emails",
                    "name": "Blocked e-mails",
                    "item_type": "email",
                    "action": "block",
                }
            ]
        }
    )

    alias: Annotated[str, StringConstraints(pattern=r"^[a-z0-9_]{1,100}$")] = Field(
        description="Unique in the installation and environment: lowercase letters, digits, underscores"
    )
    name: Annotated[str, StringConstraints(min_length=1, max_length=100)] = Field(
        description="A name for people: 1 to 100 characters"
    )
    item_type: ItemType = Field(
        description="What the items are: card fingerprints, e-mails, IPs, customer ids or card countries"
    )
    action: Action = Field(description="What a payment matching an item gets: a decline, or a review")
    metadata: Metadata = Field(default_factory=dict)


class ValueListItemCreate(RequestBody):
    model_config = ConfigDict(json_schema_extra={"examples": [{"value": "fraud@example.com"}]})

    value: Annotated[str, StringConstraints(min_length=1, max_length=500)] = Field(
        description="The value to match, of the list's `item_type`"
    )


class ValueListOut(ResourceOut):
    object: Literal["radar.value_list"] = "radar.value_list"
    alias: str = Field(description="The list's unique alias")
    name: str = Field(description="The list's name")
    item_type: ItemType = Field(description="What the list's items are")
    action: Action = Field(description="`block` declines a matching payment; `review` holds it for a review")
    metadata: dict[str, str]


class ValueListItemOut(ResourceOut):
    object: Literal["radar.value_list_item"] = "radar.value_list_item"
    value_list: str = Field(description="The `rl_` value list it belongs to")
    value: str = Field(description="The listed value")


class ReviewOut(ResourceOut):
    object: Literal["review"] = "review"
    payment_intent: str = Field(description="The `pi_` payment held for this review")
    reason: Literal["rule", "value_list"] = Field(
        description="`rule`: the network rates the card's risk elevated; `value_list`: a listed value matched"
    )
    matched: dict[str, str] = Field(description="The value list and the item type that matched, if any")
    open: bool = Field(description="true until the review is approved")
    status: Literal["open", "approved"] = Field(description="`open` or `approved`")
    closed_reason: Literal["approved"] | None = Field(description="Why the review closed; null while open")
    approved_at: int | None = Field(description="When it was approved, in Unix seconds; null while open")


def render_value_list(value_list: ValueList) -> ValueListOut:
    return ValueListOut(
        id=value_list.id,
        livemode=value_list.livemode,
        created=to_unix(value_list.created_at),
        alias=value_list.alias,
        name=value_list.name,
        item_type=value_list.item_type,
        action=value_list.action,
        metadata=value_list.metadata_,
    )


def render_item(item: ValueListItem) -> ValueListItemOut:
    return ValueListItemOut(
        id=item.id,
        livemode=item.livemode,
        created=to_unix(item.created_at),
        value_list=item.value_list_id,
        value=item.value,
    )


def render_review(review: Review) -> ReviewOut:
    approved = review.status == "approved"
    return ReviewOut(
        id=review.id,
        livemode=review.livemode,
        created=to_unix(review.created_at),
        payment_intent=review.payment_intent_id,
        reason=review.reason,
        matched=review.matched,
        open=not approved,
        status=review.status,
        closed_reason="approved" if approved else None,
        approved_at=to_unix(review.approved_at) if review.approved_at is not None else None,
    )
