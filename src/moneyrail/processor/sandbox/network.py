"""The sandbox simulator reached over a simulated network, as a real processor is: far away, and now and
then unreachable.

Off unless a `MONEYRAIL_SANDBOX_*` network setting is set (config.py; processor/provider.py then puts
this in front of the simulator). Every call of the `Processor` protocol takes a round trip drawn
uniformly within latency ± jitter, half before the simulator acts and half after, and meets one fate:

- delivered: the simulator's answer (or refusal) arrives;
- reset: the connection breaks before the request arrives: nothing was done;
- lost request: the call times out and the processor never saw it: nothing was done;
- lost answer: the call times out after the processor acted: the effect stands, and only the call's
  idempotency key keeps the caller's retry from doing it twice.

The three failures raise ProcessorUnavailable once the whole round trip has passed (a caller whose
timeout is that round trip). The waits are `asyncio.sleep`s outside the simulator's own connections
and transactions: the simulator holds a connection only for its statement between them.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, TypeVar

from moneyrail.config import Settings
from moneyrail.kit.tenant import Tenant
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
    ProcessorAccount,
    ProcessorAuthorizationRecord,
    ProcessorRefused,
    ProcessorTransferRecord,
    ProcessorUnavailable,
    RefundResult,
    TokenizedAndAuthorized,
    TokenizedCard,
    TransferRequest,
    TransferResult,
    TransferReversalResult,
)

from .processor import SandboxProcessor

T = TypeVar("T")
Fate = Literal["delivered", "reset", "lost_request", "lost_answer"]

FAILURES: dict[Fate, str] = {
    "reset": "the connection was reset before the request arrived",
    "lost_request": "the call timed out; the request never arrived",
    "lost_answer": "the call timed out; the answer was lost",
}


@dataclass(frozen=True)
class NetworkConditions:
    """The network between moneyrail and the simulator: round trips in milliseconds, each call's chances
    of each failure (they add up to at most 1)."""

    latency_ms: float = 0.0
    jitter_ms: float = 0.0
    reset_rate: float = 0.0
    lost_request_rate: float = 0.0
    lost_answer_rate: float = 0.0

    @classmethod
    def from_settings(cls, settings: Settings) -> NetworkConditions:
        return cls(
            latency_ms=settings.sandbox_latency_ms,
            jitter_ms=settings.sandbox_latency_jitter_ms,
            reset_rate=settings.sandbox_reset_rate,
            lost_request_rate=settings.sandbox_lost_request_rate,
            lost_answer_rate=settings.sandbox_lost_answer_rate,
        )

    @property
    def absent(self) -> bool:
        """No latency and no failure: the simulator is called directly."""
        return self == NetworkConditions()


class NetworkDraws:
    """Each call's fate and round trip, from a generator of its own (seeded: the same draws again)."""

    def __init__(self, conditions: NetworkConditions, seed: int | None = None) -> None:
        self.conditions = conditions
        self._random = random.Random(seed)  # noqa: S311 - a simulation, not secrecy

    def next(self) -> tuple[Fate, float]:
        """The next call's fate, and its round trip in seconds."""
        conditions, draw = self.conditions, self._random.random()
        failures: tuple[tuple[Fate, float], ...] = (
            ("reset", conditions.reset_rate),
            ("lost_request", conditions.lost_request_rate),
            ("lost_answer", conditions.lost_answer_rate),
        )
        fate: Fate = "delivered"
        for candidate, rate in failures:
            if draw < rate:
                fate = candidate
                break
            draw -= rate
        latency_ms = conditions.latency_ms
        if conditions.jitter_ms > 0:
            latency_ms += self._random.uniform(-conditions.jitter_ms, conditions.jitter_ms)
        return fate, max(0.0, latency_ms) / 1000


