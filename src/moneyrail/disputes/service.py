"""Disputes (README "Disputes"). State machine (data, STYLE.md habit 7):

    needs_response -> under_review    evidence submitted (once; the dispute is then read-only)
    needs_response -> lost            closed by the merchant (the loss accepted), or no evidence by due_by
    under_review   -> won | lost      the network decided (the sandbox: on its clock)

Money (the installation's ledger accounts, per currency; + adds to a balance):

    opened (an operation)   world:card_network +A, world:dispute_fees +F,
                            balance:pending -y, balance:available -(A + F - y)
    won                     world:card_network -A, balance:available +A       (the fee stays spent)

A is the disputed amount, F the network's fee, y the part of the payment's proceeds still pending
settlement. On a platform the withdrawal's operation first takes A + F back from the merchant's share:
it reverses the payment's paid transfers (those of `merchant` allocations, else all of them) in
proportion, through the transfers service, up to what they still hold. Reinstated money returns to the
platform's balance; passing it on again is the platform's decision (POST /v1/transfers).

The network decides on its own clock, whether or not the withdrawal has run: a withdrawal that is
retrying or dead-lettered (an operator decides: `moneyrail dead-letters retry`) never holds the decision
back. The dispute shows the decision and its `withdrawal_status` as they are; a withdrawal that runs
after a win reinstates A in its own transaction, so the books end where they would have.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from datetime import datetime, timedelta
from pathlib import Path

import structlog
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from moneyrail.config import get_settings
from moneyrail.db.uow import UnitOfWork
from moneyrail.engine.clock import tenant_now
from moneyrail.engine.outcomes import PermanentFailure, TransientFailure
from moneyrail.engine.policy import RetryPolicy, register_policy
from moneyrail.engine.schedule import register_periodic_outside
from moneyrail.engine.service import Call, Recording, create_operation, get_operation
from moneyrail.errors import (
    AmountInvalid,
    Conflict,
    ParameterInvalid,
    ReferencedResourceMissing,
    ResourceMissing,
)
from moneyrail.events.service import record_event
from moneyrail.kit import states
from moneyrail.kit.clock import utcnow
from moneyrail.kit.ids import new_id
from moneyrail.kit.money import split_largest_remainder
from moneyrail.kit.pagination import Position
from moneyrail.kit.tenant import Tenant
from moneyrail.ledger import service as ledger
from moneyrail.models import Dispute, DisputeFile, Operation, PaymentIntent
from moneyrail.payments import fees
from moneyrail.payments import refunds as payment_refunds
from moneyrail.payments import service as payments
from moneyrail.processor import provider
from moneyrail.processor import sandbox as sandbox_network
from moneyrail.processor.interface import NetworkDispute, Processor, ProcessorRefused, ProcessorUnavailable
from moneyrail.sandbox.service import register_due_work, require_sandbox
from moneyrail.transfers import reversals as transfers

from . import files, repository
from .schemas import (
    EVIDENCE_FILE_FIELDS,
    EVIDENCE_TEXT_FIELDS,
    EvidenceUpdate,
    TestDisputeCreate,
    render_dispute,
)

logger = structlog.get_logger("moneyrail.disputes")

WITHDRAWAL_TYPE = "dispute_withdrawal"
WITHDRAWAL_ACTOR = "disputes.withdraw"
register_policy(
    WITHDRAWAL_TYPE,
    RetryPolicy(
        max_attempts=8, base_delay=timedelta(seconds=1), max_delay=timedelta(minutes=10), queue_name="money"
    ),
)
NETWORK_FEES = "world:dispute_fees"
DISPUTE_CARD_DELAY = timedelta(hours=sandbox_network.DISPUTE_CARD_HOURS)
SWEEP_BATCH = 200

TRANSITIONS: dict[str, frozenset[str]] = {
    "needs_response": frozenset({"under_review", "lost"}),
    "under_review": frozenset({"won", "lost"}),
    "won": frozenset(),
    "lost": frozenset(),
}


def _move(dispute: Dispute, status: str) -> None:
    states.move(dispute, status, TRANSITIONS, "A dispute")


async def _withdrawal_status(session: AsyncSession, tenant: Tenant, dispute: Dispute) -> str:
    """`succeeded` once the money is out; until then its operation's status, so that a withdrawal
    stuck in a dead letter shows as one."""
    if dispute.amount_withdrawn > 0 or dispute.withdrawal_operation_id is None:
        return "succeeded"
    return (await get_operation(session, tenant, dispute.withdrawal_operation_id)).status


async def show(session: AsyncSession, tenant: Tenant, dispute: Dispute) -> dict[str, object]:
    now = await tenant_now(session, tenant)
    shown = render_dispute(
        dispute,
        past_due=dispute.status == "needs_response" and now > dispute.evidence_due_by,
        withdrawal_status=await _withdrawal_status(session, tenant, dispute),
    )
    return shown.model_dump(mode="json")


async def _announce(session: AsyncSession, tenant: Tenant, dispute: Dispute, event_type: str) -> None:
    await record_event(session, tenant, event_type, await show(session, tenant, dispute))


# --- reading ------------------------------------------------------------------------------------------
async def get_dispute(
    session: AsyncSession, tenant: Tenant, dispute_id: str, *, for_update: bool = False
) -> Dispute:
    dispute = await repository.get_dispute(session, tenant, dispute_id, for_update=for_update)
    if dispute is None:
        raise ResourceMissing(f"No such dispute: {dispute_id!r}", param="dispute")
    return dispute


async def is_disputed(session: AsyncSession, payment_id: str) -> bool:
    """Whether a dispute was opened on this payment (billing excludes its period from proration)."""
    return await repository.dispute_of_payment(session, payment_id) is not None


async def refund_hold(session: AsyncSession, payment: PaymentIntent) -> payment_refunds.RefundHold | None:
    """Asked by refunds, the payment locked. An open dispute refuses every refund (Stripe's
    `charge_disputed`; ours is 409 resource_state_invalid): if it is lost the network keeps the disputed
    amount, so a refund would pay it twice. A lost one holds its amount back; a won one holds nothing."""
    dispute = await repository.dispute_of_payment(session, payment.id)
    if dispute is None or dispute.status == "won":
        return None
    if dispute.status in repository.UNDECIDED:
        raise Conflict(
            f"This payment has an open dispute ({dispute.id}, {dispute.status}): it cannot be refunded "
            "until the dispute is decided. If the dispute is lost, the card network keeps the disputed "
            "amount, so a refund would pay it twice; once it is won, refunds work again."
        )
    return payment_refunds.RefundHold(
        dispute.amount,
        f"The dispute {dispute.id} was lost: the card network took back {dispute.amount} of this payment "
        "already, so that part cannot be refunded as well.",
    )


payment_refunds.register_refund_holder(refund_hold)


async def list_disputes(
    session: AsyncSession, tenant: Tenant, *, limit: int, after: Position | None, payment_intent: str | None
) -> Sequence[Dispute]:
    return await repository.list_disputes(
        session, tenant, limit=limit, after=after, payment_intent=payment_intent
    )


# --- opening ------------------------------------------------------------------------------------------
async def _open(
    session: AsyncSession, tenant: Tenant, payment: PaymentIntent, network: NetworkDispute
) -> Dispute:
    """The dispute row, its withdrawal operation and `charge.dispute.created`, in the caller's transaction."""
    dispute = Dispute(
        id=new_id("dp"),
        installation_id=tenant.installation_id,
        livemode=tenant.livemode,
        payment_intent_id=payment.id,
        network_dispute=network.id,
        amount=network.amount,
        currency=network.currency,
        fee_amount=network.fee_amount,
        reason=network.reason,
        status="needs_response",
        evidence={},
        evidence_due_by=network.evidence_due_by,
        metadata_={},
        created_at=utcnow(),
        updated_at=utcnow(),
    )
    session.add(dispute)
    await session.flush()
    operation = await create_operation(
        session,
        tenant,
        operation_type=WITHDRAWAL_TYPE,
        actor_name=WITHDRAWAL_ACTOR,
        resource=dispute.id,
        payload={"dispute": dispute.id, "payment_intent": payment.id},
    )
    dispute.withdrawal_operation_id = operation.id
    await session.flush()
    await _announce(session, tenant, dispute, "charge.dispute.created")
    logger.info(
        "dispute_opened",
        dispute=dispute.id,
        payment_intent=payment.id,
        amount=dispute.amount,
        reason=dispute.reason,
    )
    return dispute


