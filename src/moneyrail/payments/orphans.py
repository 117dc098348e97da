"""Charges the processor made that no payment recorded, released at the processor.

The processor commits on its own (an outside system), so a confirmation whose database transaction is
lost after the network authorized, or captured, leaves the payer's card charged with no payment owning
the charge. A retried confirmation finds it again (service.authorization_key); this sweep of the leading
scheduler releases what nobody retried: the processor's authorizations older than a grace period
(`MONEYRAIL_PROCESSOR_ORPHAN_GRACE_SECONDS`, real time) whose payment never recorded them are voided,
or refunded when captured, logged (`processor_orphan_released`) and recorded in `processor_orphans`,
which GET /metrics counts (`moneyrail_processor_orphans_total`).

Never a charge a payment owns: ownership is read again under the payment's lock, which a confirmation
holds from before its processor call until it commits (a slow commit is waited for, not raced), and which
a renewal takes again to record its charge. Before releasing, the payment's attempt count moves on
(committed), so a confirmation retried later asks the network afresh instead of replaying the released
authorization, and a renewal whose answer was not yet recorded asks again under its next key.

A confirmation on an outside processor runs in atomic phases (phases.py): it claims its payment and
commits before the call, and records the answer in a second transaction. A claim whose request died
between them is cleared here once its lease ended (`phases.CLAIM_LEASE`, shorter than the grace): the
authorization it may have left is then an orphan like any other, released unless a retry recorded it.

The sweep keeps no transaction open while it calls the network (ARCHITECTURE.md, "The processor is an
outside system"): it reads and locks what it needs in one unit of work, commits, calls, and writes what
the call answered in the next.
"""

from __future__ import annotations

from datetime import timedelta

import structlog
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from moneyrail.config import get_settings
from moneyrail.db.uow import UnitOfWork
from moneyrail.engine.schedule import register_periodic_outside
from moneyrail.kit.clock import utcnow
from moneyrail.kit.tenant import Tenant
from moneyrail.processor import provider
from moneyrail.processor.interface import (
    Processor,
    ProcessorAuthorizationRecord,
    ProcessorRefused,
    ProcessorUnavailable,
)

from . import phases, repository
from .service import CONFIRMABLE

logger = structlog.get_logger("moneyrail.payments")

BATCH = 200
BATCHES_PER_SWEEP = 10
# where a first sweep starts looking: charges older than this before it ran are not looked at
FIRST_LOOKBACK = timedelta(days=1)
_TICK = timedelta(microseconds=1)


class _CallInFlight(Exception):
    """The candidate's payment has a processor call in flight (phases.py): it may yet record it."""


async def sweep_orphans(
    sessionmaker: async_sessionmaker[AsyncSession],
    *,
    processor: Processor | None = None,
    grace: timedelta | None = None,
) -> int:
    """Release the orphans among the processor's authorizations created since the last sweep and at
    least `grace` ago; the number released. Each step in its own unit of work, none open across a call."""
    if grace is None:
        grace = timedelta(seconds=get_settings().processor_orphan_grace_seconds)
    # the simulator's authorizations, every sandbox tenant's at once (a Stripe account's are not swept yet)
    network = processor or provider.sandbox_processor()
    async with UnitOfWork(sessionmaker) as uow:
        horizon = await repository.database_now(uow.session) - grace
        await uow.commit()
    released = 0
    for _ in range(BATCHES_PER_SWEEP):
        async with UnitOfWork(sessionmaker) as uow:
            checked_through = await repository.locked_orphan_watermark(uow.session, horizon - FIRST_LOOKBACK)
            await uow.commit()
        if checked_through >= horizon:
            break
        candidates = await network.open_authorizations(
            created_after=checked_through, created_before=horizon, limit=BATCH
        )
        # a full batch may end amid rows of one instant: the next one starts just before its last
        reached = horizon if len(candidates) < BATCH else candidates[-1].created_at - _TICK
        stalled = False
        async with UnitOfWork(sessionmaker) as uow:
            owners = await repository.authorizations_of_payments_across_tenants(
                uow.session,
                [candidate.reference for candidate in candidates if candidate.reference is not None],
            )
        for candidate in candidates:
            if candidate.reference is None:
                continue  # made before the network kept references: no payment to ask
            owner = (candidate.reference, candidate.installation_id, candidate.livemode)
            if owners.get(owner) == candidate.id:
                continue  # recorded by its payment, the usual case: no lock needed
            try:
                released += await _release_if_orphan(sessionmaker, network, candidate)
            except _CallInFlight:
                # its payment's confirmation is between its phases: looked at again by the next sweep
                reached = min(reached, candidate.created_at - _TICK)
                stalled = True
                break
            except ProcessorUnavailable as fault:
                logger.warning("processor_orphan_unavailable", authorization=candidate.id, error=str(fault))
                reached = min(reached, candidate.created_at - _TICK)  # the next sweep tries it again
                stalled = True
                break
        async with UnitOfWork(sessionmaker) as uow:
            await repository.locked_orphan_watermark(uow.session, horizon - FIRST_LOOKBACK)
            await repository.set_orphan_watermark(uow.session, reached)
            await uow.commit()
        if stalled or len(candidates) < BATCH:
            break  # caught up, or the processor is away: the next sweep goes on from here
    return released


async def _release_if_orphan(
    sessionmaker: async_sessionmaker[AsyncSession],
    network: Processor,
    candidate: ProcessorAuthorizationRecord,
) -> int:
    assert candidate.reference is not None
    tenant = Tenant(candidate.installation_id, candidate.livemode)
    captured = candidate.status == "captured"
    amount = candidate.amount_captured - candidate.amount_refunded if captured else candidate.amount
    action = "refund" if captured else "void"
    async with UnitOfWork(sessionmaker) as uow:
        session = uow.session
        # under the payment's lock: a confirmation still running holds it until it commits
        payment = await repository.lock_payment_as_committed(session, tenant, candidate.reference)
        if payment is not None and payment.processor_authorization == candidate.id:
            return 0
        until = payment.processor_call_until if payment is not None else None
        if until is not None and until > utcnow():
            raise _CallInFlight(candidate.id)
        if payment is not None and until is not None:  # the request that left this died between its phases
            phases.clear_expired_claim(payment)
        first_found = await repository.record_orphan(
            session,
            tenant,
            {
                "authorization_id": candidate.id,
                "payment_intent_id": candidate.reference,
                "amount": amount,
                "currency": candidate.currency,
                "action": action,
            },
        )
        if first_found and payment is not None and payment.status in CONFIRMABLE:
            payment.confirmations += 1  # a later retry asks under a new key, never replays this charge
            payment.updated_at = utcnow()
        await uow.commit()  # the attempt count has moved on before the charge is released
    try:
        if captured:
            await network.refund(
                tenant,
                idempotency_key=f"orphan:{candidate.id}:refund",
                authorization_id=candidate.id,
                amount=amount,
            )
        else:
            await network.cancel(
                tenant, idempotency_key=f"orphan:{candidate.id}:void", authorization_id=candidate.id
            )
    except ProcessorRefused as refused:
        logger.error("processor_orphan_release_refused", authorization=candidate.id, error=str(refused))
        return 0
    logger.warning(
        "processor_orphan_released",
        authorization=candidate.id,
        payment_intent=candidate.reference,
        installation=candidate.installation_id,
        action=action,
        amount=amount,
        currency=candidate.currency,
    )
    return 1


register_periodic_outside(
    "payments.processor_orphans",
    timedelta(seconds=get_settings().processor_orphan_sweep_seconds),
    sweep_orphans,
)
