from __future__ import annotations

from typing import Annotated, Literal, cast

from fastapi import APIRouter, Depends, Query, Request

from moneyrail.api.context import Principal, request_session
from moneyrail.api.pagination import ListEnvelope, PageRequest, list_envelope, page_request
from moneyrail.api.routing import MoneyrailRoute, scoped
from moneyrail.kit.clock import to_unix, utcnow
from moneyrail.models import WebhookEndpoint

from . import service
from .schemas import (
    DeletedOut,
    DeliveryAttemptOut,
    EventOut,
    SecretRotation,
    WebhookDeliveryOut,
    WebhookEndpointCreate,
    WebhookEndpointOut,
    WebhookEndpointUpdate,
)

router = APIRouter(route_class=MoneyrailRoute, tags=["events and webhooks"])


def render_event(event: service.EventRecord) -> EventOut:
    return EventOut.model_validate(service.event_object(event))


def render_endpoint(endpoint: WebhookEndpoint, *, secret: str | None = None) -> WebhookEndpointOut:
    overlap_ends = service.overlap_ends(endpoint, utcnow())
    return WebhookEndpointOut(
        id=endpoint.id,
        livemode=endpoint.livemode,
        created=to_unix(endpoint.created_at),
        url=endpoint.url,
        description=endpoint.description,
        enabled_events=endpoint.enabled_events,
        status=cast(Literal["enabled", "disabled"], service.endpoint_status(endpoint)),
        previous_secret_expires_at=to_unix(overlap_ends) if overlap_ends else None,
        secret=secret,
    )


def render_delivery(view: service.DeliveryView) -> WebhookDeliveryOut:
    delivery = view.delivery
    return WebhookDeliveryOut(
        id=delivery.id,
        livemode=delivery.livemode,
        created=to_unix(delivery.created_at),
        webhook_endpoint=delivery.endpoint_id,
        event=delivery.event_id,
        event_type=delivery.event_type,
        status=view.status,
        operation=delivery.id,
        next_attempt_at=to_unix(view.next_attempt_at) if view.next_attempt_at else None,
        resend_of=delivery.resend_of,
        attempts=[
            DeliveryAttemptOut(
                number=attempt.number,
                attempted_at=to_unix(attempt.attempted_at),
                outcome=cast(Literal["succeeded", "failed"], attempt.outcome),
                response_status=attempt.response_status,
                latency_ms=attempt.latency_ms,
                error=attempt.error,
            )
            for attempt in view.attempts
        ],
    )


@router.get("/events", response_model=ListEnvelope[EventOut])
async def list_events(
    request: Request,
    principal: Annotated[Principal, scoped("webhooks:read")],
    page: Annotated[PageRequest, Depends(page_request)],
    event_type: Annotated[
        str | None, Query(alias="type", max_length=100, description="Only events of this type")
    ] = None,
) -> ListEnvelope[EventOut]:
    """List events.

    The environment's events, newest first; `type` keeps one event type.
    """
    rows = await service.list_events(
        request_session(request), principal.tenant, event_type=event_type, limit=page.limit, after=page.after
    )
    return list_envelope(rows, page, render_event)


@router.get("/events/{event}", response_model=EventOut)
async def get_event(
    request: Request, event: str, principal: Annotated[Principal, scoped("webhooks:read")]
) -> EventOut:
    """Retrieve an event.

    One event by its `evt_` id, with the object as it was after the change.
    """
    return render_event(await service.get_event(request_session(request), principal.tenant, event))


@router.post("/webhook-endpoints", response_model=WebhookEndpointOut)
async def create_endpoint(
    request: Request, body: WebhookEndpointCreate, principal: Annotated[Principal, scoped("webhooks:write")]
) -> WebhookEndpointOut:
    """Create a webhook endpoint.

    Events of the enabled types are posted to `url`, signed as Standard Webhooks specifies. The
    signing `secret` is answered once, here.
    """
    issued = await service.create_endpoint(
        request_session(request),
        principal.tenant,
        url=body.url,
        enabled_events=[event.value for event in body.enabled_events],
        description=body.description,
    )
    return render_endpoint(issued.endpoint, secret=issued.secret)  # the only time the secret is shown


@router.get("/webhook-endpoints", response_model=ListEnvelope[WebhookEndpointOut])
async def list_endpoints(
    request: Request,
    principal: Annotated[Principal, scoped("webhooks:read")],
    page: Annotated[PageRequest, Depends(page_request)],
) -> ListEnvelope[WebhookEndpointOut]:
    """List webhook endpoints.

    The environment's webhook endpoints, newest first.
    """
    rows = await service.list_endpoints(
        request_session(request), principal.tenant, limit=page.limit, after=page.after
    )
    return list_envelope(rows, page, render_endpoint)


