from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request

from moneyrail.api.context import Principal, request_session
from moneyrail.api.pagination import ListEnvelope, PageRequest, list_envelope, page_request
from moneyrail.api.routing import MoneyrailRoute, scoped
from moneyrail.kit.clock import to_unix
from moneyrail.models import Event, WebhookEndpoint

from . import service
from .schemas import DeletedOut, EventOut, WebhookEndpointCreate, WebhookEndpointOut

router = APIRouter(route_class=MoneyrailRoute, tags=["events and webhooks"])


def render_event(event: Event) -> EventOut:
    return EventOut.model_validate(service.event_object(event))


def render_endpoint(endpoint: WebhookEndpoint, *, with_secret: bool = False) -> WebhookEndpointOut:
    return WebhookEndpointOut(
        id=endpoint.id,
        livemode=endpoint.livemode,
        created=to_unix(endpoint.created_at),
        url=endpoint.url,
        description=endpoint.description,
        enabled_events=endpoint.enabled_events,
        secret=endpoint.secret if with_secret else None,
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
    endpoint = await service.create_endpoint(
        request_session(request),
        principal.tenant,
        url=body.url,
        enabled_events=body.enabled_events,
        description=body.description,
    )
    return render_endpoint(endpoint, with_secret=True)  # the only time the secret is shown


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


@router.delete("/webhook-endpoints/{webhook_endpoint}", response_model=DeletedOut)
async def delete_endpoint(
    request: Request, webhook_endpoint: str, principal: Annotated[Principal, scoped("webhooks:write")]
) -> DeletedOut:
    """Delete a webhook endpoint.

    No more events are sent to it; deliveries in progress stop.
    """
    endpoint = await service.delete_endpoint(request_session(request), principal.tenant, webhook_endpoint)
    return DeletedOut(id=endpoint.id, object="webhook_endpoint")