async def open_test_dispute(
    session: AsyncSession, tenant: Tenant, processor: Processor, command: TestDisputeCreate
) -> Dispute:
    """The sandbox helper: the network opens a dispute on a captured payment now."""
    require_sandbox(tenant)
    try:
        payment = await payments.lock_payment_intent(session, tenant, command.payment_intent)
    except ResourceMissing:
        raise ReferencedResourceMissing(
            f"No such payment_intent: {command.payment_intent!r}", param="payment_intent"
        ) from None
    if payment.status != "succeeded" or payment.processor_authorization is None:
        raise Conflict(f"Only a captured payment can be disputed; this one is {payment.status}.")
    if await repository.dispute_of_payment(session, payment.id) is not None:
        raise Conflict("This payment is disputed already: a payment has at most one dispute.")
    disputable = payment.amount_received - await payment_refunds.promised_back(session, payment.id)
    amount = command.amount if command.amount is not None else disputable
    if not 1 <= amount <= disputable:
        raise AmountInvalid(
            f"The disputed amount ({amount}) must be 1 to what is captured and not refunded ({disputable}).",
            param="amount",
        )
    try:
        network = await processor.open_dispute(
            tenant,
            authorization_id=payment.processor_authorization,
            amount=amount,
            reason=command.reason,
            as_of=await tenant_now(session, tenant),
        )
    except ProcessorRefused as refused:
        raise Conflict(f"The network refused the dispute: {refused.code}: {refused.message}") from refused
    return await _open(session, tenant, payment, network)


