"""What a real processor reports by webhook (ARCHITECTURE.md, "The processor is an outside system").

Stripe posts each event of an installation's environment to
`/processor/stripe/webhooks/{installation}/{live|sandbox}`, signed with the signing secret of the
endpoint the operator registered at Stripe (`moneyrail settings set --processor-webhook-secret-file`).
A verified event is kept once by its id (a replay finds it and changes nothing) with a
`processor_sync` operation, in the request's one transaction; the operation applies it in a worker, so
a failure retries and dead-letters like any other work. What applying it did is kept as the event's
`outcome`.

Applied: a dispute opened or closed (`charge.dispute.created`, `.closed`: the disputes domain opens or
decides it as the simulator's), a payout paid or failed (`payout.paid`, `.failed`), and a charge's
cost booked (`charge.succeeded`, `.captured`, `.updated`: the payment's fees become final). Kept
without an effect of its own: what moneyrail itself asked for and recorded when Stripe answered
(`charge.refunded`, `transfer.*`, `payment_intent.*`, ...), and whatever else Stripe sends.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.disputes import service as disputes
from moneyrail.engine.policy import RetryPolicy, register_policy
from moneyrail.engine.service import create_operation
from moneyrail.errors import ParameterInvalid, ResourceMissing, SignatureInvalid
from moneyrail.kit.tenant import Tenant
from moneyrail.models import Operation, ProcessorEvent
from moneyrail.payments import reports
from moneyrail.payouts import service as payouts
from moneyrail.processor import settings as settings_of
from moneyrail.processor.interface import Processor
from moneyrail.processor.stripe import webhooks as stripe_webhooks
from moneyrail.processor.stripe.connection import reference, text

from . import repository

logger = structlog.get_logger("moneyrail.processor_events")

SYNC_TYPE = "processor_sync"
SYNC_ACTOR = "processor_events.sync"
register_policy(
    SYNC_TYPE,
    RetryPolicy(
        max_attempts=8, base_delay=timedelta(seconds=2), max_delay=timedelta(minutes=10), queue_name="money"
    ),
)
ENVIRONMENTS = {"live": True, "sandbox": False}

Apply = Callable[[AsyncSession, Tenant, ProcessorEvent, Processor], Awaitable[str]]


async def receive_stripe_event(
    session: AsyncSession, installation_id: str, environment: str, payload: bytes, signature: str | None
) -> bool:
    """Verify and keep one Stripe event with its `processor_sync` operation; True when it was received
    before (nothing more is done). An environment not on Stripe, or without a webhook signing secret, is
    404; a signature that does not verify, 400 `signature_invalid`; nothing is recorded either way.

    Two endpoints at Stripe may post here, each signing with its own secret: the platform's, and the
    Connect endpoint's, whose events happened on a connected account (they name it: `account`)."""
    livemode = ENVIRONMENTS.get(environment)
    tenant = Tenant(installation_id, livemode is True)
    chosen = await settings_of.processor_settings(session, tenant) if livemode is not None else None
    if (
        chosen is None
        or chosen.processor != settings_of.STRIPE
        or (chosen.webhook_secret is None and chosen.connect_webhook_secret is None)
    ):
        raise ResourceMissing(
            f"No Stripe webhook endpoint is set for installation {installation_id!r}, environment "
            f"{environment!r} (`moneyrail settings set --processor-webhook-secret-file`)."
        )
    event = _verified(installation_id, payload, signature, chosen)
    if event.livemode is not tenant.livemode:
        raise ParameterInvalid(
            f"A {'live' if event.livemode else 'test'}-mode event cannot drive the {environment} "
            "environment.",
            param="livemode",
        )
    kept = await repository.insert_new(
        session,
        tenant,
        processor=settings_of.STRIPE,
        event_id=event.id,
        event_type=event.type,
        account=event.account,
        found=event.object,
    )
    if not kept:
        logger.info("processor_event_replayed", processor_event=event.id, type=event.type)
        return True
    operation = await create_operation(
        session,
        tenant,
        operation_type=SYNC_TYPE,
        actor_name=SYNC_ACTOR,
        resource=event.id,
        payload={"event": event.id},
    )
    stored = await repository.get(session, tenant, event.id)
    assert stored is not None
    stored.operation_id = operation.id
    await session.flush()
    logger.info("processor_event_received", processor_event=event.id, type=event.type, operation=operation.id)
    return False


