"""A sandbox clock advance opens the due renewals a sweep batch at a time, each batch committed on its
own so that workers charge while the rest opens. A crash between two commits leaves every
subscription either opened once for the cycle or still due; the next advance (or the scheduler's
sweep) opens the rest, and none is opened or charged twice."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import moneyrail.domains  # noqa: F401  (every domain's due work of a clock advance, in this process)
from moneyrail.billing.service import renewals
from moneyrail.db.uow import UnitOfWork
from moneyrail.processor import provider
from moneyrail.processor.sandbox import SandboxProcessor
from moneyrail.sandbox import service as sandbox
from tests.billing.support import advance, clock_now, wait_until
from tests.billing.test_subscriptions import active_subscription, charges_for

SUBSCRIPTIONS = 3


@pytest.fixture
def in_this_process(bridge, monkeypatch):
    """The advance runs here, one subscription a chunk, with this process's sandbox network."""
    monkeypatch.setattr(renewals, "SWEEP_BATCH", 1)
    simulator = SandboxProcessor(bridge.sessionmaker)
    monkeypatch.setattr(provider, "_simulator", simulator)
    monkeypatch.setattr(provider, "_sandbox", simulator)


class Crash(Exception):
    """The advancing process dies here."""


class AdvancingUnitOfWork(UnitOfWork):
    """The advancing process's unit of work, watched: at each commit, what another connection then
    sees (`seen()`); told to, the process dies before its `crash_before`-th commit."""

    def __init__(self, sessionmaker: Any, seen: Callable[[], int], crash_before: int | None = None) -> None:
        super().__init__(sessionmaker)
        self.seen = seen
        self.crash_before = crash_before
        self.committed: list[int] = []

    async def commit(self) -> None:
        if len(self.committed) + 1 == self.crash_before:
            raise Crash  # this commit's chunk, written but not committed, is lost with the process
        await super().commit()
        self.committed.append(self.seen())


def renewal_invoices(db, subscription_id: str) -> list[tuple[str, str]]:
    """(id, status) of the subscription's invoices after its first, by cycle."""
    rows = db.execute(
        "SELECT id, status FROM subscription_invoices WHERE subscription_id = %s"
        " AND billing_kind = 'cycle' ORDER BY cycle OFFSET 1",
        (subscription_id,),
    ).fetchall()
    return [(str(row[0]), str(row[1])) for row in rows]


def opened_renewals(db, subscriptions: list[dict[str, Any]]) -> Callable[[], int]:
    """How many of these subscriptions' renewal invoices another connection sees (committed)."""

    def count() -> int:
        row = db.execute(
            "SELECT count(*) FROM subscription_invoices"
            " WHERE subscription_id = ANY(%s) AND billing_kind = 'cycle' AND cycle > 0",
            ([s["id"] for s in subscriptions],),
        ).fetchone()
        return int(row[0])

    return count


def test_a_crash_between_two_chunks_leaves_each_renewal_opened_once_or_still_due(
    biller, bridge, db, in_this_process, money_stack
):
    subscriptions = [active_subscription(biller) for _ in range(SUBSCRIPTIONS)]
    seconds = max(s["current_period_end"] for s in subscriptions) - clock_now(biller) + 1

    async def advance_then_crash_before_the_second_commit() -> None:
        seen = opened_renewals(db, subscriptions)
        async with AdvancingUnitOfWork(bridge.sessionmaker, seen, crash_before=2) as uow:
            await sandbox.advance_clock(uow, biller.keys.tenant, seconds, idempotency_key_claimed=False)

    with pytest.raises(Crash):
        bridge.run(advance_then_crash_before_the_second_commit())

    # the first chunk committed: the clock moved and its subscription's renewal is open (or charged
    # by the worker already), once; the second chunk's was lost (the scheduler's sweep, on the moved
    # clock, may have opened others since)
    assert clock_now(biller) >= max(s["current_period_end"] for s in subscriptions)
    opened_before = {s["id"]: renewal_invoices(db, s["id"]) for s in subscriptions}
    assert all(len(found) <= 1 for found in opened_before.values())
    assert sum(len(found) for found in opened_before.values()) >= 1

    # the next advance opens what the crash left due (the scheduler's sweep may have opened some of it
    # meanwhile), and never the first one again: a second invoice for its cycle would be refused
    work = advance(biller, 1)["work_done"]
    assert work["billing.renewals"] <= SUBSCRIPTIONS - 1

    for subscription in subscriptions:
        (renewal,) = wait_until(
            lambda s=subscription: (
                (found := renewal_invoices(db, s["id"]))
                and all(status == "paid" for _, status in found)
                and found
            ),
            timeout=60,
        )
        assert charges_for(db, renewal[0]) == 1
        opened = opened_before[subscription["id"]]
        assert not opened or opened[0][0] == renewal[0]  # the invoice opened before the crash, charged


def test_an_advance_commits_each_chunk_and_counts_them_all(biller, bridge, db, in_this_process, money_stack):
    subscriptions = [active_subscription(biller) for _ in range(SUBSCRIPTIONS)]
    seconds = max(s["current_period_end"] for s in subscriptions) - clock_now(biller) + 1

    async def advance_counting_commits() -> tuple[dict[str, int], list[int]]:
        async with AdvancingUnitOfWork(bridge.sessionmaker, opened_renewals(db, subscriptions)) as uow:
            view = await sandbox.advance_clock(
                uow, biller.keys.tenant, seconds, idempotency_key_claimed=False
            )
            committed = list(uow.committed)  # the advance's own commits, one per chunk
            await uow.commit()
            return view.work_done, committed

    work, committed = bridge.run(advance_counting_commits())
    # one commit per chunk, each chunk seen by another connection at its own commit (the scheduler's
    # sweep, on the same clock, may open a share of them in between)
    assert len(committed) == work["billing.renewals"] >= 1
    assert committed == sorted(set(committed)) and committed[0] >= 1
    wait_until(lambda: all(renewal_invoices(db, s["id"]) for s in subscriptions), timeout=60)


def test_under_a_claimed_idempotency_key_the_advance_is_one_transaction_its_caller_commits(
    biller, bridge, db, in_this_process, money_stack
):
    """The answer stored under the key must commit with the whole effect: no chunk commits early."""
    subscriptions = [active_subscription(biller) for _ in range(SUBSCRIPTIONS)]
    seconds = max(s["current_period_end"] for s in subscriptions) - clock_now(biller) + 1
    seen = opened_renewals(db, subscriptions)

    async def advance_under_a_key() -> tuple[dict[str, int], list[int], int]:
        async with AdvancingUnitOfWork(bridge.sessionmaker, seen) as uow:
            view = await sandbox.advance_clock(uow, biller.keys.tenant, seconds, idempotency_key_claimed=True)
            committed, seen_before_the_callers_commit = list(uow.committed), seen()
            await uow.commit()
            return view.work_done, committed, seen_before_the_callers_commit

    work, committed, seen_before = bridge.run(advance_under_a_key())
    assert committed == [] and seen_before == 0
    # the clock moved in that one transaction, so no sweep could open any of them first
    assert work["billing.renewals"] == SUBSCRIPTIONS
    assert seen() == SUBSCRIPTIONS
