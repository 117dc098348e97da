"""Distribution versions of a platform subscription (spec 4.M rules 1, 2, 6; issue 16.2).

`POST /v1/subscriptions/{id}/distribution` versions the beneficiary shares for invoices opened later:
each cycle invoice (and an upgrade difference) takes an immutable snapshot of the distribution in force
when it is opened (`_open_invoice`), so a new version never alters a cycle already begun, including one
waiting for bank authentication. `expected_version` is the subscription's `distribution_version`.
"""

from __future__ import annotations

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.errors import Conflict, DistributionInvalid, SubscriptionVersionConflict
from moneyrail.kit.clock import utcnow
from moneyrail.kit.tenant import Tenant
from moneyrail.models import Subscription
from moneyrail.payments import distribution as distributions
from moneyrail.payments import service as payments

from . import catalog, service
from .schemas import DistributionUpdate

logger = structlog.get_logger("moneyrail.billing.distribution")


async def update_distribution(
    session: AsyncSession, tenant: Tenant, subscription_id: str, command: DistributionUpdate
) -> Subscription:
    subscription = await service.get_subscription(session, tenant, subscription_id, lock=True)
    if subscription.distribution_version != command.expected_version:
        raise SubscriptionVersionConflict(
            f"expected_version {command.expected_version} is not this subscription's distribution_version "
            f"({subscription.distribution_version}): read it again.",
            param="expected_version",
        )
    if subscription.distribution is None:
        raise Conflict(
            "This subscription distributes nothing (a direct installation's): it has no distribution to "
            "version.",
            param="distribution",
        )
    if subscription.status == "canceled":
        raise Conflict("This subscription is canceled: no later invoice would use a new distribution.")
    snapshot = service.checked_distribution(command.distribution)
    if snapshot.get("merchant_of_record") != subscription.distribution.get("merchant_of_record"):
        raise DistributionInvalid(
            "A distribution version keeps the seller (merchant_of_record); another seller needs a new "
            "subscription and new consent.",
            param="distribution.merchant_of_record",
        )
    # whom it names, checked as a cycle's payment will be: recipients of this installation and
    # environment, and a commission the merchant allocations cover
    price = await catalog.get_price(session, tenant, subscription.price_id)
    amount = catalog.cycle_amount(price, subscription.quantity)
    reserve = (await payments.commission_policy(session, tenant)).reserve(amount)
    await distributions.plan_distribution(
        session,
        tenant,
        service.cycle_distribution(snapshot, amount),
        installation_kind="platform",
        amount=amount,
        commission=reserve or 0,
    )
    subscription.distribution = snapshot
    subscription.distribution_version += 1
    subscription.updated_at = utcnow()
    await session.flush()
    await service.announce_subscription(session, tenant, subscription)
    logger.info(
        "subscription_distribution_versioned",
        subscription=subscription.id,
        distribution_version=subscription.distribution_version,
    )
    return subscription