class SandboxNetwork:
    """A `Processor`: every call goes to `simulator` over the network `draws` describes."""

    batches_calls = True  # a batch is still one exchange, the simulator's one statement

    def __init__(self, simulator: SandboxProcessor, draws: NetworkDraws) -> None:
        self.simulator = simulator
        self.draws = draws

    async def _over_network(self, call: Callable[[], Awaitable[T]]) -> T:
        fate, round_trip = self.draws.next()
        await _wait(round_trip / 2)  # the request on its way
        if fate == "delivered":
            try:
                answer = await call()
            except (ProcessorRefused, ProcessorUnavailable):
                await _wait(round_trip / 2)  # the refusal on its way back
                raise
            await _wait(round_trip / 2)  # the answer on its way back
            return answer
        if fate == "lost_answer":
            with suppress(ProcessorRefused, ProcessorUnavailable):  # whatever it answered never arrives
                await call()
        await _wait(round_trip / 2)
        raise ProcessorUnavailable(f"sandbox network: {FAILURES[fate]}")

    # cards and charges -------------------------------------------------------------------------------
    async def tokenize_card(self, tenant: Tenant, card: CardInput) -> TokenizedCard:
        return await self._over_network(lambda: self.simulator.tokenize_card(tenant, card))

    async def tokenize_and_authorize(
        self, tenant: Tenant, card: CardInput, choose: AuthorizationChoice
    ) -> TokenizedAndAuthorized:
        return await self._over_network(lambda: self.simulator.tokenize_and_authorize(tenant, card, choose))

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
        return await self._over_network(
            lambda: self.simulator.authorize(
                tenant,
                idempotency_key=idempotency_key,
                card_token=card_token,
                card_fingerprint=card_fingerprint,
                amount=amount,
                currency=currency,
                off_session=off_session,
                reference=reference,
            )
        )

    async def charge_off_session_many(
        self, tenant: Tenant, charges: Sequence[OffSessionCharge]
    ) -> list[ChargeAnswer]:
        return await self._over_network(lambda: self.simulator.charge_off_session_many(tenant, charges))

    async def open_authorizations(
        self, *, created_after: datetime, created_before: datetime, limit: int
    ) -> list[ProcessorAuthorizationRecord]:
        return await self._over_network(
            lambda: self.simulator.open_authorizations(
                created_after=created_after, created_before=created_before, limit=limit
            )
        )

    async def complete_authentication(
        self, tenant: Tenant, *, idempotency_key: str, authorization_id: str, approved: bool
    ) -> Authorization:
        return await self._over_network(
            lambda: self.simulator.complete_authentication(
                tenant, idempotency_key=idempotency_key, authorization_id=authorization_id, approved=approved
            )
        )

    async def capture(
        self, tenant: Tenant, *, idempotency_key: str, authorization_id: str, amount: int
    ) -> Capture:
        return await self._over_network(
            lambda: self.simulator.capture(
                tenant, idempotency_key=idempotency_key, authorization_id=authorization_id, amount=amount
            )
        )

    async def cancel(self, tenant: Tenant, *, idempotency_key: str, authorization_id: str) -> Authorization:
        return await self._over_network(
            lambda: self.simulator.cancel(
                tenant, idempotency_key=idempotency_key, authorization_id=authorization_id
            )
        )

    async def increment_authorization(
        self, tenant: Tenant, *, idempotency_key: str, authorization_id: str, amount: int
    ) -> Authorization:
        return await self._over_network(
            lambda: self.simulator.increment_authorization(
                tenant, idempotency_key=idempotency_key, authorization_id=authorization_id, amount=amount
            )
        )

    async def refund(
        self, tenant: Tenant, *, idempotency_key: str, authorization_id: str, amount: int
    ) -> RefundResult:
        return await self._over_network(
            lambda: self.simulator.refund(
                tenant, idempotency_key=idempotency_key, authorization_id=authorization_id, amount=amount
            )
        )

    async def cost_report(
        self, tenant: Tenant, *, authorization_id: str, as_of: datetime | None = None
    ) -> CostReport | None:
        return await self._over_network(
            lambda: self.simulator.cost_report(tenant, authorization_id=authorization_id, as_of=as_of)
        )

    async def card_risk(self, tenant: Tenant, *, card_token: str) -> CardRisk:
        return await self._over_network(lambda: self.simulator.card_risk(tenant, card_token=card_token))

    # transfers and payouts ---------------------------------------------------------------------------
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
        return await self._over_network(
            lambda: self.simulator.create_connected_account(
                tenant,
                idempotency_key=idempotency_key,
                country=country,
                email=email,
                reference=reference,
                bank_account=bank_account,
                holder=holder,
            )
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
        return await self._over_network(
            lambda: self.simulator.update_connected_account(
                tenant,
                idempotency_key=idempotency_key,
                processor_account=processor_account,
                country=country,
                bank_account=bank_account,
                holder=holder,
            )
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
        return await self._over_network(
            lambda: self.simulator.create_transfer(
                tenant,
                idempotency_key=idempotency_key,
                amount=amount,
                currency=currency,
                destination=destination,
                source_authorization_id=source_authorization_id,
            )
        )

    async def create_transfers(
        self, tenant: Tenant, *, idempotency_key: str, transfers: Sequence[TransferRequest]
    ) -> list[BatchedTransfer]:
        return await self._over_network(
            lambda: self.simulator.create_transfers(
                tenant, idempotency_key=idempotency_key, transfers=transfers
            )
        )

    async def reverse_transfer(
        self, tenant: Tenant, *, idempotency_key: str, transfer_id: str, amount: int
    ) -> TransferReversalResult:
        return await self._over_network(
            lambda: self.simulator.reverse_transfer(
                tenant, idempotency_key=idempotency_key, transfer_id=transfer_id, amount=amount
            )
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
        return await self._over_network(
            lambda: self.simulator.create_payout(
                tenant,
                idempotency_key=idempotency_key,
                amount=amount,
                currency=currency,
                bank_account=bank_account,
                connected_account=connected_account,
            )
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
        return await self._over_network(
            lambda: self.simulator.reverse_payout(
                tenant,
                idempotency_key=idempotency_key,
                payout_id=payout_id,
                amount=amount,
                currency=currency,
                connected_account=connected_account,
            )
        )

    async def list_transfers(self, tenant: Tenant) -> list[ProcessorTransferRecord]:
        return await self._over_network(lambda: self.simulator.list_transfers(tenant))

    # disputes ---------------------------------------------------------------------------------------
    async def open_dispute(
        self, tenant: Tenant, *, authorization_id: str, amount: int, reason: str, as_of: datetime
    ) -> NetworkDispute:
        return await self._over_network(
            lambda: self.simulator.open_dispute(
                tenant, authorization_id=authorization_id, amount=amount, reason=reason, as_of=as_of
            )
        )

    async def due_disputes(self, tenant: Tenant, *, as_of: datetime) -> list[NetworkDispute]:
        return await self._over_network(lambda: self.simulator.due_disputes(tenant, as_of=as_of))

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
        await self._over_network(
            lambda: self.simulator.submit_dispute_evidence(
                tenant,
                idempotency_key=idempotency_key,
                dispute_id=dispute_id,
                evidence_text=evidence_text,
                as_of=as_of,
                evidence_files=evidence_files,
            )
        )

    async def accept_dispute(
        self, tenant: Tenant, *, idempotency_key: str, dispute_id: str, as_of: datetime
    ) -> None:
        await self._over_network(
            lambda: self.simulator.accept_dispute(
                tenant, idempotency_key=idempotency_key, dispute_id=dispute_id, as_of=as_of
            )
        )

    async def dispute_outcome(self, tenant: Tenant, *, dispute_id: str, as_of: datetime) -> str | None:
        return await self._over_network(
            lambda: self.simulator.dispute_outcome(tenant, dispute_id=dispute_id, as_of=as_of)
        )


async def _wait(seconds: float) -> None:
    if seconds > 0:
        await asyncio.sleep(seconds)