def _verified(
    installation_id: str, payload: bytes, signature: str | None, chosen: settings_of.ProcessorSettings
) -> stripe_webhooks.StripeEvent:
    """The event, signed with the platform endpoint's secret or the Connect endpoint's."""
    refusal = "no signing secret"
    if chosen.webhook_secret is not None:
        try:
            return stripe_webhooks.verified_event(payload, signature, chosen.webhook_secret)
        except stripe_webhooks.EventRefused as refused:
            refusal = str(refused)
    if chosen.connect_webhook_secret is not None:
        try:
            event = stripe_webhooks.verified_event(payload, signature, chosen.connect_webhook_secret)
        except stripe_webhooks.EventRefused as refused:
            refusal = str(refused)
        else:
            if event.account is not None:
                return event
            refusal = "signed by the Connect endpoint, but it names no connected account"
    logger.warning("processor_event_refused", installation=installation_id, reason=refusal)
    raise SignatureInvalid(
        f"This is not an event Stripe signed for this endpoint: {refusal}", param="Stripe-Signature"
    )


async def process_event(session: AsyncSession, operation: Operation, processor: Processor) -> None:
    """The `processor_sync` operation's handler: apply the event once (its `outcome` says it was)."""
    tenant = Tenant(operation.installation_id, operation.livemode)
    event = await repository.get(session, tenant, str(operation.payload["event"]))
    if event is None or event.outcome is not None:
        return
    apply = APPLIED.get(event.type)
    event.outcome = (await apply(session, tenant, event, processor))[:500] if apply else "kept: no effect"
    await session.flush()
    logger.info(
        "processor_event_applied", processor_event=event.event_id, type=event.type, outcome=event.outcome
    )


async def _dispute_opened(session: AsyncSession, tenant: Tenant, event: ProcessorEvent, _: Processor) -> str:
    return await disputes.open_reported_dispute(session, tenant, stripe_webhooks.dispute_of(event.object))


async def _dispute_closed(session: AsyncSession, tenant: Tenant, event: ProcessorEvent, _: Processor) -> str:
    return await disputes.close_reported_dispute(
        session, tenant, text(event.object, "id") or "", stripe_webhooks.dispute_outcome(event.object)
    )


async def _payout_paid(session: AsyncSession, tenant: Tenant, event: ProcessorEvent, _: Processor) -> str:
    return await payouts.payout_paid(session, tenant, text(event.object, "id") or "")


async def _payout_failed(session: AsyncSession, tenant: Tenant, event: ProcessorEvent, _: Processor) -> str:
    return await payouts.payout_failed(
        session,
        tenant,
        text(event.object, "id") or "",
        code=text(event.object, "failure_code") or "payout_failed",
        message=text(event.object, "failure_message") or "The bank did not take the payout.",
    )


async def _charge_booked(
    session: AsyncSession, tenant: Tenant, event: ProcessorEvent, processor: Processor
) -> str:
    """A charge with its balance transaction: its cost is known (the payment's fees become final)."""
    intent = reference(event.object, "payment_intent")
    if intent is None or reference(event.object, "balance_transaction") is None:
        return "kept: no payment intent or no balance transaction yet"
    return await reports.report_cost_of(session, tenant, intent, processor)


APPLIED: dict[str, Apply] = {
    "charge.dispute.created": _dispute_opened,
    "charge.dispute.closed": _dispute_closed,
    "payout.paid": _payout_paid,
    "payout.failed": _payout_failed,
    "charge.succeeded": _charge_booked,
    "charge.captured": _charge_booked,
    "charge.updated": _charge_booked,
}
