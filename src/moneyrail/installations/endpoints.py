from __future__ import annotations

from typing import Annotated, Literal, cast

from fastapi import APIRouter, Request

from moneyrail.api.context import Principal, request_session
from moneyrail.api.routing import MoneyrailRoute, scoped
from moneyrail.kit.clock import to_unix

from . import service
from .schemas import AccountOut, AccountSettingsOut

router = APIRouter(route_class=MoneyrailRoute, tags=["account"])


@router.get("/account", response_model=AccountOut)
async def get_account(
    request: Request, principal: Annotated[Principal, scoped("account:read")]
) -> AccountOut:
    """Retrieve the account.

    The installation as this key sees it in its environment: its kind, its publishable key and the
    settings the operator chose.
    """
    account = await service.get_account(request_session(request), principal.tenant)
    settings = account.settings
    return AccountOut(
        id=account.installation.id,
        livemode=principal.tenant.livemode,
        created=to_unix(account.installation.created_at),
        name=account.installation.name,
        kind=cast(Literal["direct", "platform"], account.installation.kind),
        publishable_key=account.publishable_key,
        settings=AccountSettingsOut(
            checkout_enabled=settings.checkout_enabled,
            recurring_enabled=settings.recurring_enabled,
            commission_basis_points=settings.commission_basis_points,
            commission_fixed_amount=settings.commission_fixed_amount,
        ),
    )
