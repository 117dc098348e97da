"""A payment intent's `distribution`, checked at creation (CONVENTIONS.md §8, §12, §13).

Rules: only a platform installation distributes; every recipient is a connected account (`acct_`) of
this installation and environment (processor identifiers are refused, and a `mer_` merchant with the
`acct_` it is paid through named; a merchant's account while its connection is not active too); the
allocations' amounts sum exactly to the payment's amount; `merchant_of_record`, when given, is the
recipient of a `merchant` allocation; the commission is taken from the `merchant` allocations in
proportion (largest remainder, kit/money.py), so they must be able to carry it.

Payments' own (its table is the payment's): transfers/ reads the recorded plan when the money is captured.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.connect import merchants as merchant_accounts
from moneyrail.connect import service as connect
from moneyrail.errors import DistributionInvalid
from moneyrail.kit.ids import looks_like_id
from moneyrail.kit.money import split_largest_remainder
from moneyrail.kit.tenant import Tenant
from moneyrail.merchants import service as merchant_connections
from moneyrail.models import ConnectedAccount, PaymentDistribution, PaymentIntent

ROLES = ("merchant", "developer", "courier", "driver", "other")


@dataclass(frozen=True)
class PlannedAllocation:
    recipient: str
    role: str
    amount: int
    commission: int
    metadata: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class DistributionPlan:
    merchant_of_record: str | None
    allocations: list[PlannedAllocation]

    def as_rows(self) -> list[dict[str, Any]]:
        return [
            {
                "recipient": item.recipient,
                "role": item.role,
                "amount": item.amount,
                "commission": item.commission,
                "metadata": item.metadata,
            }
            for item in self.allocations
        ]


def commission_shares(commission: int, allocations: list[tuple[str, int]]) -> list[int]:
    """The commission taken from `(role, amount)` allocations: from the merchant ones in proportion to
    their amounts; only when they cannot carry it all (a prior recovery larger than their total), in
    proportion to every allocation. Every unit kept, ties to the earlier allocation."""
    if commission == 0:
        return [0] * len(allocations)
    merchant_total = sum(amount for role, amount in allocations if role == "merchant")
    if merchant_total >= commission:
        weights = [amount if role == "merchant" else 0 for role, amount in allocations]
    else:
        weights = [amount for _, amount in allocations]
    return split_largest_remainder(commission, weights)


async def merchant_refusals(
    session: AsyncSession, tenant: Tenant, accounts: Iterable[ConnectedAccount]
) -> dict[str, str]:
    """acct id -> why it receives no money now: the merchant it pays is not connected (revoked, denied)."""
    paying = {account.id: account.merchant_id for account in accounts if account.merchant_id}
    unpayable = await merchant_connections.unpayable_merchants(session, tenant, list(paying.values()))
    return {
        account_id: (
            f"{account_id} pays merchant {merchant_id}, whose connection is {unpayable[merchant_id]}: it "
            "receives money again once the merchant connects again "
            "(POST /v1/merchants/{id}/consent-sessions)."
        )
        for account_id, merchant_id in paying.items()
        if merchant_id in unpayable
    }


def _refuse(message: str, param: str) -> DistributionInvalid:
    return DistributionInvalid(message, param=param)


async def plan_distribution(
    session: AsyncSession,
    tenant: Tenant,
    distribution: Any,  # payments.schemas.DistributionIn: its fields, without importing payments
    *,
    installation_kind: str,
    amount: int,
    commission: int,
) -> DistributionPlan:
    if installation_kind != "platform":
        raise _refuse(
            "Only a platform installation distributes payments; this one is direct (its payments land in "
            "its own balance).",
            "distribution",
        )
    items = list(distribution.allocations)
    for index, item in enumerate(items):
        param = f"distribution[allocations][{index}]"
        if item.basis_points is not None:
            raise _refuse(
                "A payment intent's allocations take `amount` in minor units; basis_points are for "
                "subscriptions.",
                f"{param}[basis_points]",
            )
        if item.amount is None or isinstance(item.amount, bool) or item.amount < 1:
            raise _refuse(
                "Each allocation needs a positive integer `amount` in minor units.", f"{param}[amount]"
            )
        if item.role not in ROLES:
            raise _refuse(f"role must be one of {', '.join(ROLES)}.", f"{param}[role]")
        if looks_like_id(item.recipient, "mer"):
            reason = await merchant_accounts.merchant_is_not_a_recipient(session, tenant, item.recipient)
            raise _refuse(reason, f"{param}[recipient]")
        if not looks_like_id(item.recipient, "acct"):
            raise _refuse(
                "A recipient is a connected account id (acct_) of this installation; processor "
                "identifiers and other ids are not accepted.",
                f"{param}[recipient]",
            )
    found = await connect.find_recipients(session, tenant, [item.recipient for item in items])
    refusals = await merchant_refusals(session, tenant, found.values())
    for index, item in enumerate(items):
        if item.recipient not in found:
            raise _refuse(
                f"No such recipient in this installation's {tenant.environment}: {item.recipient!r}.",
                f"distribution[allocations][{index}][recipient]",
            )
        if item.recipient in refusals:
            raise _refuse(refusals[item.recipient], f"distribution[allocations][{index}][recipient]")
    total = sum(item.amount for item in items)
    if total != amount:
        raise _refuse(
            f"The allocations sum to {total}; they must sum exactly to the payment's amount ({amount}).",
            "distribution[allocations]",
        )
    merchants = {item.recipient for item in items if item.role == "merchant"}
    if distribution.merchant_of_record is not None and distribution.merchant_of_record not in merchants:
        raise _refuse(
            "merchant_of_record must be the recipient of an allocation with role `merchant`.",
            "distribution[merchant_of_record]",
        )
    merchant_total = sum(item.amount for item in items if item.role == "merchant")
    if commission > merchant_total:
        raise _refuse(
            f"The commission ({commission}) is taken from the `merchant` allocations, which total "
            f"{merchant_total}: they cannot carry it.",
            "distribution[allocations]",
        )
    shares = commission_shares(commission, [(item.role, item.amount) for item in items])
    return DistributionPlan(
        distribution.merchant_of_record,
        [
            PlannedAllocation(item.recipient, item.role, item.amount, share, dict(item.metadata))
            for item, share in zip(items, shares, strict=True)
        ],
    )


async def describe(session: AsyncSession, payments: Sequence[PaymentIntent]) -> dict[str, dict[str, Any]]:
    """The distribution each of these payments declared, as the payment intent shows it."""
    payment_ids = [payment.id for payment in payments if payment.has_distribution]
    if not payment_ids:
        return {}
    rows = await session.scalars(
        select(PaymentDistribution).where(PaymentDistribution.payment_intent_id.in_(payment_ids))
    )
    return {
        row.payment_intent_id: {
            "merchant_of_record": row.merchant_of_record,
            "allocations": [
                {key: item[key] for key in ("recipient", "role", "amount", "commission")}
                for item in row.allocations
            ],
            "allocation_group": row.allocation_group_id,
        }
        for row in rows
    }


async def record_distribution(
    session: AsyncSession, tenant: Tenant, payment_id: str, plan: DistributionPlan
) -> PaymentDistribution:
    distribution = PaymentDistribution(
        payment_intent_id=payment_id,
        installation_id=tenant.installation_id,
        livemode=tenant.livemode,
        merchant_of_record=plan.merchant_of_record,
        allocations=plan.as_rows(),
    )
    session.add(distribution)
    await session.flush()
    return distribution
