"""The processor each tenant's calls go to (CONVENTIONS.md §12): the environment's own choice, read from
its settings (processor/settings.py, remembered for `key_cache_seconds`).

- `sandbox`: the simulator, one per process, reached over a simulated network when the settings ask for
  one (`MONEYRAIL_SANDBOX_LATENCY_MS` and the failure rates: processor/sandbox/network.py). It plays an
  outside system, so it has its own small connection pool: a request or an operation holds a connection
  of the main pool while it calls the processor, and sharing one pool would let as many callers as there
  are connections each wait for a second one, forever.
- `stripe`: a `StripeProcessor` per Stripe key, kept for the process's life (its HTTP connections are
  shared by every call with that key). When an environment's key changes, the processor of the old one
  is closed a while later, once no call can still be using it.
- none (a live environment not set yet): `ProcessorNotConfigured`, 403. Live mode never reaches the
  simulator, whatever is stored.

`processor_for(work, tenant)` is the choice, made by a request before it records anything.
`routed()` is a `Processor` that makes the choice at each call, by the call's tenant: for what serves
several tenants with one processor (a batch of operations, a sweep, a hosted page that learns its
tenant from its link). There, an environment with no processor is `NoProcessor`, a processor that
cannot be reached: the operation retries (then dead-letters), the sweep skips it.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from moneyrail.config import get_settings
from moneyrail.db.engine import create_engine, create_sessionmaker
from moneyrail.db.uow import UnitOfWork
from moneyrail.errors import MoneyrailError, ProcessorNotConfigured, ProcessorUnavailableError
from moneyrail.kit.tenant import Tenant
from moneyrail.processor import settings as settings_of
from moneyrail.processor.interface import (
    AccountHolder,
    Authorization,
    AuthorizationChoice,
    BatchedTransfer,
    Capture,
    CardInput,
    CardRisk,
    ChargeAnswer,
    CostReport,
    EvidenceFile,
    NetworkDispute,
    OffSessionCharge,
    PayoutResult,
    Processor,
    ProcessorAccount,
    ProcessorAuthorizationRecord,
    ProcessorTransferRecord,
    ProcessorUnavailable,
    RefundResult,
    TokenizedAndAuthorized,
    TokenizedCard,
    TransferRequest,
    TransferResult,
    TransferReversalResult,
)
from moneyrail.processor.sandbox import SandboxProcessor
from moneyrail.processor.sandbox.network import NetworkConditions, NetworkDraws, SandboxNetwork
from moneyrail.processor.stripe import StripeProcessor

# a retired Stripe client is closed this long after its key was replaced: past any call's timeout
RETIRE_AFTER_SECONDS = 120.0

_simulator: SandboxProcessor | None = None
_sandbox: Processor | None = None
_pool: async_sessionmaker[AsyncSession] | None = None
_stripe: dict[str, StripeProcessor] = {}  # by the key's SHA-256
_stripe_key_of: dict[Tenant, str] = {}  # the key (its SHA-256) each tenant's last call used
_retiring: set[asyncio.Task[None]] = set()


class NoProcessor(ProcessorUnavailable):
    """The tenant's environment has no processor (a live one not set yet), met where the request that
    started the work has long been answered: retried like an outage (the operator may set one)."""


def _processor_pool() -> async_sessionmaker[AsyncSession]:
    """The processors' own small pool (see the module's docstring), made on its first caller's loop."""
    global _pool
    if _pool is None:
        settings = get_settings()
        _pool = create_sessionmaker(
            create_engine(settings.model_copy(update={"db_pool_size": min(settings.db_pool_size, 10)}))
        )
    return _pool


def sandbox_simulator() -> SandboxProcessor:
    """The simulator itself, for the sandbox's test helpers that alter its books (they stand for the
    processor going wrong, not for a call). Created lazily, on its first caller's event loop."""
    global _simulator
    if _simulator is None:
        _simulator = SandboxProcessor(_processor_pool())
    return _simulator


def sandbox_processor() -> Processor:
    """The sandbox environments' processor: the simulator, behind the simulated network if one is set."""
    global _sandbox
    if _sandbox is None:
        settings = get_settings()
        conditions = NetworkConditions.from_settings(settings)
        _sandbox = (
            sandbox_simulator()
            if conditions.absent
            else SandboxNetwork(sandbox_simulator(), NetworkDraws(conditions, settings.sandbox_network_seed))
        )
    return _sandbox


