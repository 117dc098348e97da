"""Payouts: money from an available balance to a bank account. The balance is a connected account's
(`connect:<acct>:available`, to the account's bank account) or, for a direct installation, its own
(`balance:available`, to the bank account the operator registered for the environment).

    pending -> in_transit   the processor took it (the `payout` operation); it arrives at arrival_date
    in_transit -> paid      the arrival date passed on the environment's clock (a scheduler sweep, or a
                            sandbox clock advance)
    pending -> failed       final: the processor refused it for good (sandbox bank account 000111111116:
                            account_closed), or an operator discarded its dead-lettered operation; the
                            money goes back to the available balance, with `payout.failed`
    pending -> canceled     canceled while pending: the money goes back

A transient processor fault is retried under the same key (one processor effect). Any other refusal
dead-letters the operation with the payout still `pending` (final means final, CONVENTIONS.md §9), its
money held and the error in `last_operation_error`; an operator's retry asks the processor again under
the payout's next key, a discard fails it and returns the money.

A paid payout can be reversed once (reversals.py): the reversal is a payout of its own, in the other
direction, through the same states and the same operation handler.

Money (the installation's ledger accounts, per currency; <balance> is the payout's available balance):

    created     <balance> -(amount + fee), payouts:in_transit +amount, service:payout_fees +fee
    paid        payouts:in_transit -amount, world:bank_payouts +amount
    returned    payouts:in_transit -amount, service:payout_fees -fee, <balance> +(amount + fee)
  a reversal:
    in transit  world:bank_payouts -amount, payouts:in_transit +amount   (the bank gave it up)
    paid        payouts:in_transit -amount, <balance> +amount             (the instant fee stays spent)

The money leaves the available balance when the payout is accepted, under a lock on that balance's
account: two payouts requested at once are checked one after the other, and never exceed it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timedelta

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.config import get_settings
from moneyrail.connect import at_processor
from moneyrail.connect import service as connect
from moneyrail.connect.requirements import Requirements
from moneyrail.engine.clock import tenant_now
from moneyrail.engine.outcomes import AttemptError, PermanentFailure, TransientFailure
from moneyrail.engine.policy import RetryPolicy, register_policy
from moneyrail.engine.schedule import register_periodic
from moneyrail.engine.service import (
    Call,
    Recording,
    create_operation,
    final_failure,
    register_attempt_failure_listener,
    register_outcome_listener,
    statuses_of,
)
from moneyrail.errors import AmountInvalid, Conflict, ResourceMissing
from moneyrail.events.service import record_event
from moneyrail.installations import service as installations
from moneyrail.kit import states
from moneyrail.kit.clock import utcnow
from moneyrail.kit.ids import new_id
from moneyrail.kit.pagination import Position
from moneyrail.kit.tenant import Tenant
from moneyrail.ledger import service as ledger
from moneyrail.models import Operation, Payout
from moneyrail.payments.fees import BALANCE_AVAILABLE
from moneyrail.processor import provider
from moneyrail.processor.interface import PayoutResult, Processor, ProcessorRefused, operation_key
from moneyrail.processor.sandbox import TEST_BANK_ACCOUNT
from moneyrail.sandbox.service import register_due_work

from . import repository
from .schemas import PayoutCreate, render_payout

logger = structlog.get_logger("moneyrail.payouts")

PAYOUT_TYPE = "payout"
PAYOUT_ACTOR = "payouts.send"
register_policy(
    PAYOUT_TYPE,
    RetryPolicy(
        max_attempts=5,
        base_delay=timedelta(milliseconds=500),
        max_delay=timedelta(minutes=5),
        queue_name="money",
    ),
)

TRANSITIONS: dict[str, frozenset[str]] = {
    "pending": frozenset({"in_transit", "failed", "canceled"}),
    "in_transit": frozenset({"paid", "failed"}),
    "paid": frozenset(),
    "failed": frozenset(),
    "canceled": frozenset(),
}
IN_TRANSIT = "payouts:in_transit"
PAYOUT_FEES = "service:payout_fees"
BANK_PAYOUTS = "world:bank_payouts"
INSTANT_FEE_BASIS_POINTS = 100  # 1 %
INSTANT_FEE_MINIMUM = 50
INSTANT_ARRIVAL = timedelta(minutes=30)
STANDARD_BUSINESS_DAYS = 2
ARRIVAL_BATCH = 200


# refusals that are the payout's own outcome (the bank said no): the payout fails, the money returns
FINAL_REFUSALS = frozenset({"account_closed"})


class PayoutRefused(TransientFailure):
    """Any other refusal: retried (each attempt replays it under the same key, moving nothing) until the
    operation dead-letters for an operator to decide."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"payout refused: {code}: {message}")
        self.code = code


