"""Two real connections at once: hot accounts do not serialize payments, locks come in one order,
an idempotency key posts once, and sealing waits for the transactions that could still come first."""

from __future__ import annotations

import asyncio

from sqlalchemy import text

from moneyrail.ledger import service as ledger
from moneyrail.ledger.service import Posting
from tests.helpers import count_rows
from tests.ledger.support import balance, block_of, ensure_accounts, post, seal_until_sealed, two_connections

STILL_WAITING = 0.5  # seconds a task must stay blocked to count as waiting


def payment(merchant: str, amount: int, fee: int) -> list[Posting]:
    return [
        Posting("customer_funds", -amount, "usd"),
        Posting(f"merchant:{merchant}:available", amount - fee, "usd"),
        Posting("platform:fees", fee, "usd"),
    ]


def test_two_payments_on_the_hot_fee_account_do_not_wait_for_each_other(servers, bridge, tenant):
    ensure_accounts(
        bridge, tenant.tenant, "customer_funds", "merchant:mer_a:available", "merchant:mer_b:available"
    )
    ensure_accounts(bridge, tenant.tenant, "platform:fees")

    async def scenario() -> None:
        async with two_connections(servers.database_url) as sessions, sessions() as a, sessions() as b:
            await ledger.post(a, tenant.tenant, kind="payment", postings=payment("mer_a", 10_000, 290))
            # A has posted to platform:fees and has not committed. B must not wait for it: a lock
            # on any row A touched would stop B here until lock_timeout, then fail.
            await b.execute(text("SET LOCAL lock_timeout = '3s'"))
            await asyncio.wait_for(
                ledger.post(b, tenant.tenant, kind="payment", postings=payment("mer_b", 5_000, 145)),
                timeout=5,
            )
            await b.commit()
            await a.commit()

    bridge.run(scenario())
    assert balance(bridge, tenant.tenant, "platform:fees") == 290 + 145


def test_two_payouts_from_one_merchant_never_overdraw_it(servers, bridge, db, tenant):
    # The merchant has 100.00 available and asks for two payouts of 70.00 at the same moment.
    # Each payout locks the accounts, reads the balance, and posts only if it covers the amount.
    post(
        bridge, tenant.tenant, ("customer_funds", -10_000, "usd"), ("merchant:mer_a:available", 10_000, "usd")
    )
    merchant, in_transit = ensure_accounts(
        bridge, tenant.tenant, "merchant:mer_a:available", "payouts:in_transit"
    )

    async def pay_out(session, account_ids) -> bool:
        await ledger.lock_accounts(session, account_ids)
        if await ledger.balance(session, tenant.tenant, "merchant:mer_a:available", "usd") < 7_000:
            return False
        await ledger.post(
            session,
            tenant.tenant,
            kind="payout",
            postings=[
                Posting("merchant:mer_a:available", -7_000, "usd"),
                Posting("payouts:in_transit", 7_000, "usd"),
            ],
        )
        return True

    async def scenario() -> tuple[bool, bool]:
        async with two_connections(servers.database_url) as sessions, sessions() as a, sessions() as b:
            first = await pay_out(a, [merchant, in_transit])
            # B names the accounts in the other order; the locks are still taken in one order
            second = asyncio.create_task(pay_out(b, [in_transit, merchant]))
            await asyncio.sleep(STILL_WAITING)
            assert not second.done(), "the second payout read the balance while the first was moving it"
            await a.commit()
            result = await asyncio.wait_for(second, timeout=10)
            await b.commit()
            return first, result

    assert bridge.run(scenario()) == (True, False)
    assert balance(bridge, tenant.tenant, "merchant:mer_a:available") == 3_000


def test_account_locks_taken_in_opposite_orders_never_deadlock(servers, bridge, tenant):
    ids = ensure_accounts(bridge, tenant.tenant, *(f"merchant:mer_{n}:available" for n in range(6)))

    async def locker(sessions, order) -> int:
        rounds = 0
        for _ in range(40):
            async with sessions() as session:
                await ledger.lock_accounts(session, order)
                await asyncio.sleep(0)
                await session.commit()
                rounds += 1
        return rounds

    async def scenario() -> list[int]:
        async with two_connections(servers.database_url) as sessions:
            return await asyncio.wait_for(
                asyncio.gather(locker(sessions, ids), locker(sessions, list(reversed(ids)))), timeout=60
            )

    assert bridge.run(scenario()) == [40, 40]