async def open_network_disputes(
    session: AsyncSession, tenant: Tenant, now: datetime, processor: Processor | None = None
) -> int:
    """Disputes the network opened by itself (the sandbox's dispute card) that moneyrail has not yet."""
    network = processor or provider.routed()
    try:
        opened = await network.due_disputes(tenant, as_of=now)
    except ProcessorUnavailable as fault:
        logger.warning("network_disputes_unavailable", error=str(fault))
        return 0
    return await _open_reported(session, tenant, opened)


async def _open_reported(session: AsyncSession, tenant: Tenant, opened: Sequence[NetworkDispute]) -> int:
    payment_of = await repository.payments_by_authorization(
        session, tenant, [dispute.authorization_id for dispute in opened]
    )
    known = await repository.disputed_payments(session, list(payment_of.values()))
    count = 0
    for network_dispute in opened:
        payment_id = payment_of.get(network_dispute.authorization_id)
        if payment_id is None or payment_id in known:
            continue
        payment = await payments.lock_payment_intent(session, tenant, payment_id)
        if await repository.dispute_of_payment(session, payment.id) is None:
            await _open(session, tenant, payment, network_dispute)
            count += 1
    return count


# --- the withdrawal operation -----------------------------------------------------------------------
async def prepare_withdrawal(
    session: AsyncSession, operation: Operation, processor: Processor
) -> Call | None:
    """Take the disputed amount and the fee out of the installation's balance, once; on a platform,
    reverse the merchant's share of the payment's transfers first (each reversal keyed by this operation).

    In phases (engine `PhasedHandler`): the dispute and the payment's transfers read (the payment locked
    briefly) and the reversals planned; the reversals asked of the processor with nothing locked; the
    reversals and the withdrawal booked together, with the success. Without reversals to ask, the
    withdrawal is booked at once. A crash after the processor's answers: the next attempt plans again
    (nothing was booked, so the same plan), asks under the same keys, and books the answers once."""
    dispute = await repository.get_dispute_by_operation(session, operation.id)
    if dispute is None or dispute.amount_withdrawn > 0:
        return None  # done already
    tenant = Tenant(dispute.installation_id, dispute.livemode)
    payment = await payments.lock_payment_intent(session, tenant, dispute.payment_intent_id)
    planned = await _plan_take_back(session, operation, payment, dispute.amount + dispute.fee_amount)
    if not planned:
        await _withdraw(session, tenant, dispute, payment, [])
        return None
    dispute_id = dispute.id

    async def call() -> Recording:
        try:
            answered = await transfers.ask_reversals(processor, tenant, planned)
        except ProcessorRefused as refused:
            raise PermanentFailure(refused.code, refused.message) from refused

        async def record(session: AsyncSession) -> None:
            dispute = await repository.get_dispute_by_operation(session, operation.id)
            # only this operation withdraws: another attempt took over meanwhile
            if dispute is None or dispute.amount_withdrawn > 0:
                raise TransientFailure("the dispute changed while the processor was asked")
            payment = await payments.lock_payment_intent(session, tenant, dispute.payment_intent_id)
            await _withdraw(session, tenant, dispute, payment, answered)

        return record

    logger.info("dispute_withdrawal_reversing", dispute=dispute_id, reversals=len(planned))
    return call


