"""`moneyrail ledger verify`: every check the ledger's integrity rests on. It reports, never repairs.

1. Balance: every journal transaction has at least two postings and sums to zero per currency.
2. Postings: each is in its account's currency, on an account of its transaction's tenant, and was
   written with its journal transaction.
3. The chain: every block's hash recomputed from its entries, the links between blocks, entry counts
   and positions, no transaction sealed twice, nothing left unsealed below the sealed horizon.
4. Checkpoints: each equals the sum of its account's postings below its block's horizon.
5. Immutability: the triggers that refuse changes exist, are enabled, fire on the right events and
   run the functions the migrations created (their sources are pinned below by SHA-256). A superuser
   who wants to rewrite history has to disable or replace them first, and that is what shows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.models.ledger import GENESIS_HASH

from . import repository
from .chain import block_hash

MAX_PROBLEMS_PER_CHECK = 100

LEDGER_TABLES = (
    "ledger_accounts",
    "journal_transactions",
    "postings",
    "ledger_blocks",
    "ledger_block_entries",
    "ledger_balance_checkpoints",
)

# pg_trigger.tgtype bits
_ROW, _BEFORE, _INSERT, _DELETE, _UPDATE, _TRUNCATE = 1, 2, 4, 8, 16, 32


@dataclass(frozen=True)
class ExpectedTrigger:
    type_bits: int
    function: str
    deferred: bool = False


EXPECTED_TRIGGERS: dict[tuple[str, str], ExpectedTrigger] = {
    **{
        (table, "ledger_append_only"): ExpectedTrigger(
            _ROW | _BEFORE | _UPDATE | _DELETE, "ledger_refuse_change"
        )
        for table in LEDGER_TABLES
    },
    **{
        (table, "ledger_no_truncate"): ExpectedTrigger(_BEFORE | _TRUNCATE, "ledger_refuse_change")
        for table in LEDGER_TABLES
    },
    **{
        (table, "ledger_check_transaction"): ExpectedTrigger(
            _ROW | _INSERT, "ledger_check_transaction", deferred=True
        )
        for table in ("journal_transactions", "postings")
    },
}

# SHA-256 of each trigger function's source as the migrations leave it (0002 created both, 0007
# replaced ledger_check_transaction). A migration that changes one changes its fingerprint here too.
FUNCTION_SOURCES_SHA256 = {
    "ledger_refuse_change": "73cdc0e25edc7335377999c6a4b8c499a1b0b05bc53936a9d9879df2d4dbeef6",
    "ledger_check_transaction": "6540b9591b6d81ce6c6469a468bf92010b4459b678f815b5f4259aeb4284eeb2",
}


@dataclass
class VerificationReport:
    transactions: int = 0
    blocks: int = 0
    sealed: int = 0  # journal transactions in a block
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_dict(self) -> dict[str, object]:
        return {
            "ok": self.ok,
            "transactions": self.transactions,
            "blocks": self.blocks,
            "sealed": self.sealed,
            "problems": list(self.problems),
        }


class _Problems:
    """Collects one check's problems, at most MAX_PROBLEMS_PER_CHECK of them, then a count of the rest."""

    def __init__(self, report: VerificationReport) -> None:
        self.report = report
        self.found = 0

    def add(self, problem: str) -> None:
        self.found += 1
        if self.found <= MAX_PROBLEMS_PER_CHECK:
            self.report.problems.append(problem)

    def __enter__(self) -> _Problems:
        return self

    def __exit__(self, *_: object) -> None:
        if self.found > MAX_PROBLEMS_PER_CHECK:
            self.report.problems.append(f"... and {self.found - MAX_PROBLEMS_PER_CHECK} more like the above")


async def verify_ledger(session: AsyncSession) -> VerificationReport:
    report = VerificationReport(
        transactions=await repository.count_rows(session, "journal_transactions"),
        sealed=await repository.count_rows(session, "ledger_block_entries"),
    )
    await _check_balance(session, report)
    await _check_postings(session, report)
    await _check_chain(session, report)
    await _check_checkpoints(session, report)
    await _check_triggers(session, report)
    return report


async def _check_balance(session: AsyncSession, report: VerificationReport) -> None:
    limit = MAX_PROBLEMS_PER_CHECK + 1
    with _Problems(report) as problems:
        for transaction_id, currency, total in await repository.unbalanced_transactions(session, limit):
            problems.add(
                f"transaction {transaction_id} does not balance: its {currency} postings sum to {total}"
            )
    with _Problems(report) as problems:
        for transaction_id, legs in await repository.transactions_with_too_few_legs(session, limit):
            problems.add(f"transaction {transaction_id} has {legs} posting(s), fewer than 2")