def _stripe_processor(tenant: Tenant, api_key: str) -> StripeProcessor:
    digest = hashlib.sha256(api_key.encode()).hexdigest()
    found = _stripe.get(digest)
    if found is None:
        found = _stripe[digest] = StripeProcessor.configured(api_key)
    previous = _stripe_key_of.get(tenant)
    _stripe_key_of[tenant] = digest
    if previous is not None and previous != digest and previous not in _stripe_key_of.values():
        _retire(previous)
    return found


def _retire(digest: str) -> None:
    retired = _stripe.pop(digest, None)
    if retired is None:
        return

    async def close_later() -> None:
        await asyncio.sleep(RETIRE_AFTER_SECONDS)
        await retired.aclose()

    task = asyncio.get_running_loop().create_task(close_later())
    _retiring.add(task)
    task.add_done_callback(_retiring.discard)


async def processor_for(work: AsyncSession | UnitOfWork, tenant: Tenant) -> Processor:
    """The tenant's processor; ProcessorNotConfigured (403) when its environment has none. Given the
    request's unit of work, a lone statement when the settings are not remembered (no session)."""
    chosen = await settings_of.processor_settings(work, tenant)
    if chosen.processor == settings_of.STRIPE and chosen.api_key:
        return _stripe_processor(tenant, chosen.api_key)
    if chosen.processor == settings_of.SANDBOX and not tenant.livemode:
        return sandbox_processor()
    raise ProcessorNotConfigured()


async def batches_calls(work: AsyncSession | UnitOfWork, tenant: Tenant) -> bool:
    """Whether the tenant's processor has batch calls (`Processor.batches_calls`: the simulator): the
    operations that make its transfers and charges then share a message (their type's batch size), else
    each runs alone and a batch's calls go out concurrently. An environment with none: alone."""
    try:
        return (await processor_for(work, tenant)).batches_calls
    except ProcessorNotConfigured:
        return False


async def require_processor(work: AsyncSession | UnitOfWork, tenant: Tenant) -> None:
    """At the intake of work that will need the processor (a payment, a refund, a transfer, a payout): a
    live environment with none is refused (403) before anything is recorded. A sandbox always has one."""
    if tenant.livemode:
        await processor_for(work, tenant)


async def keeps_connected_accounts(work: AsyncSession | UnitOfWork, tenant: Tenant) -> bool:
    """Whether the tenant's processor keeps connected accounts of its own (Stripe), which moneyrail's
    must be linked to (connect/at_processor.py) before money moves to them; the simulator knows them by
    moneyrail's ids."""
    return (await settings_of.processor_settings(work, tenant)).processor == settings_of.STRIPE


async def uses_simulator(work: AsyncSession | UnitOfWork, tenant: Tenant) -> bool:
    """Whether the tenant's money moves on the simulator, whose own timeline (a payout's arrival, a
    dispute's decision) the sweeps play; a real processor reports them by webhook instead."""
    if tenant.livemode:
        return False
    return (await settings_of.processor_settings(work, tenant)).processor == settings_of.SANDBOX


def api_error(fault: ProcessorUnavailable) -> MoneyrailError:
    """What a request answers when the processor could not be used: 403 processor_not_configured for an
    environment with none, else 503 processor_unavailable (with Retry-After: nothing was decided)."""
    if isinstance(fault, NoProcessor):
        return ProcessorNotConfigured()
    return ProcessorUnavailableError(
        f"The card network did not answer ({fault}). Nothing was charged; retry with the same "
        "Idempotency-Key."
    )


async def aclose() -> None:
    """Close every Stripe client (a process shutting down)."""
    for processor in list(_stripe.values()):
        await processor.aclose()
    _stripe.clear()
    _stripe_key_of.clear()


def routed() -> Processor:
    """The processor that chooses per call, by the call's tenant (see the module's docstring)."""
    return _ROUTED