async def _withdraw(
    session: AsyncSession,
    tenant: Tenant,
    dispute: Dispute,
    payment: PaymentIntent,
    answered: Sequence[transfers.AnsweredReversal],
) -> None:
    """The withdrawal's books: the reversals the processor made, then the network's withdrawal."""
    reversed_total = await transfers.book_reversals(
        session, tenant, payment, answered, refund_id=None, metadata={"dispute": dispute.id}
    )
    withdrawal = dispute.amount + dispute.fee_amount
    from_pending = fees.take_for_transfer(payment, withdrawal)
    await ledger.post(
        session,
        tenant,
        kind="dispute_withdrawal",
        reference=dispute.id,
        idempotency_key=f"{dispute.id}:withdrawal",
        postings=[
            posting
            for posting in (
                ledger.Posting(fees.WORLD_CARD_NETWORK, dispute.amount, dispute.currency),
                ledger.Posting(NETWORK_FEES, dispute.fee_amount, dispute.currency),
                ledger.Posting(fees.BALANCE_PENDING, -from_pending, dispute.currency),
                ledger.Posting(fees.BALANCE_AVAILABLE, -(withdrawal - from_pending), dispute.currency),
            )
            if posting.amount != 0
        ],
    )
    dispute.amount_withdrawn = withdrawal
    dispute.amount_reversed = reversed_total
    dispute.updated_at = utcnow()
    # decided as won while this withdrawal waited (retries, a dead letter replayed): A comes back now
    reinstating = dispute.status == "won" and dispute.amount_reinstated == 0
    if reinstating:
        await _reinstate(session, tenant, dispute)
    await session.flush()
    await _announce(session, tenant, dispute, "charge.dispute.funds_withdrawn")
    if reinstating:
        await _announce(session, tenant, dispute, "charge.dispute.funds_reinstated")
    logger.info(
        "dispute_funds_withdrawn",
        dispute=dispute.id,
        amount=withdrawal,
        reversed=reversed_total,
        reinstated=dispute.amount_reinstated,
    )


async def _plan_take_back(
    session: AsyncSession, operation: Operation, payment: PaymentIntent, wanted: int
) -> list[transfers.PlannedReversal]:
    """The reversals that take `wanted` back from the payment's paid transfers (its merchants' first),
    in proportion to what each still holds, up to what they hold."""
    paid = await transfers.reversible_transfers(session, payment)
    merchants = [transfer for transfer, role in paid if role == "merchant"]
    chosen = merchants or [transfer for transfer, _ in paid]
    holding = [transfer.amount - transfer.amount_reversed for transfer in chosen]
    if not chosen or sum(holding) == 0:
        return []
    if await payment_refunds.refund_in_progress(session, payment.id):
        raise TransientFailure("a refund of the payment is taking back from its transfers")
    shares = split_largest_remainder(min(wanted, sum(holding)), holding)
    return [
        transfers.planned_in_operation(operation, transfer, share)
        for transfer, share in zip(chosen, shares, strict=True)
        if share > 0
    ]


# --- evidence -----------------------------------------------------------------------------------------
async def _editable(session: AsyncSession, tenant: Tenant, dispute: Dispute) -> None:
    if dispute.status != "needs_response":
        raise Conflict(
            f"This dispute is {dispute.status}: its evidence can no longer change."
            + (" Evidence is submitted once." if dispute.status == "under_review" else "")
        )
    if await tenant_now(session, tenant) > dispute.evidence_due_by:
        raise Conflict(
            "The evidence deadline (evidence_details.due_by) has passed: nothing more is accepted."
        )


