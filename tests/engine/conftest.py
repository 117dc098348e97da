"""Real worker and scheduler processes for the engine's tests."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from moneyrail.engine.service import create_operation
from tests.engine.probe import PROBE_ACTOR, PROBE_TYPE
from tests.harness import AsyncBridge, Servers, verify_ledger
from tests.stacks import EngineStack, shared_stack


@pytest.fixture
def engine_stack(servers: Servers) -> EngineStack:
    """A worker and a scheduler with the engine's settings, shared with the files before (tests/stacks.py)."""
    return shared_stack(servers)


def create_probe(bridge: AsyncBridge, tenant: Any, amount: int = 1250, **payload: Any) -> str:
    (operation_id,) = create_probes(bridge, tenant, [{"amount": amount, **payload}])
    return operation_id


def create_probes(
    bridge: AsyncBridge, tenant: Any, payloads: list[dict[str, Any]], operation_type: str = PROBE_TYPE
) -> list[str]:
    """Probe operations committed in one transaction, so the relay finds them all due at once."""

    async def work(session: Any) -> list[str]:
        operations = [
            await create_operation(
                session,
                tenant,
                operation_type=operation_type,
                actor_name=PROBE_ACTOR,
                resource=None,
                payload={"amount": 1250, "currency": "eur", "destination": "acct_courier", **payload},
            )
            for payload in payloads
        ]
        return [operation.id for operation in operations]

    operation_ids: list[str] = bridge.in_unit_of_work(work)
    return operation_ids


def wait_for_operation(api: httpx.Client, operation_id: str, statuses: set[str], timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    last: dict = {}
    while time.monotonic() < deadline:
        last = api.get(f"/v1/operations/{operation_id}").json()
        if last.get("status") in statuses:
            return last
        time.sleep(0.1)
    raise AssertionError(f"operation {operation_id} never reached {statuses}: {last}")


def processor_calls(db: Any, installation_id: str) -> list[tuple[str, bool]]:
    return [
        (row[0], row[1])
        for row in db.execute(
            "SELECT idempotency_key, succeeded FROM sandbox_processor_calls WHERE installation_id = %s",
            (installation_id,),
        )
    ]


def journal_entries(db: Any, operation_id: str) -> int:
    row = db.execute(
        "SELECT count(*) FROM journal_transactions WHERE reference = %s", (operation_id,)
    ).fetchone()
    return int(row[0])


def attempt_outcomes(db: Any, operation_id: str) -> list[str | None]:
    rows = db.execute(
        "SELECT outcome FROM operation_attempts WHERE operation_id = %s ORDER BY number", (operation_id,)
    )
    return [row[0] for row in rows]


def assert_ledger_verifies(servers: Servers) -> None:
    """What `moneyrail ledger verify` checks, after every fault test (tests/harness.py `verify_ledger`)."""
    verify_ledger(servers)
