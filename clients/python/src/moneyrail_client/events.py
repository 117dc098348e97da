"""Events as typed objects: `data.object` parsed into the generated model of the object it carries.

An event whose object this client does not know (a newer service's), or that does not parse into its
model, is a `GenericEvent` with the object as a dict: an event is never dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from moneyrail_client import models as m
from moneyrail_client.errors import MoneyrailError

ObjectT = TypeVar("ObjectT")


class EventData(BaseModel, Generic[ObjectT]):
    object: ObjectT


class Event(BaseModel, Generic[ObjectT]):
    """`{"id": "evt_…", "object": "event", "type", "created", "livemode", "api_version", "data"}`"""

    model_config = ConfigDict(extra="allow")

    id: str
    object: str = "event"
    type: str
    created: int
    livemode: bool
    api_version: str | None = None
    data: EventData[ObjectT]


class GenericEvent(Event[dict[str, Any]]):
    """An event whose object this client has no model for: `data.object` is the plain dict."""


class PaymentIntentEvent(Event[m.PaymentIntentOut]):
    """`payment_intent.*`"""


class RefundEvent(Event[m.RefundOut]):
    """`refund.*`"""


class CustomerEvent(Event[m.CustomerOut]):
    """`customer.*`"""


class CheckoutSessionEvent(Event[m.CheckoutSessionOut]):
    """`checkout.session.*`"""


class MerchantEvent(Event[m.MerchantOut]):
    """`merchant.*`"""


class ConnectedAccountEvent(Event[m.ConnectedAccountOut]):
    """`connected_account.*`"""


class AllocationGroupEvent(Event[m.AllocationGroupOut]):
    """`allocation_group.*`"""


class TransferEvent(Event[m.TransferOut]):
    """`transfer.*`"""


class TransferReversalEvent(Event[m.ReversalOut]):
    """`transfer.reversal.*`"""


class PayoutEvent(Event[m.PayoutOut]):
    """`payout.*`"""


class DisputeEvent(Event[m.DisputeOut]):
    """`charge.dispute.*`"""


class ReviewEvent(Event[m.ReviewOut]):
    """`review.*`"""


class ValueListEvent(Event[m.ValueListOut]):
    """`radar.value_list.*`"""


class InvoiceEvent(Event[m.InvoiceOut]):
    """`invoice.*`"""


class OrderEvent(Event[m.OrderOut]):
    """`order.*`"""


class SubscriptionEvent(Event[m.SubscriptionOut]):
    """`subscription.*`"""


class SubscriptionInvoiceEvent(Event[m.SubscriptionInvoiceOut]):
    """`subscription.invoice.*`"""


class SubscriptionChangeEvent(Event[m.SubscriptionChangeOut]):
    """`subscription.change.*`"""


class OperationEvent(Event[m.OperationOut]):
    """`operation.*`"""


AnyEvent = (
    PaymentIntentEvent
    | RefundEvent
    | CustomerEvent
    | CheckoutSessionEvent
    | MerchantEvent
    | ConnectedAccountEvent
    | AllocationGroupEvent
    | TransferEvent
    | TransferReversalEvent
    | PayoutEvent
    | DisputeEvent
    | ReviewEvent
    | ValueListEvent
    | InvoiceEvent
    | OrderEvent
    | SubscriptionEvent
    | SubscriptionInvoiceEvent
    | SubscriptionChangeEvent
    | OperationEvent
    | GenericEvent
)

# The event's class by its object's `object` field.
EVENT_CLASSES: dict[str, type[AnyEvent]] = {
    "payment_intent": PaymentIntentEvent,
    "refund": RefundEvent,
    "customer": CustomerEvent,
    "checkout_session": CheckoutSessionEvent,
    "merchant": MerchantEvent,
    "connected_account": ConnectedAccountEvent,
    "allocation_group": AllocationGroupEvent,
    "transfer": TransferEvent,
    "transfer_reversal": TransferReversalEvent,
    "payout": PayoutEvent,
    "dispute": DisputeEvent,
    "review": ReviewEvent,
    "radar.value_list": ValueListEvent,
    "invoice": InvoiceEvent,
    "order": OrderEvent,
    "subscription": SubscriptionEvent,
    "subscription_invoice": SubscriptionInvoiceEvent,
    "subscription_change": SubscriptionChangeEvent,
    "operation": OperationEvent,
}


def construct_event(payload: Mapping[str, Any] | BaseModel) -> AnyEvent:
    """The typed event of an event's JSON (a webhook's body, or `client.events.retrieve(...)`)."""
    body = payload.model_dump() if isinstance(payload, BaseModel) else dict(payload)
    data = body.get("data")
    carried = data.get("object") if isinstance(data, Mapping) else None
    kind = carried.get("object") if isinstance(carried, Mapping) else None
    event_class = EVENT_CLASSES.get(kind) if isinstance(kind, str) else None
    if event_class is not None:
        try:
            return event_class.model_validate(body)
        except ValidationError:
            pass  # a shape this client's models do not know: still delivered, as a generic event
    try:
        return GenericEvent.model_validate(body)
    except ValidationError as error:
        raise MoneyrailError(f"not an event: {error}") from error