async def check_accepts_files(session: AsyncSession, tenant: Tenant, dispute_id: str) -> Dispute:
    dispute = await get_dispute(session, tenant, dispute_id)
    await _editable(session, tenant, dispute)
    return dispute


async def receive_file(
    session: AsyncSession,
    tenant: Tenant,
    dispute_id: str,
    stream: AsyncIterator[bytes],
    content_type: str | None,
) -> DisputeFile:
    """Stream an evidence file to the files directory, recognise it, and record it beside the dispute."""
    dispute = await check_accepts_files(session, tenant, dispute_id)
    file_id = new_id("file")
    directory = Path(get_settings().evidence_files_dir)
    stored = await files.receive(stream, content_type, directory, f"{tenant.installation_id}/{file_id}")
    # the upload took time: the dispute may have changed meanwhile (a submission, a close)
    dispute = await get_dispute(session, tenant, dispute_id, for_update=True)
    await _editable(session, tenant, dispute)
    record = DisputeFile(
        id=file_id,
        installation_id=tenant.installation_id,
        livemode=tenant.livemode,
        dispute_id=dispute.id,
        type=stored.type,
        size=stored.size,
        sha256=stored.sha256,
        filename=stored.filename,
        storage_key=stored.storage_key,
        created_at=utcnow(),
    )
    session.add(record)
    await session.flush()
    logger.info("dispute_file_received", dispute=dispute.id, file=file_id, type=stored.type, size=stored.size)
    return record


def evidence_text(evidence: dict[str, str]) -> str:
    return "\n".join(f"{name}: {evidence[name]}" for name in EVIDENCE_TEXT_FIELDS if evidence.get(name))


async def update_evidence(
    session: AsyncSession, tenant: Tenant, processor: Processor, dispute_id: str, command: EvidenceUpdate
) -> Dispute:
    dispute = await get_dispute(session, tenant, dispute_id, for_update=True)
    await _editable(session, tenant, dispute)
    evidence = dict(dispute.evidence)
    if command.evidence is not None:
        given = command.evidence.model_dump(exclude_unset=True)
        uploaded = await repository.files_of(session, dispute.id)
        for name in EVIDENCE_FILE_FIELDS:
            file_id = given.get(name)
            if file_id and file_id not in uploaded:
                raise ReferencedResourceMissing(
                    f"No such file uploaded to this dispute: {file_id!r}", param=f"evidence[{name}]"
                )
        for name, value in given.items():
            if value == "" or value is None:
                evidence.pop(name, None)
            else:
                evidence[name] = value
    if command.metadata is not None:
        merged = {**dispute.metadata_, **command.metadata}
        dispute.metadata_ = {key: value for key, value in merged.items() if value != ""}
    dispute.evidence = evidence
    dispute.updated_at = utcnow()
    if command.submit:
        if not evidence:
            raise ParameterInvalid("There is no evidence to submit: save some first.", param="evidence")
        try:
            await processor.submit_dispute_evidence(
                tenant,
                idempotency_key=f"{dispute.id}:evidence",
                dispute_id=dispute.network_dispute,
                evidence_text=evidence_text(evidence),
                as_of=await tenant_now(session, tenant),
                evidence_files=await files.for_processor(
                    Path(get_settings().evidence_files_dir),
                    evidence,
                    await repository.files_of(session, dispute.id),
                ),
            )
        except ProcessorRefused as refused:
            raise Conflict(
                f"The network refused the evidence: {refused.code}: {refused.message}"
            ) from refused
        _move(dispute, "under_review")
        dispute.submission_count += 1
        dispute.submitted_at = await tenant_now(session, tenant)
    await session.flush()
    await _announce(session, tenant, dispute, "charge.dispute.updated")
    return dispute