def test_a_concurrent_retry_with_the_same_idempotency_key_waits_and_returns_the_first(
    servers, bridge, db, tenant
):
    ensure_accounts(bridge, tenant.tenant, "merchant:mer_a:available", "platform:fees")
    fee = [Posting("merchant:mer_a:available", -290, "usd"), Posting("platform:fees", 290, "usd")]

    async def scenario() -> tuple[str, str]:
        async with two_connections(servers.database_url) as sessions, sessions() as a, sessions() as b:
            first = await ledger.post(a, tenant.tenant, kind="fee", postings=fee, idempotency_key="op_9:fee")
            retry = asyncio.create_task(
                ledger.post(b, tenant.tenant, kind="fee", postings=fee, idempotency_key="op_9:fee")
            )
            await asyncio.sleep(STILL_WAITING)
            assert not retry.done()  # it cannot know yet whether the first will commit
            await a.commit()
            second = await asyncio.wait_for(retry, timeout=10)
            await b.commit()
            return first.id, second.id

    first_id, second_id = bridge.run(scenario())
    assert first_id == second_id
    assert count_rows(db, "journal_transactions", tenant.installation_id) == 1
    assert balance(bridge, tenant.tenant, "platform:fees") == 290


def test_sealing_waits_for_a_transaction_still_open_and_then_keeps_insertion_order(
    servers, bridge, db, tenant
):
    ensure_accounts(
        bridge, tenant.tenant, "customer_funds", "merchant:mer_a:available", "merchant:mer_b:available"
    )
    ensure_accounts(bridge, tenant.tenant, "platform:fees")

    async def scenario() -> tuple[str, str]:
        async with two_connections(servers.database_url) as sessions, sessions() as a, sessions() as b:
            early = await ledger.post(a, tenant.tenant, kind="payment", postings=payment("mer_a", 1_000, 29))
            late = await ledger.post(b, tenant.tenant, kind="payment", postings=payment("mer_b", 2_000, 58))
            await b.commit()
            # `late` is committed, but `early` (inserted first) is still open: sealing `late` now
            # would put it ahead of `early` for ever. Neither is sealed yet.
            async with sessions() as sealer:
                await ledger.seal_pending(sealer)
                await sealer.commit()
            sealed = await b.scalar(
                text("SELECT count(*) FROM ledger_block_entries WHERE transaction_id IN (:early, :late)"),
                {"early": early.id, "late": late.id},
            )
            await b.commit()
            assert sealed == 0
            await a.commit()
            assert early.seq < late.seq
            return early.id, late.id

    early_id, late_id = bridge.run(scenario())
    seal_until_sealed(bridge, db, [early_id, late_id])
    (early_block, early_position), (late_block, late_position) = (
        db.execute(
            "SELECT block_height, position FROM ledger_block_entries WHERE transaction_id = %s",
            (transaction_id,),
        ).fetchone()
        for transaction_id in (early_id, late_id)
    )
    assert (early_block, early_position) < (late_block, late_position)
    assert block_of(db, early_id) <= block_of(db, late_id)


def test_two_batches_first_using_the_same_accounts_in_opposite_orders_never_deadlock(servers, bridge, tenant):
    # Two allocation-commit batches paying the same new couriers, listed in opposite orders: post_many
    # creates every new account of a call at once, in one order, so one waits for the other and both
    # post. (Created entry by entry, each held one account the other wanted next: a deadlock.)
    ensure_accounts(bridge, tenant.tenant, "balance:available")

    def transfers(accounts: list[str], batch: str) -> list[ledger.Entry]:
        return [
            ledger.Entry(
                kind="transfer",
                reference=f"{batch}:{account}",
                idempotency_key=f"{batch}:{account}",
                postings=[Posting("balance:available", -100, "usd"), Posting(account, 100, "usd")],
            )
            for account in accounts
        ]

    async def poster(sessions, batches: list[list[ledger.Entry]]) -> int:
        for entries in batches:
            async with sessions() as session:
                await ledger.post_many(session, tenant.tenant, entries)
                await session.commit()
        return len(batches)

    rounds = 20
    accounts = [[f"connect:acct_r{number}_{n}:pending" for n in range(6)] for number in range(rounds)]

    async def scenario() -> list[int]:
        async with two_connections(servers.database_url) as sessions:
            return await asyncio.wait_for(
                asyncio.gather(
                    poster(sessions, [transfers(codes, "a") for codes in accounts]),
                    poster(sessions, [transfers(list(reversed(codes)), "b") for codes in accounts]),
                ),
                timeout=60,
            )

    assert bridge.run(scenario()) == [rounds, rounds]
    assert all(balance(bridge, tenant.tenant, code) == 200 for codes in accounts for code in codes)
    assert balance(bridge, tenant.tenant, "balance:available") == -200 * 6 * rounds
