from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request

from moneyrail.api.context import Principal, request_session
from moneyrail.api.pagination import ListEnvelope, PageRequest, list_envelope, page_request
from moneyrail.api.routing import MoneyrailRoute, scoped
from moneyrail.web import public_base_url

from . import activation, service
from .schemas import (
    MerchantCapabilitiesOut,
    MerchantConnectionCreate,
    MerchantConnectionOut,
    MerchantOut,
    MerchantRequirementsOut,
    OnboardingSessionCreate,
    OnboardingSessionOut,
    capabilities_of,
    render_connection,
    render_merchant,
    render_onboarding_session,
    requirements_of,
)

router = APIRouter(route_class=MoneyrailRoute, tags=["merchants"])


@router.post("/merchant-connections", response_model=MerchantConnectionOut)
async def create_merchant_connection(
    request: Request,
    body: MerchantConnectionCreate,
    principal: Annotated[Principal, scoped("merchants:write")],
) -> MerchantConnectionOut:
    """Connect a merchant.

    Start connecting a merchant: open `url` in the merchant's browser. The consent page returns to
    `redirect_uri` with `code` and `state` (or `error`); exchange the code at `POST /oauth/token`.
    """
    created = await service.create_connection(request_session(request), principal.tenant, body)
    return render_connection(created.connection, url=service.consent_url(public_base_url(request), created))


@router.get("/merchants", response_model=ListEnvelope[MerchantOut])
async def list_merchants(
    request: Request,
    principal: Annotated[Principal, scoped("merchants:read")],
    page: Annotated[PageRequest, Depends(page_request)],
) -> ListEnvelope[MerchantOut]:
    """List merchants.

    The merchants connected to this application in this environment, newest first.
    """
    session = request_session(request)
    rows = await service.list_merchants(session, principal.tenant, limit=page.limit, after=page.after)
    accounts = await service.connected_accounts_of(session, principal.tenant, rows)
    return list_envelope(rows, page, lambda merchant: render_merchant(merchant, accounts.get(merchant.id)))


@router.get("/merchants/{merchant}", response_model=MerchantOut)
async def get_merchant(
    request: Request, merchant: str, principal: Annotated[Principal, scoped("merchants:read")]
) -> MerchantOut:
    """Retrieve a merchant.

    One merchant by its `mer_` id: its business, connection, consent, capabilities and requirements.
    """
    session = request_session(request)
    found = await service.get_merchant(session, principal.tenant, merchant)
    return render_merchant(found, await service.connected_account_of(session, principal.tenant, found.id))


@router.delete("/merchants/{merchant}", response_model=MerchantOut)
async def revoke_merchant(
    request: Request, merchant: str, principal: Annotated[Principal, scoped("merchants:write")]
) -> MerchantOut:
    """Revoke a merchant.

    Revoke this application's access to the merchant (and only this application's).
    """
    session = request_session(request)
    revoked = await service.revoke(session, principal.tenant, merchant)
    return render_merchant(revoked, await service.connected_account_of(session, principal.tenant, revoked.id))


@router.get("/merchants/{merchant}/capabilities", response_model=MerchantCapabilitiesOut)
async def get_capabilities(
    request: Request, merchant: str, principal: Annotated[Principal, scoped("merchants:read")]
) -> MerchantCapabilitiesOut:
    """Retrieve a merchant's capabilities.

    What the merchant can do now: take payments, receive transfers, be paid out, refund.
    """
    found = await service.get_merchant(request_session(request), principal.tenant, merchant)
    return MerchantCapabilitiesOut(merchant=found.id, **capabilities_of(found).model_dump())


@router.get("/merchants/{merchant}/requirements", response_model=MerchantRequirementsOut)
async def get_requirements(
    request: Request, merchant: str, principal: Annotated[Principal, scoped("merchants:read")]
) -> MerchantRequirementsOut:
    """Retrieve a merchant's requirements.

    What the merchant must still provide, and why a capability is not active.
    """
    found = await service.get_merchant(request_session(request), principal.tenant, merchant)
    return MerchantRequirementsOut(merchant=found.id, **requirements_of(found).model_dump())


@router.post("/merchants/{merchant}/consent-sessions", response_model=MerchantConnectionOut)
async def create_consent_session(
    request: Request,
    merchant: str,
    body: MerchantConnectionCreate,
    principal: Annotated[Principal, scoped("merchants:write")],
) -> MerchantConnectionOut:
    """Restart a merchant's consent.

    Restart consent for a pending, denied or revoked merchant: a new consent link, same flow.
    """
    created = await service.restart_consent(request_session(request), principal.tenant, merchant, body)
    return render_connection(created.connection, url=service.consent_url(public_base_url(request), created))


@router.post("/merchants/{merchant}/onboarding-sessions", response_model=OnboardingSessionOut)
async def create_onboarding_session(
    request: Request,
    merchant: str,
    body: OnboardingSessionCreate,
    principal: Annotated[Principal, scoped("merchants:write")],
) -> OnboardingSessionOut:
    """Create a merchant onboarding session.

    A hosted activation page while the merchant still has requirements; its link works once.
    """
    created = await activation.create_onboarding_session(
        request_session(request), principal.tenant, merchant, body
    )
    return render_onboarding_session(
        created.onboarding, url=activation.onboarding_url(public_base_url(request), created.token)
    )
