"""Connected accounts: beneficiaries (couriers, drivers, others) that receive transfers, and their
hosted onboarding (CONVENTIONS.md §13).

An account can receive transfers from creation on; payouts wait until the hosted onboarding page has
collected what is currently due (requirements.py). Its balance is derived from the ledger: the
accounts `connect:<acct id>:pending` and `connect:<acct id>:available`, per currency.

An onboarding link is a credential: 5 minutes on the environment's clock, stored only as a SHA-256,
answered once, and single use: its first open spends it, and the page goes on in that browser's page
session only (kit/single_use.py), until the form is submitted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import date, timedelta

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.engine.clock import tenant_now
from moneyrail.errors import ResourceMissing, UrlNotRegistered
from moneyrail.events.service import record_event
from moneyrail.installations import service as installations
from moneyrail.kit import single_use
from moneyrail.kit.clock import utcnow
from moneyrail.kit.crypto import hash_secret
from moneyrail.kit.ids import new_id, random_base62
from moneyrail.kit.pagination import Position
from moneyrail.kit.tenant import Tenant
from moneyrail.ledger import service as ledger
from moneyrail.models import ConnectedAccount, OnboardingLink

from . import at_processor, repository
from .schemas import ConnectedAccountCreate, OnboardingLinkCreate, render_connected_account

logger = structlog.get_logger("moneyrail.connect")

ONBOARDING_LINK_LIFETIME = timedelta(minutes=5)
TOKEN_LENGTH = 32


def pending_account(account_id: str) -> str:
    """The ledger account of a connected account's pending balance (awaiting its source's settlement)."""
    return f"connect:{account_id}:pending"


def available_account(account_id: str) -> str:
    return f"connect:{account_id}:available"


async def announce(session: AsyncSession, tenant: Tenant, account: ConnectedAccount, event_type: str) -> None:
    await record_event(session, tenant, event_type, render_connected_account(account).model_dump(mode="json"))


async def create_connected_account(
    session: AsyncSession, tenant: Tenant, command: ConnectedAccountCreate
) -> ConnectedAccount:
    number = command.external_account.account_number
    account = ConnectedAccount(
        id=new_id("acct"),
        installation_id=tenant.installation_id,
        livemode=tenant.livemode,
        kind=command.kind,
        country=command.country,
        email=command.email,
        display_name=command.display_name,
        bank_account_number=number,
        bank_last4=number[-4:],
        onboarding_status="pending",
        individual={},
        metadata_=command.metadata,
        updated_at=utcnow(),
    )
    await repository.add(session, account)
    await at_processor.start_link(session, tenant, account)
    await announce(session, tenant, account, "connected_account.created")
    logger.info("connected_account_created", connected_account=account.id, kind=account.kind)
    return account


async def get_connected_account(session: AsyncSession, tenant: Tenant, account_id: str) -> ConnectedAccount:
    account = await repository.get_account(session, tenant, account_id)
    if account is None:
        raise ResourceMissing(f"No such connected_account: {account_id!r}", param="connected_account")
    return account


async def find_recipients(
    session: AsyncSession, tenant: Tenant, account_ids: Sequence[str]
) -> dict[str, ConnectedAccount]:
    """The tenant's connected accounts among these ids (another tenant's look like unknown ones)."""
    return await repository.get_accounts(session, tenant, account_ids)


async def list_connected_accounts(
    session: AsyncSession, tenant: Tenant, *, limit: int, after: Position | None, kind: str | None
) -> Sequence[ConnectedAccount]:
    return await repository.list_accounts(session, tenant, limit=limit, after=after, kind=kind)


# --- balance ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AccountBalance:
    available: dict[str, int]
    pending: dict[str, int]


async def get_balance(session: AsyncSession, tenant: Tenant, account_id: str) -> AccountBalance:
    """Per currency, the sum of the account's postings (ARCHITECTURE.md invariant 3): no balance row."""
    account = await get_connected_account(session, tenant, account_id)
    view = AccountBalance(available={}, pending={})
    codes = [available_account(account.id), pending_account(account.id)]
    for found in await ledger.balances(session, tenant, codes):
        target = view.available if found.code == codes[0] else view.pending
        target[found.currency] = found.amount
    return view


# --- onboarding -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CreatedLink:
    link: OnboardingLink
    url: str