@router.get("/webhook-endpoints/{webhook_endpoint}", response_model=WebhookEndpointOut)
async def get_endpoint(
    request: Request, webhook_endpoint: str, principal: Annotated[Principal, scoped("webhooks:read")]
) -> WebhookEndpointOut:
    """Retrieve a webhook endpoint.

    One webhook endpoint by its `we_` id; its secret is not answered again.
    """
    return render_endpoint(
        await service.get_endpoint(request_session(request), principal.tenant, webhook_endpoint)
    )


@router.post("/webhook-endpoints/{webhook_endpoint}", response_model=WebhookEndpointOut)
async def update_endpoint(
    request: Request,
    webhook_endpoint: str,
    body: WebhookEndpointUpdate,
    principal: Annotated[Principal, scoped("webhooks:write")],
) -> WebhookEndpointOut:
    """Update a webhook endpoint.

    Change the URL, the events or the description; `disabled` pauses or resumes deliveries.
    """
    endpoint = await service.update_endpoint(
        request_session(request),
        principal.tenant,
        webhook_endpoint,
        url=body.url,
        enabled_events=None
        if body.enabled_events is None
        else [event.value for event in body.enabled_events],
        description=body.description,
        disabled=body.disabled,
    )
    return render_endpoint(endpoint)


@router.post("/webhook-endpoints/{webhook_endpoint}/rotate-secret", response_model=WebhookEndpointOut)
async def rotate_secret(
    request: Request,
    webhook_endpoint: str,
    body: SecretRotation,
    principal: Annotated[Principal, scoped("webhooks:write")],
) -> WebhookEndpointOut:
    """Rotate a webhook endpoint's secret.

    A new signing secret, shown once; the previous one keeps signing too until the overlap ends.
    """
    issued = await service.rotate_secret(
        request_session(request),
        principal.tenant,
        webhook_endpoint,
        expire_previous_in_seconds=body.expire_previous_in_seconds,
    )
    return render_endpoint(issued.endpoint, secret=issued.secret)


@router.delete("/webhook-endpoints/{webhook_endpoint}", response_model=DeletedOut)
async def delete_endpoint(
    request: Request, webhook_endpoint: str, principal: Annotated[Principal, scoped("webhooks:write")]
) -> DeletedOut:
    """Delete a webhook endpoint.

    No more events are sent to it; deliveries in progress stop.
    """
    endpoint = await service.delete_endpoint(request_session(request), principal.tenant, webhook_endpoint)
    return DeletedOut(id=endpoint.id, object="webhook_endpoint")


@router.get(
    "/webhook-endpoints/{webhook_endpoint}/deliveries", response_model=ListEnvelope[WebhookDeliveryOut]
)
async def list_deliveries(
    request: Request,
    webhook_endpoint: str,
    principal: Annotated[Principal, scoped("webhooks:read")],
    page: Annotated[PageRequest, Depends(page_request)],
) -> ListEnvelope[WebhookDeliveryOut]:
    """List an endpoint's deliveries.

    The endpoint's deliveries, newest first, each with every attempt's outcome, status and latency.
    """
    rows = await service.list_deliveries(
        request_session(request), principal.tenant, webhook_endpoint, limit=page.limit, after=page.after
    )
    return list_envelope(rows, page, render_delivery)


@router.get("/webhook-endpoints/{webhook_endpoint}/deliveries/{delivery}", response_model=WebhookDeliveryOut)
async def get_delivery(
    request: Request,
    webhook_endpoint: str,
    delivery: str,
    principal: Annotated[Principal, scoped("webhooks:read")],
) -> WebhookDeliveryOut:
    """Retrieve a delivery.

    One delivery of the endpoint, with every attempt's outcome, status and latency.
    """
    return render_delivery(
        await service.get_delivery(request_session(request), principal.tenant, webhook_endpoint, delivery)
    )


@router.post(
    "/webhook-endpoints/{webhook_endpoint}/deliveries/{delivery}/resend", response_model=WebhookDeliveryOut
)
async def resend_delivery(
    request: Request,
    webhook_endpoint: str,
    delivery: str,
    principal: Annotated[Principal, scoped("webhooks:write")],
) -> WebhookDeliveryOut:
    """Resend a delivery.

    Send the delivery's event again, as a new delivery (answered here, `resend_of` naming the first).
    """
    return render_delivery(
        await service.resend_delivery(request_session(request), principal.tenant, webhook_endpoint, delivery)
    )
