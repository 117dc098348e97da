"""One tenant's sandbox card network, called through the Processor interface on the bridge's loop."""

from __future__ import annotations

import secrets
from typing import Any

import pytest

from moneyrail.db.uow import UnitOfWork
from moneyrail.kit.clock import utcnow
from moneyrail.kit.tenant import Tenant
from moneyrail.processor.interface import Authorization, CardDetails, ProcessorRefused, TokenizedCard
from moneyrail.processor.sandbox import SandboxProcessor
from moneyrail.sandbox.service import advance_clock, inject_processor_faults
from tests.harness import AsyncBridge

SUCCEEDS = "4242424242424242"


def card(number: str = SUCCEEDS, **fields: Any) -> CardDetails:
    details: dict[str, Any] = {"exp_month": 12, "exp_year": utcnow().year + 3, "cvc": "123", **fields}
    return CardDetails(number=number, **details)


class Network:
    """One tenant's view of the sandbox network, called synchronously; keys are fresh unless given."""

    def __init__(self, processor: SandboxProcessor, bridge: AsyncBridge, tenant: Tenant) -> None:
        self.processor = processor
        self.bridge = bridge
        self.tenant = tenant

    def tokenize(self, number: str = SUCCEEDS, **fields: Any) -> TokenizedCard:
        return self.bridge.run(self.processor.tokenize_card(self.tenant, card(number, **fields)))

    def call(self, operation: str, *, key: str | None = None, **arguments: Any) -> Any:
        key = key or f"op_{secrets.token_hex(8)}:{operation}"
        if operation == "authorize":  # what moneyrail sends besides the token, unless a test says
            arguments.setdefault("card_fingerprint", f"fp_{arguments['card_token']}")
            arguments.setdefault("reference", "pi_test")
        method = getattr(self.processor, operation)
        return self.bridge.run(method(self.tenant, idempotency_key=key, **arguments))

    def refused(self, operation: str, **arguments: Any) -> ProcessorRefused:
        with pytest.raises(ProcessorRefused) as raised:
            self.call(operation, **arguments)
        return raised.value

    def authorize(
        self, number: str = SUCCEEDS, amount: int = 1000, *, off_session: bool = False, **options: Any
    ) -> Authorization:
        tokenized = self.tokenize(number)
        options.setdefault("card_fingerprint", tokenized.fingerprint)
        return self.call(  # type: ignore[no-any-return]
            "authorize",
            card_token=tokenized.token,
            amount=amount,
            currency="eur",
            off_session=off_session,
            **options,
        )

    def captured(self, amount: int = 1000, captured: int | None = None) -> Authorization:
        authorization = self.authorize(amount=amount)
        self.call("capture", authorization_id=authorization.id, amount=captured or amount)
        return authorization

    def cost_report(self, authorization_id: str) -> Any:
        return self.bridge.run(self.processor.cost_report(self.tenant, authorization_id=authorization_id))

    def advance_clock(self, seconds: int) -> None:
        async def advance() -> None:
            async with UnitOfWork(self.bridge.sessionmaker) as uow:
                await advance_clock(uow, self.tenant, seconds, idempotency_key_claimed=False)
                await uow.commit()

        self.bridge.run(advance())

    def inject_faults(self, operation_type: str, mode: str, count: int = 1) -> None:
        self.bridge.in_unit_of_work(
            lambda session: inject_processor_faults(
                session, self.tenant, operation_type=operation_type, mode=mode, count=count
            )
        )