async def create_onboarding_link(
    session: AsyncSession, tenant: Tenant, account_id: str, command: OnboardingLinkCreate, *, base_url: str
) -> CreatedLink:
    account = await get_connected_account(session, tenant, account_id)
    if command.return_url is not None:
        settings = await installations.get_environment_settings(session, tenant)
        if command.return_url not in settings.return_urls:
            raise UrlNotRegistered(
                f"return_url {command.return_url!r} is not a return URL registered for this environment; "
                "the operator registers each one exactly (moneyrail settings set --return-url).",
                param="return_url",
            )
    token = random_base62(TOKEN_LENGTH)
    link = OnboardingLink(
        id=new_id("acctlink"),
        installation_id=tenant.installation_id,
        livemode=tenant.livemode,
        connected_account_id=account.id,
        token_hash=hash_secret(token),
        return_url=command.return_url,
        expires_at=await tenant_now(session, tenant) + ONBOARDING_LINK_LIFETIME,
    )
    await repository.add(session, link)
    logger.info("onboarding_link_created", connected_account=account.id)
    return CreatedLink(link, f"{base_url}/onboarding/{token}")


@dataclass(frozen=True)
class OnboardingForm:
    first_name: str
    last_name: str
    dob: str
    accept_tos: bool


@dataclass(frozen=True)
class OnboardingPage:
    """What the hosted page shows: the form (with an error after a bad submission), or why not."""

    state: str  # form | done | missing | used | opened | expired
    platform: str = ""
    account: ConnectedAccount | None = None
    error: str | None = None
    return_url: str | None = None
    new_session: str | None = None  # the first open's page session, for the browser to keep


async def _usable_link(
    session: AsyncSession, token: str, page_session: str | None
) -> tuple[OnboardingLink | None, OnboardingPage]:
    """The link and its form, if this request may use it: the first open (which spends the link), or
    the browser that made it, presenting its page session. Any other request changes nothing."""
    link = await repository.get_link_by_token_hash(session, hash_secret(token))
    if link is None:
        return None, OnboardingPage("missing")
    if link.used_at is not None:
        return None, OnboardingPage("used")
    tenant = Tenant(link.installation_id, link.livemode)
    entry = single_use.enter(link, await tenant_now(session, tenant), page_session)
    if entry.refused is not None:
        return None, OnboardingPage(entry.refused)
    account = await repository.get_account(session, tenant, link.connected_account_id, for_update=True)
    assert account is not None  # a link always names its own tenant's account
    platform = (await installations.require_installation(session, link.installation_id)).name
    page = OnboardingPage(
        "form", platform, account, return_url=link.return_url, new_session=entry.new_session
    )
    return link, page


async def show_onboarding(session: AsyncSession, token: str, page_session: str | None) -> OnboardingPage:
    return (await _usable_link(session, token, page_session))[1]


def _check(form: OnboardingForm, today: date) -> str | None:
    if not form.first_name.strip() or not form.last_name.strip():
        return "Enter your first and last name."
    if len(form.first_name) > 100 or len(form.last_name) > 100:
        return "Names are at most 100 characters."
    try:
        born = date.fromisoformat(form.dob)
    except ValueError:
        return "Enter your date of birth."
    if not date(1900, 1, 1) <= born <= today.replace(year=today.year - 13):
        return "Enter your real date of birth (you must be at least 13)."
    if not form.accept_tos:
        return "Accept the services agreement to receive payouts."
    return None


async def submit_onboarding(
    session: AsyncSession,
    token: str,
    page_session: str | None,
    form: OnboardingForm,
    from_address: str | None = None,
) -> OnboardingPage:
    """The form's answer. A mistake shows the form again (the page session goes on); success uses the
    link up, and tells a processor that keeps accounts who the account pays (`from_address`: where the
    terms were accepted from)."""
    link, page = await _usable_link(session, token, page_session)
    if link is None or page.account is None:
        return page
    tenant = Tenant(link.installation_id, link.livemode)
    now = await tenant_now(session, tenant)
    problem = _check(form, now.date())
    if problem is not None:
        return replace(page, error=problem)
    account = page.account
    account.individual = {
        "first_name": form.first_name.strip(),
        "last_name": form.last_name.strip(),
        "dob": form.dob,
    }
    account.tos_accepted_at = now
    account.tos_accepted_ip = from_address
    account.onboarding_status = "complete"
    account.updated_at = utcnow()
    link.used_at = now
    await session.flush()
    await at_processor.start_details(session, tenant, account, at_processor.HOLDER)
    await announce(session, tenant, account, "connected_account.updated")
    logger.info("connected_account_onboarded", connected_account=account.id)
    return replace(page, state="done")
