"""Fees become final when the processor reports a payment's real cost (CONVENTIONS.md §7): a sweep of
the leading scheduler, each tenant on its own clock, and the sandbox's due work when its clock advances;
on Stripe also as soon as its webhook reports the charge's balance transaction (`report_cost_of`).

The scheduler's sweep keeps no transaction open while it asks the processor (ARCHITECTURE.md, "The
processor is an outside system"): the payments awaiting their cost are read in one unit of work, the
reports asked with none open, and the fees finalized in the next, each payment read again under its lock.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime, timedelta

import structlog
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from moneyrail.config import get_settings
from moneyrail.db.uow import UnitOfWork
from moneyrail.engine.clock import tenant_now
from moneyrail.engine.schedule import register_periodic_outside
from moneyrail.kit.tenant import Tenant
from moneyrail.processor import provider
from moneyrail.processor.interface import CostReport, Processor, ProcessorUnavailable
from moneyrail.sandbox.service import register_due_work

from . import fees, repository
from .service import announce

logger = structlog.get_logger("moneyrail.payments")

REPORT_BATCH = 200


async def report_costs(
    session: AsyncSession,
    *,
    tenant: Tenant | None,
    captured_before: datetime,
    processor: Processor | None = None,
) -> int:
    """Finalize the fees of captured payments whose real cost the processor now reports."""
    finalized = 0
    awaiting = await repository.payments_awaiting_cost(session, tenant, captured_before, REPORT_BATCH)
    network = processor or (provider.routed() if awaiting else None)
    for payment in awaiting:
        assert network is not None and payment.processor_authorization is not None
        owner = Tenant(payment.installation_id, payment.livemode)
        now = await tenant_now(session, owner)
        try:
            report = await network.cost_report(
                owner, authorization_id=payment.processor_authorization, as_of=now
            )
        except ProcessorUnavailable as fault:
            logger.warning("cost_report_unavailable", payment_intent=payment.id, error=str(fault))
            continue  # the next sweep asks again
        if report is None:
            continue
        await fees.post_final_fees(session, owner, payment, report, now)
        await session.flush()
        await announce(session, owner, payment, "payment_intent.fees_finalized")
        finalized += 1
    return finalized


async def report_cost_of(
    session: AsyncSession, tenant: Tenant, authorization_id: str, processor: Processor
) -> str:
    """The processor reports it has booked a charge (Stripe's `charge.*` events with a balance
    transaction): the payment's fees become final now if it is captured and they are still pending.
    ProcessorUnavailable: asked again by the caller's retry. What it did, for the report's record."""
    payment = await repository.payment_by_authorization(session, tenant, authorization_id)
    if payment is None:
        return "no payment of this environment was made by this charge"
    if payment.fee_status != "pending" or payment.captured_at is None:
        return f"{payment.id}: fees {payment.fee_status}, nothing to finalize"
    now = await tenant_now(session, tenant)
    report = await processor.cost_report(tenant, authorization_id=authorization_id, as_of=now)
    if report is None:
        return f"{payment.id}: the processor has not booked its cost yet"
    await fees.post_final_fees(session, tenant, payment, report, now)
    await session.flush()
    await announce(session, tenant, payment, "payment_intent.fees_finalized")
    return f"{payment.id}: fees final"


@dataclass(frozen=True)
class _Awaiting:
    tenant: Tenant
    payment_id: str
    authorization_id: str
    now: datetime  # the tenant's present when asked


REPORTS_IN_FLIGHT = 16  # cost reports asked of the processor at once


async def report_due_costs(
    sessionmaker: async_sessionmaker[AsyncSession], processor: Processor | None = None
) -> int:
    """The scheduler's sweep: each tenant on its own clock (a sandbox's may run days ahead)."""
    days = timedelta(days=get_settings().sandbox_cost_report_days)
    awaiting: list[_Awaiting] = []
    async with UnitOfWork(sessionmaker) as uow:
        session = uow.session
        for tenant in await repository.tenants_awaiting_cost(session):
            now = await tenant_now(session, tenant)
            awaiting.extend(
                _Awaiting(tenant, payment.id, payment.processor_authorization or "", now)
                for payment in await repository.payments_awaiting_cost(
                    session, tenant, now - days, REPORT_BATCH
                )
            )
    if not awaiting:
        return 0
    network = processor or provider.routed()
    in_flight = asyncio.Semaphore(REPORTS_IN_FLIGHT)

    async def ask(one: _Awaiting) -> CostReport | None:
        async with in_flight:
            try:
                return await network.cost_report(
                    one.tenant, authorization_id=one.authorization_id, as_of=one.now
                )
            except ProcessorUnavailable as fault:
                logger.warning("cost_report_unavailable", payment_intent=one.payment_id, error=str(fault))
                return None  # the next sweep asks again

    reports = await asyncio.gather(*(ask(one) for one in awaiting))
    finalized = 0
    async with UnitOfWork(sessionmaker) as uow:
        session = uow.session
        for one, report in zip(awaiting, reports, strict=True):
            if report is None:
                continue
            payment = await repository.get_payment(session, one.tenant, one.payment_id, for_update=True)
            if payment is None or payment.fee_status != "pending":
                continue  # finalized meanwhile (a sandbox clock advance)
            await fees.post_final_fees(session, one.tenant, payment, report, one.now)
            await session.flush()
            await announce(session, one.tenant, payment, "payment_intent.fees_finalized")
            finalized += 1
        await uow.commit()
    return finalized


async def _report_costs_on_advance(session: AsyncSession, tenant: Tenant, now: datetime) -> int:
    return await report_costs(session, tenant=tenant, captured_before=now)


register_periodic_outside(
    "payments.cost_reports", timedelta(seconds=get_settings().cost_report_sweep_seconds), report_due_costs
)
register_due_work("payments.cost_reports", _report_costs_on_advance)
