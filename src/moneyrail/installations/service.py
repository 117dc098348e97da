"""Installations, keys and per-environment settings: what the operator CLI and `moneyrail dev` call."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.api import keys
from moneyrail.config import get_settings
from moneyrail.db.uow import UnitOfWork
from moneyrail.errors import ParameterInvalid, ResourceMissing
from moneyrail.kit.clock import utcnow
from moneyrail.kit.crypto import hash_secret
from moneyrail.kit.ids import new_id, random_base62
from moneyrail.kit.scopes import unknown_scopes
from moneyrail.kit.tenant import Tenant
from moneyrail.kit.ttl_cache import TtlCache
from moneyrail.models import ApiKey, EnvironmentSettings, Installation, PublishableKey
from moneyrail.models.installation import INSTALLATION_KINDS

from . import repository

SECRET_KEY_RANDOM_LENGTH = 32


@dataclass(frozen=True)
class CommissionTerms:
    basis_points: int
    fixed_amount: int


def _key_cache_seconds() -> float:
    return get_settings().key_cache_seconds


# The environment's active publishable key, shown by every payment answer: remembered as the keys are
# (api/keys.py).
_environment_publishable_keys: TtlCache[Tenant, str] = TtlCache(_key_cache_seconds)
# The environment's commission terms, read by every payment creation: an operator's change (the CLI,
# another process) applies to payments created from at most `key_cache_seconds` later.
_commission_terms: TtlCache[Tenant, CommissionTerms] = TtlCache(_key_cache_seconds)


def forget_cached_keys() -> None:
    """Every remembered key: the next request of each looks it up again."""
    keys.forget_cached_keys()
    _environment_publishable_keys.clear()
    _commission_terms.clear()


def environment_prefix(livemode: bool) -> str:
    return "live" if livemode else "test"


@dataclass(frozen=True)
class IssuedKey:
    key: ApiKey
    secret: str  # shown once, never stored


async def create_installation(session: AsyncSession, *, name: str, kind: str = "direct") -> Installation:
    if kind not in INSTALLATION_KINDS:
        raise ParameterInvalid(f"kind must be one of {', '.join(INSTALLATION_KINDS)}", param="kind")
    if not name.strip():
        raise ParameterInvalid("name must not be empty", param="name")
    installation = Installation(id=new_id("inst"), name=name.strip(), kind=kind)
    session.add(installation)
    await session.flush()
    for livemode in (False, True):
        # a sandbox runs on the simulator until its operator sets another; live mode never simulates
        session.add(
            EnvironmentSettings(
                installation_id=installation.id, livemode=livemode, processor=None if livemode else "sandbox"
            )
        )
        session.add(
            PublishableKey(
                id=new_id(f"pk_{environment_prefix(livemode)}"),
                installation_id=installation.id,
                livemode=livemode,
            )
        )
    await session.flush()
    return installation


async def require_installation(session: AsyncSession, installation_id: str) -> Installation:
    installation = await repository.get_installation(session, installation_id)
    if installation is None:
        raise ResourceMissing(f"No installation {installation_id!r}", param="installation")
    return installation


async def list_installations(session: AsyncSession) -> Sequence[Installation]:
    return await repository.list_installations(session)


async def create_api_key(
    session: AsyncSession, tenant: Tenant, *, scopes: Sequence[str], name: str = ""
) -> IssuedKey:
    await require_installation(session, tenant.installation_id)
    if not scopes:
        raise ParameterInvalid("a key needs at least one scope", param="scopes")
    unknown = unknown_scopes(scopes)
    if unknown:
        raise ParameterInvalid(f"unknown scopes: {', '.join(unknown)}", param="scopes")
    secret = f"sk_{environment_prefix(tenant.livemode)}_{random_base62(SECRET_KEY_RANDOM_LENGTH)}"
    key = ApiKey(
        id=new_id("key"),
        installation_id=tenant.installation_id,
        livemode=tenant.livemode,
        secret_hash=hash_secret(secret),
        secret_last4=secret[-4:],
        name=name,
        scopes=sorted(set(scopes)),
    )
    session.add(key)
    await session.flush()
    return IssuedKey(key=key, secret=secret)


async def list_api_keys(session: AsyncSession, installation_id: str) -> Sequence[ApiKey]:
    await require_installation(session, installation_id)
    return await repository.list_keys(session, installation_id)


async def revoke_api_key(session: AsyncSession, key_id: str) -> ApiKey:
    key = await repository.revoke_key(session, key_id, utcnow())
    if key is None:
        raise ResourceMissing(f"No API key {key_id!r}", param="key")
    keys.forget_secret_key(key.secret_hash)  # this process at once; the others within the cache lifetime
    return key


async def get_environment_settings(session: AsyncSession, tenant: Tenant) -> EnvironmentSettings:
    await require_installation(session, tenant.installation_id)
    return await repository.get_settings(session, tenant.installation_id, tenant.livemode)


async def environment_settings_of(session: AsyncSession, tenant: Tenant) -> EnvironmentSettings:
    """For a tenant that already authenticated (so its installation exists): one lookup, no check."""
    return await repository.get_settings(session, tenant.installation_id, tenant.livemode)


async def update_environment_settings(
    session: AsyncSession,
    tenant: Tenant,
    *,
    checkout_enabled: bool | None = None,
    recurring_enabled: bool | None = None,
    return_urls: Sequence[str] | None = None,
    oauth_redirect_uris: Sequence[str] | None = None,
    commission_basis_points: int | None = None,
    commission_fixed_amount: int | None = None,
    rate_limit_per_second: int | None = None,
    payout_bank_account: str | None = None,
) -> EnvironmentSettings:
    """None leaves a field as it is. rate_limit_per_second: -1 returns to the service-wide default."""
    settings = await get_environment_settings(session, tenant)
    if rate_limit_per_second is not None and rate_limit_per_second < -1:
        raise ParameterInvalid(
            "the rate limit is requests per second, 0 for none, -1 for the default", param="rate_limit"
        )
    if commission_basis_points is not None and not 0 <= commission_basis_points <= 10_000:
        raise ParameterInvalid("commission basis points must be 0 to 10000", param="commission_basis_points")
    if commission_fixed_amount is not None and commission_fixed_amount < 0:
        raise ParameterInvalid("the fixed commission must not be negative", param="commission_fixed_amount")
    for url in return_urls or ():
        if not url.startswith(("https://", "http://")):
            raise ParameterInvalid(f"return URL {url!r} is not an http(s) URL", param="return_urls")
    for uri in oauth_redirect_uris or ():
        if not uri.startswith(("https://", "http://")) or "#" in uri:
            raise ParameterInvalid(
                f"OAuth redirect URI {uri!r} is not an http(s) URL without a fragment",
                param="oauth_redirect_uris",
            )
    if payout_bank_account is not None:
        payout_bank_account = re.sub(r"[\s-]", "", payout_bank_account)
        if not re.fullmatch(r"[A-Za-z0-9]{6,34}", payout_bank_account):
            raise ParameterInvalid(
                "the payout bank account is 6 to 34 digits or letters (an account number or IBAN)",
                param="payout_bank_account",
            )
        settings.payout_bank_account = payout_bank_account
    if checkout_enabled is not None:
        settings.checkout_enabled = checkout_enabled
    if recurring_enabled is not None:
        settings.recurring_enabled = recurring_enabled
    if return_urls is not None:
        settings.return_urls = list(dict.fromkeys(return_urls))
    if oauth_redirect_uris is not None:
        settings.oauth_redirect_uris = list(dict.fromkeys(oauth_redirect_uris))
    if commission_basis_points is not None:
        settings.commission_basis_points = commission_basis_points
    if commission_fixed_amount is not None:
        settings.commission_fixed_amount = commission_fixed_amount
    if rate_limit_per_second is not None:
        settings.rate_limit_per_second = None if rate_limit_per_second == -1 else rate_limit_per_second
    settings.updated_at = utcnow()
    await session.flush()
    _commission_terms.discard(tenant)  # this process at once; the others within the cache lifetime
    return settings


@dataclass(frozen=True)
class AccountView:
    installation: Installation
    settings: EnvironmentSettings
    publishable_key: str | None


async def publishable_key(work: AsyncSession | UnitOfWork, tenant: Tenant) -> str | None:
    """The environment's active publishable key, for client-side confirmation; every payment answer and
    event shows it. Remembered for `key_cache_seconds` across requests, as the keys themselves are;
    given the unit of work, it makes no session (a lone statement on a miss)."""
    key = _environment_publishable_keys.get(tenant)
    if key is None:
        key = await repository.get_publishable_key(work, tenant.installation_id, tenant.livemode)
        if key is not None:
            _environment_publishable_keys.put(tenant, key)
    return key


async def commission_terms(work: AsyncSession | UnitOfWork, tenant: Tenant) -> CommissionTerms:
    """For a tenant that already authenticated (so its installation exists): one lookup, no check,
    remembered for `key_cache_seconds`; given the unit of work, it makes no session (a lone statement
    on a miss, of committed state or of the transaction the unit of work has begun)."""
    terms = _commission_terms.get(tenant)
    if terms is None:
        basis_points, fixed_amount = await repository.get_commission_terms(
            work, tenant.installation_id, tenant.livemode
        )
        terms = CommissionTerms(basis_points, fixed_amount)
        _commission_terms.put(tenant, terms)
    return terms


async def get_account(session: AsyncSession, tenant: Tenant) -> AccountView:
    installation = await require_installation(session, tenant.installation_id)
    settings = await repository.get_settings(session, tenant.installation_id, tenant.livemode)
    publishable_key = await repository.get_publishable_key(session, tenant.installation_id, tenant.livemode)
    return AccountView(installation=installation, settings=settings, publishable_key=publishable_key)
