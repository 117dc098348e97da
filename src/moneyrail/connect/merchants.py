"""The connected account a merchant is paid through (spec 2: recipient ids are `acct_`, "connected account,
also used as a distribution recipient").

A merchant connected over OAuth gets one connected account of kind `merchant` when its code is
exchanged (the same one again after a revocation and a new consent). A distribution or a transfer names
that `acct_`, never the `mer_`: the merchant's id stays an identity the application holds, the account
is where its money goes. The account's only requirement is the bank account its payouts go to, given on
the consent form or, when the sandbox form left it due, on the merchant's activation page.
"""

from __future__ import annotations

from collections.abc import Sequence

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.kit.clock import utcnow
from moneyrail.kit.ids import new_id
from moneyrail.kit.tenant import Tenant
from moneyrail.models import ConnectedAccount
from moneyrail.processor.sandbox import TEST_BANK_ACCOUNT

from . import at_processor, repository
from .service import announce

logger = structlog.get_logger("moneyrail.connect")

DEFAULT_COUNTRY = "DE"


async def ensure_account_for_merchant(
    session: AsyncSession,
    tenant: Tenant,
    *,
    merchant_id: str,
    business_name: str | None,
    email: str | None,
    bank_account_due: bool,
) -> ConnectedAccount:
    """The merchant's connected account, created on its first connection; a later one keeps it."""
    existing = await repository.get_account_of_merchant(session, tenant, merchant_id)
    if existing is not None:
        existing.display_name = business_name or existing.display_name
        existing.email = email or existing.email
        existing.updated_at = utcnow()
        await session.flush()
        return existing
    number = None if bank_account_due or tenant.livemode else TEST_BANK_ACCOUNT
    account = ConnectedAccount(
        id=new_id("acct"),
        installation_id=tenant.installation_id,
        livemode=tenant.livemode,
        kind="merchant",
        country=DEFAULT_COUNTRY,
        email=email,
        display_name=business_name,
        bank_account_number=number,
        bank_last4=number[-4:] if number else None,
        onboarding_status="complete" if number else "pending",
        individual={},
        merchant_id=merchant_id,
        metadata_={},
        updated_at=utcnow(),
    )
    await repository.add(session, account)
    await at_processor.start_link(session, tenant, account)
    await announce(session, tenant, account, "connected_account.created")
    logger.info("merchant_account_created", connected_account=account.id, merchant=merchant_id)
    return account


async def record_merchant_bank_account(
    session: AsyncSession, tenant: Tenant, merchant_id: str, bank_account: str
) -> None:
    """The activation page collected the bank account: the merchant's account can be paid out."""
    account = await repository.get_account_of_merchant(session, tenant, merchant_id, for_update=True)
    if account is None:
        return
    account.bank_account_number = bank_account
    account.bank_last4 = bank_account[-4:]
    account.onboarding_status = "complete"
    account.updated_at = utcnow()
    await session.flush()
    await at_processor.start_details(session, tenant, account, at_processor.BANK_ACCOUNT)
    await announce(session, tenant, account, "connected_account.updated")


async def accounts_of_merchants(
    session: AsyncSession, tenant: Tenant, merchant_ids: Sequence[str]
) -> dict[str, str]:
    """merchant id -> the `acct_` id it is paid through, for those that have one."""
    return await repository.account_ids_of_merchants(session, tenant, merchant_ids)


async def merchant_is_not_a_recipient(session: AsyncSession, tenant: Tenant, merchant_id: str) -> str:
    """Why a `mer_` id cannot stand where a recipient goes, naming the `acct_` to use instead."""
    account = await repository.get_account_of_merchant(session, tenant, merchant_id)
    if account is None:
        return (
            f"{merchant_id} is not a recipient: a merchant is paid through its connected account (acct_), "
            "which it gets when its consent code is exchanged (POST /oauth/token); this one has none."
        )
    return (
        f"{merchant_id} is a merchant, not a recipient: name its connected account {account.id} "
        f"(the merchant's `connected_account`, GET /v1/merchants/{merchant_id})."
    )