def instant_fee(amount: int) -> int:
    return max(INSTANT_FEE_MINIMUM, -(-amount * INSTANT_FEE_BASIS_POINTS // 10_000))


def standard_arrival(now: datetime) -> datetime:
    """The next business days: two weekdays after today, weekends skipped."""
    arrival, left = now, STANDARD_BUSINESS_DAYS
    while left:
        arrival += timedelta(days=1)
        if arrival.weekday() < 5:
            left -= 1
    return arrival


def _move(payout: Payout, status: str) -> None:
    states.move(payout, status, TRANSITIONS, "A payout")


def _legs(currency: str, *legs: tuple[str, int]) -> list[ledger.Posting]:
    return [ledger.Posting(account, amount, currency) for account, amount in legs if amount != 0]


def balance_account(payout: Payout) -> str:
    """The available balance this payout's money comes from (and returns to)."""
    if payout.connected_account_id is None:
        return BALANCE_AVAILABLE
    return connect.available_account(payout.connected_account_id)


async def announce(session: AsyncSession, tenant: Tenant, payout: Payout, verb: str) -> None:
    """`payout.<verb>`, or `payout.reversal.<verb>` for a reversal, so receivers never mistake money coming
    back for money going out."""
    event_type = f"payout.reversal.{verb}" if payout.original_payout_id else f"payout.{verb}"
    await record_event(session, tenant, event_type, render_payout(payout).model_dump(mode="json"))


async def create_payout(
    session: AsyncSession, tenant: Tenant, account_id: str, command: PayoutCreate
) -> Payout:
    """A connected account's payout, from its available balance to its bank account."""
    await provider.require_processor(session, tenant)
    account = await connect.get_connected_account(session, tenant, account_id)
    if not Requirements.of(account).payouts_enabled:
        raise Conflict(
            "Payouts are not enabled for this account yet: its onboarding still has requirements "
            "currently due (POST /v1/connected-accounts/{id}/onboarding-links)."
        )
    await at_processor.ensure_linked(session, tenant, [account.id])
    return await _hold_and_send(session, tenant, command, account.id)


async def create_installation_payout(session: AsyncSession, tenant: Tenant, command: PayoutCreate) -> Payout:
    """A direct installation's payout, from its own available balance to the environment's bank account.
    A platform's balance funds the distributions it still owes, so it pays out through its connected
    accounts instead."""
    await provider.require_processor(session, tenant)
    installation = await installations.require_installation(session, tenant.installation_id)
    if installation.kind != "direct":
        raise Conflict(
            "A platform installation's balance funds its distributions: pay recipients out from their "
            "connected accounts (POST /v1/connected-accounts/{id}/payouts)."
        )
    await installation_bank_account(session, tenant)  # refused now, not later in the worker
    return await _hold_and_send(session, tenant, command, None)


async def installation_bank_account(session: AsyncSession, tenant: Tenant) -> str:
    registered = (await installations.environment_settings_of(session, tenant)).payout_bank_account
    if registered:
        return registered
    if not tenant.livemode:
        return TEST_BANK_ACCOUNT  # until the operator registers one (000111111116 fails)
    raise Conflict(
        "No bank account is registered for this environment's payouts: the operator registers one "
        "(moneyrail settings set --payout-bank-account)."
    )


async def _hold_and_send(
    session: AsyncSession, tenant: Tenant, command: PayoutCreate, account_id: str | None
) -> Payout:
    """Takes the money (and the instant fee) out of the available balance under that balance's lock,
    then hands the payout to its operation."""
    fee = instant_fee(command.amount) if command.method == "instant" else 0
    payout = Payout(
        id=new_id("po"),
        installation_id=tenant.installation_id,
        livemode=tenant.livemode,
        connected_account_id=account_id,
        amount=command.amount,
        fee_amount=fee,
        currency=command.currency,
        method=command.method,
        status="pending",
        metadata_=command.metadata,
        updated_at=utcnow(),
    )
    source = balance_account(payout)
    locked = await ledger.ensure_account(session, tenant, source, command.currency)
    await ledger.lock_accounts(session, [locked.id])  # concurrent payouts take turns
    available = await ledger.balance(session, tenant, source, command.currency)
    if command.amount + fee > available:
        raise AmountInvalid(
            f"The payout ({command.amount}"
            + (f" plus the instant fee of {fee}" if fee else "")
            + f") is more than the available balance ({available} {command.currency}).",
            param="amount",
        )
    await repository.add(session, payout)
    await ledger.post(
        session,
        tenant,
        kind="payout",
        reference=payout.id,
        idempotency_key=f"{payout.id}:payout",
        postings=_legs(
            payout.currency, (source, -(payout.amount + fee)), (IN_TRANSIT, payout.amount), (PAYOUT_FEES, fee)
        ),
    )
    await start_operation(session, tenant, payout)
    await announce(session, tenant, payout, "created")
    logger.info(
        "payout_created",
        payout=payout.id,
        connected_account=account_id,
        amount=payout.amount,
        currency=payout.currency,
        method=payout.method,
    )
    return payout


async def start_operation(session: AsyncSession, tenant: Tenant, payout: Payout) -> None:
    operation = await create_operation(
        session,
        tenant,
        operation_type=PAYOUT_TYPE,
        actor_name=PAYOUT_ACTOR,
        resource=payout.id,
        payload={"payout": payout.id},
    )
    payout.operation_id = operation.id
    await session.flush()


async def list_payouts(
    session: AsyncSession, tenant: Tenant, account_id: str, *, limit: int, after: Position | None
) -> Sequence[Payout]:
    account = await connect.get_connected_account(session, tenant, account_id)
    return await repository.list_for_account(session, tenant, account.id, limit=limit, after=after)


async def get_payout(session: AsyncSession, tenant: Tenant, payout_id: str) -> Payout:
    payout = await repository.get(session, tenant, payout_id)
    if payout is None:
        raise ResourceMissing(f"No such payout: {payout_id!r}", param="payout")
    return payout


async def cancel_payout(session: AsyncSession, tenant: Tenant, payout_id: str) -> Payout:
    """Only while `pending` and its operation is not handing it to the processor: the operation reads
    the payout under its lock, then calls the processor with no lock held, so a cancel arriving while
    the operation runs is refused (it may be at the bank already). The money returns to the available
    balance; the operation, when it runs, finds nothing to send."""
    payout = await repository.get(session, tenant, payout_id, for_update=True)
    if payout is None:
        raise ResourceMissing(f"No such payout: {payout_id!r}", param="payout")
    if payout.status != "pending":
        raise Conflict(f"Only a pending payout can be canceled; this one is {payout.status}.")
    if payout.operation_id is not None:
        running = await statuses_of(session, [payout.operation_id])
        if running.get(payout.operation_id) == "running":
            raise Conflict(
                "This payout is being handed to the processor right now: it can no longer be canceled."
            )
    _move(payout, "canceled")
    payout.failure_code = None
    payout.failure_message = None
    await _give_back(session, tenant, payout)
    await session.flush()
    await announce(session, tenant, payout, "canceled")
    logger.info("payout_canceled", payout=payout.id)
    return payout


async def list_all_payouts(
    session: AsyncSession, tenant: Tenant, *, limit: int, after: Position | None
) -> Sequence[Payout]:
    return await repository.list_all(session, tenant, limit=limit, after=after)


async def prepare_payout(session: AsyncSession, operation: Operation, processor: Processor) -> Call | None:
    """The `payout` operation's handler in phases (engine `PhasedHandler`): the payout read under its
    lock, which ends before the processor is called (a cancel meanwhile is refused: its operation is
    running); one processor call keyed by the operation, with nothing locked; then the payout moves
    `in_transit` with the success. A crash after the processor's answer: the next attempt asks again
    under the same key, and the processor answers as before (one payout), booked once."""
    payout = await repository.get_by_operation(session, operation.id)
    if payout is None or payout.status != "pending":
        return None
    tenant = Tenant(payout.installation_id, payout.livemode)
    step = "payout" if payout.key_generation == 0 else f"payout:{payout.key_generation}"
    simulated = await provider.uses_simulator(session, tenant)
    # a connected account's payout is made as the processor's own account (Stripe: `Stripe-Account`,
    # from that account's balance), once its operation made it there (connect/at_processor.py)
    paid_as = await _paid_as(session, tenant, payout)
    key = operation_key(operation.id, step)
    amount, currency = payout.amount, payout.currency
    if payout.original_payout_id is not None:
        original = await get_payout(session, tenant, payout.original_payout_id)
        reversed_payout = original.processor_payout or original.id

        async def ask() -> PayoutResult:
            return await processor.reverse_payout(
                tenant,
                idempotency_key=key,
                payout_id=reversed_payout,
                amount=amount,
                currency=currency,
                connected_account=paid_as,
            )

    else:
        # on Stripe: the account's own default bank account, as Stripe knows it
        bank_account = await _destination(session, tenant, payout) if simulated else ""

        async def ask() -> PayoutResult:
            return await processor.create_payout(
                tenant,
                idempotency_key=key,
                amount=amount,
                currency=currency,
                bank_account=bank_account,
                connected_account=paid_as,
            )

    async def call() -> Recording:
        try:
            result = await ask()
        except ProcessorRefused as refused:
            if refused.code in FINAL_REFUSALS:
                raise PermanentFailure(refused.code, refused.message) from refused
            raise PayoutRefused(refused.code, refused.message) from refused

        async def record(session: AsyncSession) -> None:
            await _handed_over(session, operation, result)

        return record

    return call


async def _handed_over(session: AsyncSession, operation: Operation, result: PayoutResult) -> None:
    """The processor took the payout: `in_transit` until its arrival date."""
    payout = await repository.get_by_operation(session, operation.id)
    # only this operation moves a pending payout on (a cancel waits while it runs): another attempt took over
    if payout is None or payout.status != "pending":
        raise TransientFailure("the payout changed while the processor was asked")
    tenant = Tenant(payout.installation_id, payout.livemode)
    now = await tenant_now(session, tenant)
    payout.failure_code = None
    payout.failure_message = None
    _move(payout, "in_transit")
    payout.processor_payout = result.processor_id
    payout.arrival_date = now + INSTANT_ARRIVAL if payout.method == "instant" else standard_arrival(now)
    if payout.original_payout_id is not None:  # the bank gave the money up: it is on its way back
        await ledger.post(
            session,
            tenant,
            kind="payout_reversal",
            reference=payout.id,
            idempotency_key=f"{payout.id}:reversal",
            postings=_legs(payout.currency, (BANK_PAYOUTS, -payout.amount), (IN_TRANSIT, payout.amount)),
        )
    await session.flush()
    await announce(session, tenant, payout, "updated")


async def _paid_as(session: AsyncSession, tenant: Tenant, payout: Payout) -> str | None:
    """The processor's account a connected account's payout is made as, where the processor keeps
    accounts (Stripe); None for the platform's own payouts and on the simulator (its books keep no
    balance per account), as before."""
    if payout.connected_account_id is None or not await provider.keeps_connected_accounts(session, tenant):
        return None
    known_as = await at_processor.destinations(session, tenant, [payout.connected_account_id])
    return known_as[payout.connected_account_id]


async def _destination(session: AsyncSession, tenant: Tenant, payout: Payout) -> str:
    if payout.connected_account_id is None:
        return await installation_bank_account(session, tenant)
    account = await connect.get_connected_account(session, tenant, payout.connected_account_id)
    if account.bank_account_number is None:  # payouts_enabled needs one; it cannot have gone since
        raise PermanentFailure("external_account_missing", "The connected account has no bank account.")
    return account.bank_account_number


async def _give_back(session: AsyncSession, tenant: Tenant, payout: Payout) -> None:
    """A payout that ends without reaching the bank: its held money (and fee) returns to the balance. A
    reversal that ends so moved nothing yet; its original can be reversed again."""
    if payout.original_payout_id is not None:
        original = await repository.get(session, tenant, payout.original_payout_id, for_update=True)
        if original is not None and original.reversed_by_id == payout.id:
            original.reversed_by_id = None
            original.updated_at = utcnow()
            await session.flush()
            await announce(session, tenant, original, "updated")
        return
    await ledger.post(
        session,
        tenant,
        kind="payout_returned",
        reference=payout.id,
        idempotency_key=f"{payout.id}:returned",
        postings=_legs(
            payout.currency,
            (IN_TRANSIT, -payout.amount),
            (PAYOUT_FEES, -payout.fee_amount),
            (balance_account(payout), payout.amount + payout.fee_amount),
        ),
    )


REFUSAL = re.compile(r"payout refused: ([a-z_]+): (.*)$", re.S)


async def _on_payout_attempt_failed(session: AsyncSession, operation: Operation, error: AttemptError) -> None:
    """An attempt failed: the payout stays `pending`, its money held, showing the error. A dead letter
    after a refusal moves it to its next key, so that an operator's retry asks the processor anew."""
    if operation.type != PAYOUT_TYPE:
        return
    payout = await repository.get_by_operation(session, operation.id)
    if payout is None or payout.status != "pending":
        return
    payout.last_operation_error = error.as_json()
    if operation.status == "dead_letter" and REFUSAL.search(operation.last_error or "") is not None:
        payout.key_generation += 1
    payout.updated_at = utcnow()
    await session.flush()


async def _on_payout_outcome(session: AsyncSession, operation: Operation) -> None:
    """A payout whose operation ended for good without reaching the bank (a final refusal, or an
    operator's discard of its dead letter) is `failed`, with `payout.failed` once, and its money returns
    to the available balance, in the outcome's own transaction."""
    if operation.type != PAYOUT_TYPE or operation.status not in {"failed", "canceled"}:
        return
    payout = await repository.get_by_operation(session, operation.id)
    if payout is None or payout.status != "pending":
        return
    tenant = Tenant(payout.installation_id, payout.livemode)
    _move(payout, "failed")
    ended = final_failure(operation, payout.last_operation_error)
    payout.failure_code, payout.failure_message = ended.code, ended.message[:500]
    payout.updated_at = utcnow()
    await _give_back(session, tenant, payout)
    await session.flush()
    await announce(session, tenant, payout, "failed")


register_attempt_failure_listener(_on_payout_attempt_failed)
register_outcome_listener(_on_payout_outcome)


async def settle_arrivals(session: AsyncSession, tenant: Tenant, now: datetime) -> int:
    """Payouts (and reversals) whose arrival date has come on this tenant's clock are paid: the
    simulator's timeline. On a real processor, its webhook says when a payout is paid (`payout_paid`)."""
    if not await provider.uses_simulator(session, tenant):
        return 0
    done = 0
    for payout in await repository.arrived(session, tenant, now, ARRIVAL_BATCH):
        await _paid(session, tenant, payout)
        done += 1
    return done


async def _paid(session: AsyncSession, tenant: Tenant, payout: Payout) -> None:
    # a payout's money reaches the bank; a reversal's reaches the balance it had left
    destination = BANK_PAYOUTS if payout.original_payout_id is None else balance_account(payout)
    await ledger.post(
        session,
        tenant,
        kind="payout_paid" if payout.original_payout_id is None else "payout_reversal_paid",
        reference=payout.id,
        idempotency_key=f"{payout.id}:paid",
        postings=_legs(payout.currency, (IN_TRANSIT, -payout.amount), (destination, payout.amount)),
    )
    _move(payout, "paid")
    await session.flush()
    await announce(session, tenant, payout, "paid")


async def _reported(session: AsyncSession, tenant: Tenant, processor_payout: str) -> Payout | None:
    """The payout the processor reports on, once its own answer (the payout's processor id) is
    recorded; until then the report is retried (TransientFailure)."""
    payout = await repository.get_by_processor_id(session, tenant, processor_payout)
    if payout is None:
        return None
    if payout.status == "pending":  # cannot happen once the id is recorded: the same step moves it
        raise TransientFailure(f"payout {payout.id} is still pending: its processor answer is not recorded")
    return payout


async def payout_paid(session: AsyncSession, tenant: Tenant, processor_payout: str) -> str:
    """The processor reports a payout arrived at the bank (Stripe's `payout.paid`): `in_transit` ->
    `paid`, as the arrival sweep moves the simulator's. What it did, for the report's record."""
    payout = await _reported(session, tenant, processor_payout)
    if payout is None:
        return "no payout of this environment has this processor id"
    if payout.status != "in_transit":
        return f"{payout.id} is {payout.status} already"
    await _paid(session, tenant, payout)
    logger.info("payout_paid_by_processor", payout=payout.id)
    return f"{payout.id} paid"


async def payout_failed(
    session: AsyncSession, tenant: Tenant, processor_payout: str, *, code: str, message: str
) -> str:
    """The processor reports a payout the bank did not take (Stripe's `payout.failed`): `in_transit` ->
    `failed`, its money (and fee) back in the balance it left. A payout already `paid` stays so: the
    report names it for the operator (the bank returned the money after the arrival was reported)."""
    payout = await _reported(session, tenant, processor_payout)
    if payout is None:
        return "no payout of this environment has this processor id"
    if payout.status != "in_transit":
        if payout.status == "paid":
            logger.warning("payout_failed_after_paid", payout=payout.id, failure_code=code)
        return f"{payout.id} is {payout.status} already"
    _move(payout, "failed")
    payout.failure_code, payout.failure_message = code, message[:500]
    payout.updated_at = utcnow()
    await _give_back(session, tenant, payout)
    await session.flush()
    await announce(session, tenant, payout, "updated")
    logger.info("payout_failed_by_processor", payout=payout.id, failure_code=code)
    return f"{payout.id} failed: {code}"


async def _sweep(session: AsyncSession) -> int:
    done = 0
    for tenant in await repository.tenants_in_transit(session):
        done += await settle_arrivals(session, tenant, await tenant_now(session, tenant))
    return done


register_periodic("payouts.arrivals", timedelta(seconds=get_settings().cost_report_sweep_seconds), _sweep)
register_due_work("payouts.arrivals", settle_arrivals)