async def _check_postings(session: AsyncSession, report: VerificationReport) -> None:
    limit = MAX_PROBLEMS_PER_CHECK + 1
    with _Problems(report) as problems:
        for posting_id, transaction_id, account_id in await repository.postings_off_their_account(
            session, limit
        ):
            problems.add(
                f"posting {posting_id} of transaction {transaction_id}: account {account_id}"
                " is missing, in another currency, or another tenant's"
            )
    with _Problems(report) as problems:
        for posting_id, transaction_id in await repository.postings_off_their_transaction(session, limit):
            problems.add(
                f"posting {posting_id}: transaction {transaction_id} is missing or was written"
                " by another database transaction"
            )


async def _check_chain(session: AsyncSession, report: VerificationReport) -> None:
    limit = MAX_PROBLEMS_PER_CHECK + 1
    blocks = await repository.blocks(session)
    report.blocks = len(blocks)
    previous_hash = GENESIS_HASH
    with _Problems(report) as problems:
        for expected_height, block in enumerate(blocks, start=1):
            name = f"block {block.height}"
            if block.height != expected_height:
                problems.add(f"{name}: expected height {expected_height} (a block is missing)")
            if block.previous_hash != previous_hash:
                problems.add(f"{name}: previous_hash does not match the hash of the block before it")
            previous_hash = block.block_hash
            positions = await repository.block_entry_ids(session, block.height)
            if [position for position, _ in positions] != list(range(len(positions))):
                problems.add(f"{name}: entry positions are not 0..{len(positions) - 1}")
            if len(positions) != block.entry_count:
                problems.add(f"{name}: holds {len(positions)} entries, its header says {block.entry_count}")
            ids = [transaction_id for _, transaction_id in positions]
            loaded = await repository.journal_entries(session, ids)
            missing = [transaction_id for transaction_id in ids if transaction_id not in loaded]
            for transaction_id in missing:
                problems.add(f"{name}: sealed transaction {transaction_id} is missing from the journal")
            if not missing and block_hash(block.previous_hash, (loaded[i] for i in ids)) != block.block_hash:
                problems.add(
                    f"{name}: hash mismatch, its entries changed since sealing"
                    f" (transactions {ids[0]} .. {ids[-1]})"
                    if ids
                    else f"{name}: hash mismatch"
                )
    with _Problems(report) as problems:
        for transaction_id, height in await repository.entries_outside_blocks(session, limit):
            problems.add(f"transaction {transaction_id} is sealed in block {height}, which does not exist")
    with _Problems(report) as problems:
        for transaction_id in await repository.transactions_sealed_twice(session, limit):
            problems.add(f"transaction {transaction_id} is sealed more than once")
    with _Problems(report) as problems:
        horizons = [block.txid_horizon for block in blocks]
        for block, earlier in zip(blocks[1:], horizons, strict=False):
            if block.txid_horizon < earlier:
                problems.add(f"block {block.height}: its txid horizon is below the previous block's")
        if blocks:
            for transaction_id in await repository.unsealed_below(session, blocks[-1].txid_horizon, limit):
                problems.add(
                    f"transaction {transaction_id} is below the sealed horizon but in no block"
                    " (inserted out of turn, or its block entry removed)"
                )


async def _check_checkpoints(session: AsyncSession, report: VerificationReport) -> None:
    with _Problems(report) as problems:
        for account_id, height, stored, expected in await repository.checkpoint_mismatches(
            session, MAX_PROBLEMS_PER_CHECK + 1
        ):
            problems.add(
                f"balance checkpoint of account {account_id} at block {height} is {stored},"
                f" its postings sum to {expected}"
            )


async def _check_triggers(session: AsyncSession, report: VerificationReport) -> None:
    installed = {
        (trigger.table, trigger.name): trigger
        for trigger in await repository.installed_triggers(session, LEDGER_TABLES)
    }
    with _Problems(report) as problems:
        for (table, name), expected in sorted(EXPECTED_TRIGGERS.items()):
            trigger = installed.get((table, name))
            label = f"trigger {name} on {table}"
            if trigger is None:
                problems.add(f"{label} is missing: the table is not protected")
                continue
            if trigger.enabled not in ("O", "A"):
                problems.add(f"{label} is disabled: the table is not protected")
            if (
                trigger.type_bits != expected.type_bits
                or trigger.deferred != expected.deferred
                or trigger.conditional
            ):
                problems.add(f"{label} fires on other events or conditions than its migration defined")
            if trigger.function != expected.function:
                problems.add(f"{label} runs {trigger.function}(), not {expected.function}()")
            elif trigger.function_sha256 != FUNCTION_SOURCES_SHA256[expected.function]:
                problems.add(f"{label}: function {trigger.function}() was replaced (its source changed)")
