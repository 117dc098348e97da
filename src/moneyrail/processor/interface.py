"""What moneyrail asks of a payment processor. Every call carries an idempotency key derived from the
operation (`"<operation id>:<step>"`), so a retried or re-driven attempt never moves money twice."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from moneyrail.engine.outcomes import PermanentFailure, TransientFailure
from moneyrail.kit.tenant import Tenant

# The kinds of call a fault can be injected into (CONVENTIONS.md §11 `operation_type`).
PROCESSOR_OPERATION_TYPES = (
    "authorize",
    "capture",
    "cancel",
    "increment_authorization",
    "refund",
    "transfer",
    "transfer_reversal",
    "payout",
)


class ProcessorUnavailable(TransientFailure):
    """The processor could not be reached or answered with a fault: try again later."""


class ProcessorRefused(PermanentFailure):
    """The processor refused the call for good (a closed account, a decline)."""


def operation_key(operation_id: str, step: str) -> str:
    return f"{operation_id}:{step}"


@dataclass(frozen=True)
class TransferResult:
    processor_id: str
    amount: int
    currency: str
    destination: str


@dataclass(frozen=True)
class PayoutResult:
    processor_id: str
    amount: int
    currency: str
    status: str


class Processor(Protocol):
    async def create_transfer(
        self, tenant: Tenant, *, idempotency_key: str, amount: int, currency: str, destination: str
    ) -> TransferResult: ...

    async def create_payout(
        self, tenant: Tenant, *, idempotency_key: str, amount: int, currency: str, bank_account: str
    ) -> PayoutResult: ...
