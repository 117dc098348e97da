"""What a subscription checkout takes and shows (spec 4.M rule 7): the invoice it collects, how often
it renews, who sells, and the payer's consent to save the card and to renew."""

from __future__ import annotations

from dataclasses import dataclass

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.billing import catalog, repository
from moneyrail.connect import service as connect
from moneyrail.engine.clock import tenant_now
from moneyrail.errors import (
    Conflict,
    ReferencedResourceMissing,
    ResourceMissing,
)
from moneyrail.installations import service as installations
from moneyrail.kit.tenant import Tenant
from moneyrail.models import Price, Subscription

from .subscriptions import (
    get_subscription,
)

logger = structlog.get_logger("moneyrail.billing")


# --- subscription checkout -------------------------------------------------------------------------------
@dataclass(frozen=True)
class CheckoutTerms:
    """What a subscription checkout takes and shows: decided here, never by the form."""

    subscription_id: str
    invoice_id: str | None
    payment_intent_id: str | None  # none for a change with nothing due now (the page confirms it)
    frequency: str
    seller: str
    change_id: str | None = None


def frequency_of(price: Price) -> str:
    unit = price.interval
    return f"every {unit}" if price.interval_count == 1 else f"every {price.interval_count} {unit}s"


async def seller_of(session: AsyncSession, tenant: Tenant, subscription: Subscription) -> str:
    """The selling party: the merchant of record's name on a platform, else the installation's (never
    the developer firm, spec 4.M rule 7)."""
    snapshot = subscription.distribution or {}
    merchant_of_record = snapshot.get("merchant_of_record")
    if isinstance(merchant_of_record, str):
        try:
            account = await connect.get_connected_account(session, tenant, merchant_of_record)
        except ResourceMissing:
            account = None
        if account is not None and account.display_name:
            return str(account.display_name)
    installation = await installations.require_installation(session, tenant.installation_id)
    return installation.name


async def checkout_terms(
    session: AsyncSession, tenant: Tenant, subscription_id: str, invoice_id: str | None
) -> CheckoutTerms:
    """The invoice a subscription checkout collects: the first one of an incomplete subscription, or a
    failed one named by `invoice` (a recovery, on the same payment)."""
    subscription = await repository.get_subscription(session, tenant, subscription_id)
    if subscription is None:
        raise ReferencedResourceMissing(f"No such subscription: {subscription_id!r}", param="subscription")
    if invoice_id is None:
        if subscription.status != "incomplete" or subscription.latest_invoice_id is None:
            raise Conflict(
                f"This subscription is {subscription.status}: a checkout without `invoice` collects the "
                "first payment of an incomplete subscription; name a failed invoice to recover it.",
                param="subscription",
            )
        invoice_id = subscription.latest_invoice_id
        wanted = ("open",)
    else:
        wanted = ("failed",)
    invoice = await repository.get_invoice(session, tenant, invoice_id)
    if invoice is None or invoice.subscription_id != subscription.id:
        raise ReferencedResourceMissing(f"No such invoice: {invoice_id!r}", param="invoice")
    if invoice.status not in wanted or subscription.status == "canceled":
        raise Conflict(
            f"This invoice is {invoice.status} and the subscription {subscription.status}: there is "
            "nothing to collect through a checkout.",
            param="invoice",
        )
    price = await catalog.get_price(session, tenant, subscription.price_id)
    return CheckoutTerms(
        subscription_id=subscription.id,
        invoice_id=invoice.id,
        payment_intent_id=invoice.payment_intent_id,
        frequency=frequency_of(price),
        seller=await seller_of(session, tenant, subscription),
    )


@dataclass(frozen=True)
class CheckoutDisplay:
    seller: str
    frequency: str


async def checkout_display(session: AsyncSession, tenant: Tenant, subscription_id: str) -> CheckoutDisplay:
    """What the hosted page shows beside the amount: who sells, and how often it renews."""
    subscription = await get_subscription(session, tenant, subscription_id)
    price = await catalog.get_price(session, tenant, subscription.price_id)
    return CheckoutDisplay(
        seller=await seller_of(session, tenant, subscription), frequency=frequency_of(price)
    )


async def record_renewal_consent(session: AsyncSession, tenant: Tenant, subscription_id: str) -> None:
    """The payer ticked the consent to save the card and to renew, on the hosted page."""
    subscription = await get_subscription(session, tenant, subscription_id, lock=True)
    subscription.renewal_consented_at = await tenant_now(session, tenant)
    await session.flush()
