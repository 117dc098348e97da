"""Activation of a connected merchant that still has requirements (spec 4.D onboarding sessions): a
hosted page, single use, 30 minutes on the environment's clock, that collects what is due (in the
sandbox: the bank account its payouts go to, which its connected account then pays out to). The link's
first open spends it; the page goes on in that browser's page session (kit/single_use.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.connect import merchants as merchant_accounts
from moneyrail.engine.clock import tenant_now
from moneyrail.errors import Conflict, UrlNotRegistered
from moneyrail.installations import service as installations
from moneyrail.kit import single_use
from moneyrail.kit.clock import utcnow
from moneyrail.kit.crypto import hash_secret
from moneyrail.kit.ids import new_id, random_base62
from moneyrail.kit.tenant import Tenant
from moneyrail.models import Merchant, MerchantOnboardingSession

from . import repository
from .schemas import OnboardingSessionCreate
from .service import (
    BANK_ACCOUNT_REQUIREMENT,
    ONBOARDING_LIFETIME,
    TOKEN_LENGTH,
    Notice,
    Redirect,
    announce,
    locked_merchant,
)

logger = structlog.get_logger("moneyrail.merchants")


@dataclass(frozen=True)
class CreatedOnboarding:
    onboarding: MerchantOnboardingSession
    token: str


async def create_onboarding_session(
    session: AsyncSession, tenant: Tenant, merchant_id: str, command: OnboardingSessionCreate
) -> CreatedOnboarding:
    merchant = await locked_merchant(session, tenant, merchant_id)
    if merchant.connection_status != "active":
        raise Conflict(f"This merchant is {merchant.connection_status}: activation follows a connection.")
    if not merchant.requirements_due:
        raise Conflict("This merchant has no requirements left: there is nothing to activate.")
    settings = await installations.environment_settings_of(session, tenant)
    if command.return_url not in settings.return_urls:
        raise UrlNotRegistered(
            f"return_url {command.return_url!r} is not a return URL registered for this environment; the "
            "operator registers each one exactly (moneyrail settings set --return-url).",
            param="return_url",
        )
    token = random_base62(TOKEN_LENGTH)
    onboarding = MerchantOnboardingSession(
        id=new_id("mos"),
        installation_id=tenant.installation_id,
        livemode=tenant.livemode,
        merchant_id=merchant.id,
        token_hash=hash_secret(token),
        return_url=command.return_url,
        status="open",
        expires_at=await tenant_now(session, tenant) + ONBOARDING_LIFETIME,
    )
    await repository.add(session, onboarding)
    return CreatedOnboarding(onboarding, token)


def onboarding_url(base_url: str, token: str) -> str:
    return f"{base_url}/onboarding/merchants/{token}"


@dataclass(frozen=True)
class OnboardingView:
    business_name: str
    requirements: list[str]
    livemode: bool
    return_url: str


@dataclass(frozen=True)
class OnboardingForm:
    view: OnboardingView
    error: str | None = None
    new_session: str | None = None  # the link's first open: its page session, for the browser to keep


OnboardingStep = OnboardingForm | Redirect | Notice


@dataclass(frozen=True)
class _Loaded:
    onboarding: MerchantOnboardingSession
    merchant: Merchant
    tenant: Tenant
    new_session: str | None


async def _onboarding(session: AsyncSession, token: str, page_session: str | None) -> _Loaded | Notice:
    """The session, if this request may use its link: the first open (which spends it), or the
    browser that made it, presenting its page session. Any other request changes nothing."""
    onboarding = await repository.onboarding_by_token_hash(session, hash_secret(token))
    if onboarding is None:
        return Notice("missing")
    tenant = Tenant(onboarding.installation_id, onboarding.livemode)
    if onboarding.status != "open":
        return Notice("used")
    entry = single_use.enter(onboarding, await tenant_now(session, tenant), page_session)
    if entry.refused is not None:
        return Notice(entry.refused)
    merchant = await locked_merchant(session, tenant, onboarding.merchant_id)
    if merchant.connection_status != "active":
        return Notice("refused", "This business is no longer connected to the application.")
    return _Loaded(onboarding, merchant, tenant, entry.new_session)


def _onboarding_view(onboarding: MerchantOnboardingSession, merchant: Merchant) -> OnboardingView:
    return OnboardingView(
        business_name=merchant.business_name or "",
        requirements=list(merchant.requirements_due),
        livemode=onboarding.livemode,
        return_url=onboarding.return_url,
    )


async def show_onboarding(session: AsyncSession, token: str, page_session: str | None) -> OnboardingStep:
    loaded = await _onboarding(session, token, page_session)
    if isinstance(loaded, Notice):
        return loaded
    if not loaded.merchant.requirements_due:
        return Redirect(loaded.onboarding.return_url)
    return OnboardingForm(
        _onboarding_view(loaded.onboarding, loaded.merchant), new_session=loaded.new_session
    )


async def complete_onboarding(
    session: AsyncSession, token: str, page_session: str | None, bank_account: str | None
) -> OnboardingStep:
    """The business gives what was due; the link then stops working (single use)."""
    loaded = await _onboarding(session, token, page_session)
    if isinstance(loaded, Notice):
        return loaded
    onboarding, merchant, tenant = loaded.onboarding, loaded.merchant, loaded.tenant
    number = re.sub(r"[\s-]", "", bank_account or "")
    if BANK_ACCOUNT_REQUIREMENT in merchant.requirements_due and not re.fullmatch(r"[0-9]{6,34}", number):
        return OnboardingForm(
            _onboarding_view(onboarding, merchant),
            "Enter the bank account number (6 to 34 digits).",
            loaded.new_session,
        )
    if BANK_ACCOUNT_REQUIREMENT in merchant.requirements_due:
        await merchant_accounts.record_merchant_bank_account(session, tenant, merchant.id, number)
    merchant.requirements_due = []
    merchant.updated_at = utcnow()
    onboarding.status = "complete"
    onboarding.completed_at = await tenant_now(session, tenant)
    await session.flush()
    await announce(session, tenant, merchant, "merchant.updated")
    logger.info("merchant_onboarding_completed", merchant=merchant.id)
    return Redirect(onboarding.return_url)
