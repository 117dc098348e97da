from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Request

from moneyrail.api.context import Principal, request_session
from moneyrail.api.pagination import ListEnvelope, PageRequest, list_envelope, page_request
from moneyrail.api.routing import MoneyrailRoute, scoped
from moneyrail.kit.clock import to_unix
from moneyrail.web import public_base_url

from . import service
from .requirements import Requirements
from .schemas import (
    AccountRequirementsOut,
    BalanceAmount,
    ConnectedAccountBalanceOut,
    ConnectedAccountCreate,
    ConnectedAccountOut,
    OnboardingLinkCreate,
    OnboardingLinkOut,
    render_connected_account,
)

router = APIRouter(route_class=MoneyrailRoute, tags=["connected accounts"])


@router.post("/connected-accounts", response_model=ConnectedAccountOut)
async def create_connected_account(
    request: Request, body: ConnectedAccountCreate, principal: Annotated[Principal, scoped("accounts:write")]
) -> ConnectedAccountOut:
    """Create a connected account.

    An account for a courier, driver, merchant or other recipient of transfers, with the bank
    account it is paid out to.
    """
    account = await service.create_connected_account(request_session(request), principal.tenant, body)
    return render_connected_account(account)


@router.get("/connected-accounts", response_model=ListEnvelope[ConnectedAccountOut])
async def list_connected_accounts(
    request: Request,
    principal: Annotated[Principal, scoped("accounts:read")],
    page: Annotated[PageRequest, Depends(page_request)],
    kind: Annotated[
        Literal["courier", "driver", "merchant", "other"] | None,
        Query(description="Only accounts of this kind"),
    ] = None,
) -> ListEnvelope[ConnectedAccountOut]:
    """List connected accounts.

    The environment's connected accounts, newest first; `kind` keeps one kind.
    """
    rows = await service.list_connected_accounts(
        request_session(request), principal.tenant, limit=page.limit, after=page.after, kind=kind
    )
    return list_envelope(rows, page, render_connected_account)


@router.get("/connected-accounts/{connected_account}", response_model=ConnectedAccountOut)
async def get_connected_account(
    request: Request, connected_account: str, principal: Annotated[Principal, scoped("accounts:read")]
) -> ConnectedAccountOut:
    """Retrieve a connected account.

    Reads the onboarding state as it is now: requirements are derived from what was provided.
    """
    account = await service.get_connected_account(
        request_session(request), principal.tenant, connected_account
    )
    return render_connected_account(account)


@router.get("/connected-accounts/{connected_account}/requirements", response_model=AccountRequirementsOut)
async def get_requirements(
    request: Request, connected_account: str, principal: Annotated[Principal, scoped("accounts:read")]
) -> AccountRequirementsOut:
    """Retrieve a connected account's requirements.

    What must still be provided before the account can be paid out.
    """
    account = await service.get_connected_account(
        request_session(request), principal.tenant, connected_account
    )
    requirements = Requirements.of(account)
    return AccountRequirementsOut(
        connected_account=account.id,
        currently_due=list(requirements.currently_due),
        eventually_due=list(requirements.eventually_due),
        past_due=list(requirements.past_due),
        disabled_reason=requirements.disabled_reason,
    )


@router.post("/connected-accounts/{connected_account}/onboarding-links", response_model=OnboardingLinkOut)
async def create_onboarding_link(
    request: Request,
    connected_account: str,
    principal: Annotated[Principal, scoped("accounts:write")],
    body: OnboardingLinkCreate | None = None,
) -> OnboardingLinkOut:
    """Create an onboarding link.

    A hosted onboarding page for the account's owner; the link works once and expires after 5
    minutes.
    """
    created = await service.create_onboarding_link(
        request_session(request),
        principal.tenant,
        connected_account,
        body or OnboardingLinkCreate(),
        base_url=public_base_url(request),
    )
    return OnboardingLinkOut(
        livemode=principal.tenant.livemode,
        connected_account=created.link.connected_account_id,
        created=to_unix(created.link.created_at),
        expires_at=to_unix(created.link.expires_at),
        url=created.url,
    )


def _amounts(per_currency: dict[str, int]) -> list[BalanceAmount]:
    return [
        BalanceAmount(amount=amount, currency=currency) for currency, amount in sorted(per_currency.items())
    ]


@router.get("/connected-accounts/{connected_account}/balance", response_model=ConnectedAccountBalanceOut)
async def get_balance(
    request: Request, connected_account: str, principal: Annotated[Principal, scoped("accounts:read")]
) -> ConnectedAccountBalanceOut:
    """Retrieve a connected account's balance.

    Funds available and pending for the account, per currency.
    """
    view = await service.get_balance(request_session(request), principal.tenant, connected_account)
    return ConnectedAccountBalanceOut(
        livemode=principal.tenant.livemode,
        connected_account=connected_account,
        available=_amounts(view.available),
        pending=_amounts(view.pending),
    )