async def close_dispute(
    session: AsyncSession, tenant: Tenant, processor: Processor, dispute_id: str
) -> Dispute:
    """Accept the loss: irreversible; the money withdrawn stays withdrawn."""
    dispute = await get_dispute(session, tenant, dispute_id, for_update=True)
    if dispute.status != "needs_response":
        raise Conflict(f"Only a dispute that needs a response can be closed; this one is {dispute.status}.")
    now = await tenant_now(session, tenant)
    try:
        await processor.accept_dispute(
            tenant, idempotency_key=f"{dispute.id}:accept", dispute_id=dispute.network_dispute, as_of=now
        )
    except ProcessorRefused as refused:
        raise Conflict(f"The network refused the closing: {refused.code}: {refused.message}") from refused
    _move(dispute, "lost")
    dispute.accepted_at = now
    dispute.decided_at = now
    await session.flush()
    await _announce(session, tenant, dispute, "charge.dispute.closed")
    return dispute


# --- outcomes on the clock ----------------------------------------------------------------------------
async def decide_outcomes(
    session: AsyncSession, tenant: Tenant, now: datetime, processor: Processor | None = None
) -> int:
    """Ask the network about the tenant's undecided disputes and apply its word. A won dispute's amount
    is reinstated here if its withdrawal has run, else by the withdrawal when it does."""
    decided = 0
    undecided = await repository.undecided_disputes(session, tenant, SWEEP_BATCH)
    network = processor or (provider.routed() if undecided else None)
    for dispute in undecided:
        assert network is not None
        outcome = await _outcome(network, tenant, dispute.id, dispute.network_dispute, now)
        if outcome is not None:
            await _decide(session, tenant, dispute, outcome, now)
            decided += 1
    return decided


async def _outcome(
    network: Processor, tenant: Tenant, dispute_id: str, network_dispute: str, now: datetime
) -> str | None:
    try:
        return await network.dispute_outcome(tenant, dispute_id=network_dispute, as_of=now)
    except ProcessorUnavailable as fault:
        logger.warning("dispute_outcome_unavailable", dispute=dispute_id, error=str(fault))
        return None


async def _decide(
    session: AsyncSession, tenant: Tenant, dispute: Dispute, outcome: str, now: datetime
) -> None:
    """The network's word on an undecided dispute: `won` or `lost`."""
    reinstating = outcome == "won" and dispute.amount_withdrawn > 0
    if outcome == "won" and dispute.status == "needs_response":
        _move(dispute, "under_review")  # answered at the processor itself (Stripe's dashboard)
    _move(dispute, "won" if outcome == "won" else "lost")
    if reinstating:
        await _reinstate(session, tenant, dispute)
    dispute.decided_at = now
    await session.flush()
    if reinstating:
        await _announce(session, tenant, dispute, "charge.dispute.funds_reinstated")
    await _announce(session, tenant, dispute, "charge.dispute.closed")
    logger.info("dispute_decided", dispute=dispute.id, outcome=outcome)


# --- what a real processor reports (its webhooks: processor_events) -----------------------------------
async def open_reported_dispute(session: AsyncSession, tenant: Tenant, network: NetworkDispute) -> str:
    """The processor reports a dispute it opened (Stripe's `charge.dispute.created`): opened here as the
    simulator's are (its row, its withdrawal operation, `charge.dispute.created`), once per network
    dispute and per payment. What it did, for the report's record. A payment whose capture is not
    recorded yet is retried (TransientFailure)."""
    known = await repository.dispute_by_network_id(session, tenant, network.id)
    if known is not None:
        return f"{known.id} open already"
    owners = await repository.payments_by_authorization(session, tenant, [network.authorization_id])
    payment_id = owners.get(network.authorization_id)
    if payment_id is None:
        logger.warning("reported_dispute_without_payment", network_dispute=network.id)
        return "no payment of this environment was made by this charge"
    payment = await payments.lock_payment_intent(session, tenant, payment_id)
    if payment.status != "succeeded":
        raise TransientFailure(f"payment {payment.id} is {payment.status}: its capture is not recorded yet")
    if await repository.dispute_of_payment(session, payment.id) is not None:
        return f"{payment.id} is disputed already"
    dispute = await _open(session, tenant, payment, network)
    return f"{dispute.id} opened"


