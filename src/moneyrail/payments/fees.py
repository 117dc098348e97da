"""Fees and the money of a payment in the ledger (CONVENTIONS.md §7).

How a payment's money moves (accounts of the installation, per currency; + adds to a balance):

    capture of A          world:card_network -A, balance:pending +(A - R - Q),
                          service:reserve +R, fees:owed +Q
    cost C reported       service:reserve -R, service:commission +K, fees:owed -(K - R),
                          service:commission -C, world:processor_costs +C,
                          balance:pending -P, balance:available +P          (the proceeds settle)
    refund of X           world:card_network +X, balance:pending -y, balance:available -(X - y)

R is the reserve the commission policy set at creation (0 without a policy). K, the final commission,
is max(R, C): the service never takes less than what the payment really cost, and missing cost data
is not zero commission, so K stays unknown (fees `pending`) until the processor reports C. The
reserve is what was `collected`; a shortfall K - R is this payment's `outstanding`, a debt on
`fees:owed` that the next captures recover (Q, their `prior_recovery`) before anything reaches the
balance. P is what this payment still has in the pending balance; y is the part of a refund it covers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.db.raw import WriteAt
from moneyrail.kit.tenant import Tenant
from moneyrail.ledger import service as ledger
from moneyrail.models import PaymentIntent, Refund
from moneyrail.processor.interface import CostReport

from .repository import MoreColumns

logger = structlog.get_logger("moneyrail.payments")

BALANCE_PENDING = "balance:pending"
BALANCE_AVAILABLE = "balance:available"
FEES_OWED = "fees:owed"
SERVICE_RESERVE = "service:reserve"
SERVICE_COMMISSION = "service:commission"
WORLD_CARD_NETWORK = "world:card_network"
WORLD_PROCESSOR_COSTS = "world:processor_costs"


# Called in the transaction where a payment's fees become final (its proceeds settle): the transfers
# domain settles what it paid out of this payment into its recipients' available balances.
SettlementListener = Callable[[AsyncSession, Tenant, PaymentIntent], Awaitable[None]]
_settlement_listeners: list[SettlementListener] = []


def register_settlement_listener(listener: SettlementListener) -> None:
    if listener not in _settlement_listeners:
        _settlement_listeners.append(listener)


def take_for_transfer(payment: PaymentIntent, amount: int) -> int:
    """A transfer out of this payment's proceeds: the part still pending settlement leaves the pending
    balance (and is no longer this payment's to settle); the rest leaves the available balance."""
    from_pending = min(amount, payment.amount_pending_settlement)
    payment.amount_pending_settlement -= from_pending
    return from_pending


def return_from_reversal(payment: PaymentIntent, from_pending: int) -> None:
    """A reversal brings back money that had left the pending balance: it settles with the payment again."""
    payment.amount_pending_settlement += from_pending


def commission_reserve(amount: int, basis_points: int, fixed_amount: int) -> int:
    """The policy's commission on an amount: basis points rounded half up, plus the fixed part."""
    return (amount * basis_points + 5_000) // 10_000 + fixed_amount


def _legs(currency: str, *legs: tuple[str, int]) -> list[ledger.Posting]:
    return [ledger.Posting(account, amount, currency) for account, amount in legs if amount != 0]


async def outstanding_fees(session: AsyncSession, tenant: Tenant, currency: str) -> int:
    """What earlier payments' costs still owe the service in this currency (0 or more)."""
    return max(0, -await ledger.balance(session, tenant, FEES_OWED, currency))


async def prior_recovery_for(
    session: AsyncSession, tenant: Tenant, currency: str, proceeds: int, *, lock: bool
) -> int:
    """How much of `proceeds` goes to earlier shortfalls. With `lock`, concurrent captures take turns
    on the debt, so two of them never recover the same shortfall twice; without a debt, no lock at all."""
    if await outstanding_fees(session, tenant, currency) == 0:
        return 0
    if lock:
        account = await ledger.ensure_account(session, tenant, FEES_OWED, currency)
        await ledger.lock_accounts(session, [account.id])
    return min(await outstanding_fees(session, tenant, currency), max(proceeds, 0))


# The accounts a capture posts to; `capture_outlook` asks which exist and whether `fees:owed` is short.
_CAPTURE_ACCOUNTS = [WORLD_CARD_NETWORK, BALANCE_PENDING, SERVICE_RESERVE, FEES_OWED]


def capture_outlook(tenant: Tenant, currency: str) -> MoreColumns:
    """The columns of a capture's `ledger.AccountsOutlook` for a statement it runs before capturing (its
    parameters numbered from the one given): read once the payment is locked, they let `post_capture`
    write its postings with the capture's last statement."""

    def columns(first_parameter: int) -> tuple[str, Sequence[Any]]:
        parameters = (tenant.installation_id, tenant.livemode, FEES_OWED, currency, _CAPTURE_ACCOUNTS)
        return ledger.accounts_outlook_columns(first_parameter), parameters

    return columns


def read_capture_outlook(columns: Mapping[str, Any]) -> ledger.AccountsOutlook:
    return ledger.AccountsOutlook(int(columns["guard_balance"]), frozenset(columns["existing_accounts"]))


async def post_capture(
    session: AsyncSession,
    tenant: Tenant,
    payment: PaymentIntent,
    outlook: ledger.AccountsOutlook | None = None,
) -> list[WriteAt]:
    """The capture's postings; what is left to write with the capture's last statement comes back.

    `outlook`: read in this transaction since the payment was locked (`capture_outlook`). When it shows
    no shortfall on `fees:owed` and every account the postings need, nothing is written here: the
    postings come back as writes for the last statement, one round trip fewer. That balance is read
    without a lock either way (before, in the posting's own statement): a shortfall recorded after the
    read is recovered by a later capture, as one recorded just after the posting's snapshot was.
    """
    captured = payment.amount_received
    reserve = payment.fee_reserve or 0

    def capture_legs(recovery: int) -> list[ledger.Posting]:
        return _legs(
            payment.currency,
            (WORLD_CARD_NETWORK, -captured),
            (BALANCE_PENDING, captured - reserve - recovery),
            (SERVICE_RESERVE, reserve),
            (FEES_OWED, recovery),
        )

    journal = {"kind": "payment_capture", "reference": payment.id, "idempotency_key": f"{payment.id}:capture"}
    recovery = 0
    legs = capture_legs(0)
    if (
        outlook is not None
        and outlook.guard_balance >= 0
        and all(leg.account in outlook.existing for leg in legs)
    ):
        payment.fee_prior_recovery = 0
        payment.amount_pending_settlement = captured - reserve
        return ledger.post_with(tenant, postings=legs, **journal)
    # Without an outlook (an automatic capture, a listener to run) or with an account to create: posted
    # now. No earlier shortfall to recover: the check rides in the posting's statement. With one, nothing
    # was written: the debt is recovered under its lock, as `prior_recovery_for` does.
    if (
        await ledger.post_if_not_negative(
            session, tenant, guard=(FEES_OWED, payment.currency), postings=legs, **journal
        )
        is None
    ):
        recovery = await prior_recovery_for(session, tenant, payment.currency, captured - reserve, lock=True)
        await ledger.post(session, tenant, postings=capture_legs(recovery), **journal)
    payment.fee_prior_recovery = recovery
    payment.amount_pending_settlement = captured - reserve - recovery
    return []


async def post_captures(session: AsyncSession, tenant: Tenant, payments: Sequence[PaymentIntent]) -> None:
    """`post_capture` for payments captured together: with no shortfall to recover in their currency
    (the usual case), their postings in one statement; otherwise each in turn, under the debt's lock."""
    by_currency: dict[str, list[PaymentIntent]] = {}
    for payment in payments:
        by_currency.setdefault(payment.currency, []).append(payment)
    for currency, captured in by_currency.items():
        if await outstanding_fees(session, tenant, currency) != 0:
            for payment in captured:
                await post_capture(session, tenant, payment)
            continue
        entries = []
        for payment in captured:
            reserve = payment.fee_reserve or 0
            proceeds = payment.amount_received - reserve
            entries.append(
                ledger.Entry(
                    kind="payment_capture",
                    reference=payment.id,
                    idempotency_key=f"{payment.id}:capture",
                    postings=_legs(
                        currency,
                        (WORLD_CARD_NETWORK, -payment.amount_received),
                        (BALANCE_PENDING, proceeds),
                        (SERVICE_RESERVE, reserve),
                        (FEES_OWED, 0),
                    ),
                )
            )
            payment.fee_prior_recovery = 0
            payment.amount_pending_settlement = proceeds
        await ledger.post_many(session, tenant, entries)


async def post_final_fees(
    session: AsyncSession, tenant: Tenant, payment: PaymentIntent, report: CostReport, now: datetime
) -> None:
    reserve = payment.fee_reserve or 0
    cost = report.cost_amount
    commission = max(reserve, cost)
    shortfall = commission - reserve
    settling = payment.amount_pending_settlement
    # one account may appear in two legs (service:commission): the ledger sums per account
    await ledger.post(
        session,
        tenant,
        kind="payment_fees_final",
        reference=payment.id,
        idempotency_key=f"{payment.id}:fees",
        postings=_legs(
            payment.currency,
            (SERVICE_RESERVE, -reserve),
            (FEES_OWED, -shortfall),
            (SERVICE_COMMISSION, commission - cost),
            (WORLD_PROCESSOR_COSTS, cost),
            (BALANCE_PENDING, -settling),
            (BALANCE_AVAILABLE, settling),
        ),
    )
    payment.processing_cost = cost
    payment.fee_commission = commission
    payment.fee_collected = reserve
    payment.fee_outstanding = shortfall
    payment.fee_status = "final"
    payment.fees_finalized_at = now
    payment.amount_pending_settlement = 0
    for listener in _settlement_listeners:
        await listener(session, tenant, payment)
    logger.info(
        "payment_fees_final",
        payment_intent=payment.id,
        currency=payment.currency,
        cost=cost,
        commission=commission,
        outstanding=shortfall,
    )


async def post_refund(session: AsyncSession, tenant: Tenant, payment: PaymentIntent, refund: Refund) -> None:
    from_pending = min(refund.amount, payment.amount_pending_settlement)
    await ledger.post(
        session,
        tenant,
        kind="refund",
        reference=refund.id,
        idempotency_key=f"{refund.id}:refund",
        postings=_legs(
            payment.currency,
            (WORLD_CARD_NETWORK, refund.amount),
            (BALANCE_PENDING, -from_pending),
            (BALANCE_AVAILABLE, -(refund.amount - from_pending)),
        ),
    )
    payment.amount_pending_settlement -= from_pending
