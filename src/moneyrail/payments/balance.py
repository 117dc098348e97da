"""The direct installation's balance, derived from the ledger, and payment quotes."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.kit.tenant import Tenant
from moneyrail.ledger import service as ledger

from . import fees
from .schemas import PaymentQuoteCreate
from .service import check_amount_covers, commission_policy, resolve_funds_flow


@dataclass(frozen=True)
class BalanceView:
    available: dict[str, int]
    pending: dict[str, int]
    fees_outstanding: dict[str, int]


async def get_balance(session: AsyncSession, tenant: Tenant) -> BalanceView:
    """Per currency, from the postings themselves (ARCHITECTURE.md invariant 3): no balance row."""
    view = BalanceView(available={}, pending={}, fees_outstanding={})
    for account in await ledger.balances(
        session, tenant, [fees.BALANCE_AVAILABLE, fees.BALANCE_PENDING, fees.FEES_OWED]
    ):
        if account.code == fees.BALANCE_AVAILABLE:
            view.available[account.currency] = account.amount
        elif account.code == fees.BALANCE_PENDING:
            view.pending[account.currency] = account.amount
        elif account.amount < 0:
            view.fees_outstanding[account.currency] = -account.amount
    return view


@dataclass(frozen=True)
class Quote:
    amount: int
    currency: str
    basis_points: int
    fixed_amount: int
    reserve: int
    prior_recovery: int
    proceeds: int
    amount_fixed: bool

    def funds_flow(self) -> list[tuple[str, str, int]]:
        """(party, role, amount): the proceeds always, the service's parts when there are any."""
        flow = [
            ("installation", "proceeds", self.proceeds),
            ("service", "commission_reserve", self.reserve),
            ("service", "prior_recovery", self.prior_recovery),
        ]
        return [item for item in flow if item[2] or item[1] == "proceeds"]


async def quote_payment(session: AsyncSession, tenant: Tenant, command: PaymentQuoteCreate) -> Quote:
    """What a payment of this amount would do, without creating it: the same rules as creation."""
    policy = await commission_policy(session, tenant)
    reserve = policy.reserve(command.amount)
    await resolve_funds_flow(
        session,
        tenant,
        command.merchant,
        command.distribution,
        amount=command.amount,
        commission=reserve or 0,
    )
    check_amount_covers(command.amount, reserve, "amount")
    withheld = reserve or 0
    recovery = await fees.prior_recovery_for(
        session, tenant, command.currency, command.amount - withheld, lock=False
    )
    return Quote(
        amount=command.amount,
        currency=command.currency,
        basis_points=policy.basis_points,
        fixed_amount=policy.fixed_amount,
        reserve=withheld,
        prior_recovery=recovery,
        proceeds=command.amount - withheld - recovery,
        amount_fixed=reserve is not None,
    )