async def close_reported_dispute(
    session: AsyncSession, tenant: Tenant, network_dispute: str, outcome: str | None
) -> str:
    """The processor reports a dispute decided (Stripe's `charge.dispute.closed`): won or lost here as
    the simulator's decision is applied. One that was never opened here is retried (its
    `charge.dispute.created` may still be on its way)."""
    dispute = await repository.dispute_by_network_id(session, tenant, network_dispute)
    if dispute is None:
        raise TransientFailure("the dispute is not open here yet (its opening report may be on its way)")
    if outcome is None:
        return f"{dispute.id}: the processor closed it without an outcome"
    if dispute.status not in repository.UNDECIDED:
        return f"{dispute.id} is {dispute.status} already"
    await _decide(session, tenant, dispute, outcome, await tenant_now(session, tenant))
    return f"{dispute.id} {outcome}"


async def _reinstate(session: AsyncSession, tenant: Tenant, dispute: Dispute) -> None:
    await ledger.post(
        session,
        tenant,
        kind="dispute_reinstatement",
        reference=dispute.id,
        idempotency_key=f"{dispute.id}:reinstatement",
        postings=[
            ledger.Posting(fees.WORLD_CARD_NETWORK, -dispute.amount, dispute.currency),
            ledger.Posting(fees.BALANCE_AVAILABLE, dispute.amount, dispute.currency),
        ],
    )
    dispute.amount_reinstated = dispute.amount


async def _on_clock(session: AsyncSession, tenant: Tenant, now: datetime) -> int:
    if not await provider.uses_simulator(session, tenant):
        return 0  # a real processor reports its disputes and their outcomes by webhook
    opened = 0
    # the clock's advance is in this transaction, so the candidates are found on the advanced clock
    if await sandbox_network.tenants_with_dispute_cards(session, DISPUTE_CARD_DELAY, only=tenant):
        opened = await open_network_disputes(session, tenant, now)
    return opened + await decide_outcomes(session, tenant, now)


OUTCOMES_IN_FLIGHT = 16  # dispute outcomes asked of the network at once


async def _sweep(sessionmaker: async_sessionmaker[AsyncSession]) -> int:
    """The leading scheduler: each tenant on its own clock (a sandbox's may run days ahead). What is due
    is read in one unit of work, the network asked with none open, and its answers written in the next
    (each dispute read again under its lock: one decided meanwhile is left as it is)."""
    async with UnitOfWork(sessionmaker) as uow:
        session = uow.session
        carded = [
            (tenant, await tenant_now(session, tenant))
            for tenant in await sandbox_network.tenants_with_dispute_cards(session, DISPUTE_CARD_DELAY)
        ]
        undecided = []
        for tenant in await repository.tenants_with_undecided_disputes(session):
            if not await provider.uses_simulator(session, tenant):
                continue  # the processor's webhook decides
            now = await tenant_now(session, tenant)
            for dispute in await repository.undecided_disputes(session, tenant, SWEEP_BATCH):
                undecided.append((tenant, now, dispute.id, dispute.network_dispute))
    if not carded and not undecided:
        return 0
    network = provider.routed()
    done = 0
    for tenant, now in carded:  # the simulator's dispute cards
        try:
            opened = await network.due_disputes(tenant, as_of=now)
        except ProcessorUnavailable as fault:
            logger.warning("network_disputes_unavailable", error=str(fault))
            continue
        async with UnitOfWork(sessionmaker) as uow:
            done += await _open_reported(uow.session, tenant, opened)
            await uow.commit()
    in_flight = asyncio.Semaphore(OUTCOMES_IN_FLIGHT)

    async def ask(tenant: Tenant, now: datetime, dispute_id: str, network_dispute: str) -> str | None:
        async with in_flight:
            return await _outcome(network, tenant, dispute_id, network_dispute, now)

    outcomes = await asyncio.gather(*(ask(*one) for one in undecided))
    async with UnitOfWork(sessionmaker) as uow:
        for (tenant, now, dispute_id, _), outcome in zip(undecided, outcomes, strict=True):
            if outcome is None:
                continue
            found = await repository.get_dispute(uow.session, tenant, dispute_id, for_update=True)
            if found is None or found.status not in repository.UNDECIDED:
                continue
            await _decide(uow.session, tenant, found, outcome, now)
            done += 1
        await uow.commit()
    return done


register_periodic_outside("disputes.network", timedelta(seconds=30), _sweep)
register_due_work("disputes.network", _on_clock)