class TenantRouted:
    """Every call of the `Processor` protocol, made on the processor of the call's tenant."""

    # whether a batch's calls go out as one is each tenant's processor's own answer (`batches_calls`)
    batches_calls = False

    async def of(self, tenant: Tenant) -> Processor:
        async with sandbox_simulator().sessionmaker() as session:
            try:
                return await processor_for(session, tenant)
            except ProcessorNotConfigured as refused:
                raise NoProcessor(refused.message) from None

    async def tokenize_card(self, tenant: Tenant, card: CardInput) -> TokenizedCard:
        return await (await self.of(tenant)).tokenize_card(tenant, card)

    async def tokenize_and_authorize(
        self, tenant: Tenant, card: CardInput, choose: AuthorizationChoice
    ) -> TokenizedAndAuthorized:
        return await (await self.of(tenant)).tokenize_and_authorize(tenant, card, choose)

    async def authorize(
        self,
        tenant: Tenant,
        *,
        idempotency_key: str,
        card_token: str,
        card_fingerprint: str,
        amount: int,
        currency: str,
        off_session: bool,
        reference: str,
    ) -> Authorization:
        return await (await self.of(tenant)).authorize(
            tenant,
            idempotency_key=idempotency_key,
            card_token=card_token,
            card_fingerprint=card_fingerprint,
            amount=amount,
            currency=currency,
            off_session=off_session,
            reference=reference,
        )

    async def charge_off_session_many(
        self, tenant: Tenant, charges: Sequence[OffSessionCharge]
    ) -> list[ChargeAnswer]:
        return await (await self.of(tenant)).charge_off_session_many(tenant, charges)

    async def open_authorizations(
        self, *, created_after: datetime, created_before: datetime, limit: int
    ) -> list[ProcessorAuthorizationRecord]:
        """The simulator's (every sandbox tenant's at once): the orphan sweep's listing."""
        return await sandbox_processor().open_authorizations(
            created_after=created_after, created_before=created_before, limit=limit
        )

    async def complete_authentication(
        self, tenant: Tenant, *, idempotency_key: str, authorization_id: str, approved: bool
    ) -> Authorization:
        return await (await self.of(tenant)).complete_authentication(
            tenant, idempotency_key=idempotency_key, authorization_id=authorization_id, approved=approved
        )

    async def capture(
        self, tenant: Tenant, *, idempotency_key: str, authorization_id: str, amount: int
    ) -> Capture:
        return await (await self.of(tenant)).capture(
            tenant, idempotency_key=idempotency_key, authorization_id=authorization_id, amount=amount
        )

    async def cancel(self, tenant: Tenant, *, idempotency_key: str, authorization_id: str) -> Authorization:
        return await (await self.of(tenant)).cancel(
            tenant, idempotency_key=idempotency_key, authorization_id=authorization_id
        )

    async def increment_authorization(
        self, tenant: Tenant, *, idempotency_key: str, authorization_id: str, amount: int
    ) -> Authorization:
        return await (await self.of(tenant)).increment_authorization(
            tenant, idempotency_key=idempotency_key, authorization_id=authorization_id, amount=amount
        )

    async def refund(
        self, tenant: Tenant, *, idempotency_key: str, authorization_id: str, amount: int
    ) -> RefundResult:
        return await (await self.of(tenant)).refund(
            tenant, idempotency_key=idempotency_key, authorization_id=authorization_id, amount=amount
        )

    async def cost_report(
        self, tenant: Tenant, *, authorization_id: str, as_of: datetime | None = None
    ) -> CostReport | None:
        return await (await self.of(tenant)).cost_report(
            tenant, authorization_id=authorization_id, as_of=as_of
        )

    async def create_connected_account(
        self,
        tenant: Tenant,
        *,
        idempotency_key: str,
        country: str,
        email: str | None = None,
        reference: str | None = None,
        bank_account: str | None = None,
        holder: AccountHolder | None = None,
    ) -> ProcessorAccount:
        return await (await self.of(tenant)).create_connected_account(
            tenant,
            idempotency_key=idempotency_key,
            country=country,
            email=email,
            reference=reference,
            bank_account=bank_account,
            holder=holder,
        )

    async def update_connected_account(
        self,
        tenant: Tenant,
        *,
        idempotency_key: str,
        processor_account: str,
        country: str,
        bank_account: str | None = None,
        holder: AccountHolder | None = None,
    ) -> ProcessorAccount:
        return await (await self.of(tenant)).update_connected_account(
            tenant,
            idempotency_key=idempotency_key,
            processor_account=processor_account,
            country=country,
            bank_account=bank_account,
            holder=holder,
        )

    async def create_transfer(
        self,
        tenant: Tenant,
        *,
        idempotency_key: str,
        amount: int,
        currency: str,
        destination: str,
        source_authorization_id: str | None = None,
    ) -> TransferResult:
        return await (await self.of(tenant)).create_transfer(
            tenant,
            idempotency_key=idempotency_key,
            amount=amount,
            currency=currency,
            destination=destination,
            source_authorization_id=source_authorization_id,
        )

    async def create_transfers(
        self, tenant: Tenant, *, idempotency_key: str, transfers: Sequence[TransferRequest]
    ) -> list[BatchedTransfer]:
        return await (await self.of(tenant)).create_transfers(
            tenant, idempotency_key=idempotency_key, transfers=transfers
        )

    async def reverse_transfer(
        self, tenant: Tenant, *, idempotency_key: str, transfer_id: str, amount: int
    ) -> TransferReversalResult:
        return await (await self.of(tenant)).reverse_transfer(
            tenant, idempotency_key=idempotency_key, transfer_id=transfer_id, amount=amount
        )

    async def create_payout(
        self,
        tenant: Tenant,
        *,
        idempotency_key: str,
        amount: int,
        currency: str,
        bank_account: str,
        connected_account: str | None = None,
    ) -> PayoutResult:
        return await (await self.of(tenant)).create_payout(
            tenant,
            idempotency_key=idempotency_key,
            amount=amount,
            currency=currency,
            bank_account=bank_account,
            connected_account=connected_account,
        )

    async def reverse_payout(
        self,
        tenant: Tenant,
        *,
        idempotency_key: str,
        payout_id: str,
        amount: int,
        currency: str,
        connected_account: str | None = None,
    ) -> PayoutResult:
        return await (await self.of(tenant)).reverse_payout(
            tenant,
            idempotency_key=idempotency_key,
            payout_id=payout_id,
            amount=amount,
            currency=currency,
            connected_account=connected_account,
        )

    async def list_transfers(self, tenant: Tenant) -> list[ProcessorTransferRecord]:
        return await (await self.of(tenant)).list_transfers(tenant)

    async def card_risk(self, tenant: Tenant, *, card_token: str) -> CardRisk:
        return await (await self.of(tenant)).card_risk(tenant, card_token=card_token)

    async def open_dispute(
        self, tenant: Tenant, *, authorization_id: str, amount: int, reason: str, as_of: datetime
    ) -> NetworkDispute:
        return await (await self.of(tenant)).open_dispute(
            tenant, authorization_id=authorization_id, amount=amount, reason=reason, as_of=as_of
        )

    async def due_disputes(self, tenant: Tenant, *, as_of: datetime) -> list[NetworkDispute]:
        return await (await self.of(tenant)).due_disputes(tenant, as_of=as_of)

    async def submit_dispute_evidence(
        self,
        tenant: Tenant,
        *,
        idempotency_key: str,
        dispute_id: str,
        evidence_text: str,
        as_of: datetime,
        evidence_files: Sequence[EvidenceFile] = (),
    ) -> None:
        await (await self.of(tenant)).submit_dispute_evidence(
            tenant,
            idempotency_key=idempotency_key,
            dispute_id=dispute_id,
            evidence_text=evidence_text,
            as_of=as_of,
            evidence_files=evidence_files,
        )

    async def accept_dispute(
        self, tenant: Tenant, *, idempotency_key: str, dispute_id: str, as_of: datetime
    ) -> None:
        await (await self.of(tenant)).accept_dispute(
            tenant, idempotency_key=idempotency_key, dispute_id=dispute_id, as_of=as_of
        )

    async def dispute_outcome(self, tenant: Tenant, *, dispute_id: str, as_of: datetime) -> str | None:
        return await (await self.of(tenant)).dispute_outcome(tenant, dispute_id=dispute_id, as_of=as_of)


_ROUTED = TenantRouted()
