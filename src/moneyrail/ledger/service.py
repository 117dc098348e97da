"""The ledger's service functions: accounts, posting, balances, account locks, sealing, verification.

Sign convention: a positive amount adds to an account's balance, a negative one takes from it. In each
currency a transaction's legs sum to zero, so money only ever moves between accounts: a customer's
payment is `customer_funds -10000, merchant:mer_x:available +9710, platform:fees +290`.

Concurrency: posting inserts rows and locks no account, so payments never queue on a hot account
(platform fees, processor clearing). A caller that must read a balance before moving money (a payout
must not overdraw) first takes `lock_accounts`, transaction-scoped advisory locks in one global order,
then reads the balance in the same (READ COMMITTED) transaction.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from moneyrail.db.raw import WriteAt, autocommit_connection, driver_connection
from moneyrail.db.uow import UnitOfWork
from moneyrail.engine.schedule import register_periodic
from moneyrail.kit.ids import new_id
from moneyrail.kit.money import is_valid_currency
from moneyrail.kit.tenant import Tenant
from moneyrail.models.ledger import GENESIS_HASH, LedgerAccount, LedgerBlock

from . import group_commit, repository
from .chain import block_hash
from .errors import IdempotencyKeyConflict, InvalidPosting, UnbalancedTransaction
from .verification import VerificationReport, verify_ledger

__all__ = [
    "AccountBalance",
    "AccountsOutlook",
    "Posting",
    "VerificationReport",
    "balance",
    "balances",
    "ensure_account",
    "lock_accounts",
    "post",
    "post_standalone",
    "post_with",
    "seal_pending",
    "verify",
]

ACCOUNT_CODE = re.compile(r"^[A-Za-z0-9_.:\-]{1,200}$")
MAX_ABS_AMOUNT = 2**63 - 1  # a posting is a PostgreSQL bigint
DEFAULT_BLOCK_SIZE = 10_000
# Balance checkpoints (written by the sealer): an account gets one at a block where this many of its
# postings became final, or when its last one is this many blocks old. A balance then sums at most
# about their product of index entries, however old and busy the account.
CHECKPOINT_HOT_POSTINGS = 256
CHECKPOINT_MAX_BLOCKS = 16
# Advisory lock keys. The account locks use the two-int4 form, a key space apart from every
# single-bigint lock (idempotency claims, migrations, the scheduler leader, the sealer).
ACCOUNT_LOCK_SPACE = 0x4C444752  # "LDGR"
SEALING_LOCK_ID = 0x6D725F7365616C  # "mr_seal"


@functools.lru_cache(maxsize=256)
def _known_currency(code: str) -> bool:
    return is_valid_currency(code)  # babel's lookup is slow for a path taken on every posting


@dataclass(frozen=True, slots=True)
class Posting:
    """One leg to post: the account's code, signed minor units, the currency."""

    account: str
    amount: int
    currency: str


def _check_postings(postings: Sequence[Posting]) -> None:
    if len(postings) < 2:
        raise UnbalancedTransaction(f"a journal transaction needs at least 2 postings, got {len(postings)}")
    totals: dict[str, int] = defaultdict(int)
    for posting in postings:
        if not ACCOUNT_CODE.match(posting.account):
            raise InvalidPosting(f"account code {posting.account!r} is not 1-200 of [A-Za-z0-9_.:-]")
        if isinstance(posting.amount, bool) or not isinstance(posting.amount, int):
            raise InvalidPosting(f"amount {posting.amount!r} on {posting.account} is not integer minor units")
        if posting.amount == 0:
            raise InvalidPosting(f"a zero amount on {posting.account} moves nothing; leave the leg out")
        if abs(posting.amount) > MAX_ABS_AMOUNT:
            raise InvalidPosting(f"amount {posting.amount} on {posting.account} does not fit in 64 bits")
        if not _known_currency(posting.currency):
            raise InvalidPosting(f"{posting.currency!r} is not a lowercase ISO 4217 currency")
        totals[posting.currency] += posting.amount
    off = {currency: total for currency, total in sorted(totals.items()) if total != 0}
    if off:
        detail = ", ".join(f"{currency} postings sum to {total}" for currency, total in off.items())
        raise UnbalancedTransaction(f"the postings do not balance: {detail}")


def _new_entry(
    tenant: Tenant, kind: str, postings: Sequence[Posting], reference: str | None, idempotency_key: str | None
) -> repository.NewJournalTransaction:
    """The journal transaction to insert, once Python has refused what cannot be posted."""
    if not kind:
        raise InvalidPosting("a journal transaction needs a kind")
    _check_postings(postings)
    legs = [(posting.account, posting.amount, posting.currency) for posting in postings]
    return repository.NewJournalTransaction(new_id("jtx"), tenant, kind, reference, idempotency_key, legs)


async def ensure_account(session: AsyncSession, tenant: Tenant, code: str, currency: str) -> LedgerAccount:
    """The tenant's account with this code in this currency, created if it does not exist yet."""
    accounts = await _ensure_accounts(session, tenant, [(code, currency)])
    return accounts[(code, currency)]


async def _ensure_accounts(
    session: AsyncSession, tenant: Tenant, keys: Sequence[tuple[str, str]]
) -> dict[tuple[str, str], LedgerAccount]:
    for code, currency in keys:
        if not ACCOUNT_CODE.match(code):
            raise InvalidPosting(f"account code {code!r} is not 1-200 of [A-Za-z0-9_.:-]")
        if not _known_currency(currency):
            raise InvalidPosting(f"{currency!r} is not a lowercase ISO 4217 currency")
    found = await repository.find_accounts(session, tenant, keys)
    missing = [key for key in keys if key not in found]
    if missing:
        # INSERT ... ON CONFLICT DO NOTHING, then read: a concurrent creator's row is found instead
        await repository.insert_missing_accounts(session, tenant, missing)
        found.update(await repository.find_accounts(session, tenant, missing))
    return found


async def post(
    session: AsyncSession,
    tenant: Tenant,
    *,
    kind: str,
    postings: Sequence[Posting],
    reference: str | None = None,
    idempotency_key: str | None = None,
) -> repository.JournalRecord:
    """Write one balanced journal transaction; with an idempotency key, at most once.

    Posting the same key again returns the first transaction (a retried actor never posts twice);
    the same key with other postings is a bug and raises IdempotencyKeyConflict. Accounts are
    created on first use. The usual case is one statement (one round trip): hot paths post a lot.
    """
    return await _post_entry(session, _new_entry(tenant, kind, postings, reference, idempotency_key))


async def post_if_not_negative(
    session: AsyncSession,
    tenant: Tenant,
    *,
    guard: tuple[str, str],
    kind: str,
    postings: Sequence[Posting],
    reference: str | None = None,
    idempotency_key: str | None = None,
) -> repository.JournalRecord | None:
    """`post`, provided the tenant's account `guard` (code, currency) has a balance of 0 or more.

    For a caller whose postings depend on that balance only when it is negative (a capture recovering
    an earlier fee shortfall): the balance is read in the posting's own statement, one round trip for
    both. None, with nothing written, when it is negative. It takes no lock: a caller that must hold
    the balance while it decides takes `lock_accounts` and posts with `post`.
    """
    entry = _new_entry(tenant, kind, postings, reference, idempotency_key)
    code, currency = guard
    balance, journal = await repository.insert_transaction_if_not_negative(
        await driver_connection(session), entry, code, currency
    )
    if balance < 0:
        return None
    # not written although the balance allowed it: an account used for the first time, or a key posted
    # before (replayed, or refused as a conflict)
    return journal if journal is not None else await _post_entry(session, entry)


@dataclass(frozen=True, slots=True)
class AccountsOutlook:
    """What a caller posting with its own last statement (`post_with`) read first, after whatever lock
    it holds, in its transaction (`repository.accounts_outlook_columns`): the balance of a guard account
    and which of the accounts it may post to exist."""

    guard_balance: int
    existing: frozenset[str]


def accounts_outlook_columns(first_parameter: int) -> str:
    """The columns an earlier statement of the caller's asks for its `AccountsOutlook`, parameters from
    `first_parameter`: installation_id, livemode, the guard's code, the currency, the codes asked about."""
    return repository.accounts_outlook_columns(first_parameter)


def post_with(
    tenant: Tenant,
    *,
    kind: str,
    postings: Sequence[Posting],
    reference: str | None = None,
    idempotency_key: str | None = None,
) -> list[WriteAt]:
    """`post` as writes riding in the caller's own statement (its last one: one round trip fewer).

    For a caller that knows every account exists and the key is unused (an `AccountsOutlook`, the key
    its own step's): what `post` would fall back on instead (creating accounts, replaying a key) makes
    the statement fail here, and its transaction roll back, so nothing is ever half-posted.
    """
    return repository.journal_writes(_new_entry(tenant, kind, postings, reference, idempotency_key))


@dataclass(frozen=True, slots=True)
class Entry:
    """One journal transaction of `post_many`: what `post` takes, for one of several."""

    kind: str
    postings: Sequence[Posting]
    reference: str | None = None
    idempotency_key: str | None = None


async def post_many(
    session: AsyncSession, tenant: Tenant, entries: Sequence[Entry]
) -> list[repository.JournalRecord]:
    """`post` for several journal transactions at once, in `entries`' order: one statement (one round
    trip) however many there are, each still balanced and idempotent on its own. One the statement
    could not write (an account used for the first time, a key posted before) takes `post`'s path."""
    new = [_new_entry(tenant, e.kind, e.postings, e.reference, e.idempotency_key) for e in entries]
    if not new:
        return []
    connection = await driver_connection(session)
    written = await repository.insert_transactions(connection, new)
    unwritten = [entry for entry in new if entry.id not in written]
    if unwritten:
        # Accounts used for the first time: every one these entries need, created in one statement in
        # one order, then the entries again in one. Entry by entry, two posters meeting the same new
        # accounts in different orders (two batches of transfers to new couriers) deadlocked.
        await _ensure_accounts(
            session, tenant, sorted({(code, currency) for e in unwritten for code, _, currency in e.legs})
        )
        written.update(await repository.insert_transactions(connection, unwritten))
    return [written.get(entry.id) or await _post_entry(session, entry) for entry in new]


async def _post_entry(
    session: AsyncSession, entry: repository.NewJournalTransaction
) -> repository.JournalRecord:
    for attempt in range(2):
        journal = await repository.insert_transaction(await driver_connection(session), entry)
        if journal is not None:
            return journal
        if entry.idempotency_key is not None:
            first = await repository.find_by_idempotency_key(session, entry.tenant, entry.idempotency_key)
            if first is not None:
                return await _replay(session, first, entry)
        if attempt == 0:  # an account is used for the first time
            await _ensure_accounts(
                session, entry.tenant, [(code, currency) for code, _, currency in entry.legs]
            )
    raise RuntimeError(f"could not post {entry.kind} for {entry.tenant}: its accounts are still missing")


async def post_standalone(
    sessionmaker: async_sessionmaker[AsyncSession],
    tenant: Tenant,
    *,
    kind: str,
    postings: Sequence[Posting],
    reference: str | None = None,
    idempotency_key: str | None = None,
) -> repository.JournalRecord:
    """`post` for a journal transaction that is a whole unit of work: it commits on its own.

    For movements with nothing else to commit beside them (an adjustment, an import, a transfer
    between a tenant's own accounts). The statement runs outside any transaction, so PostgreSQL
    commits it by itself and the commit-time balance check runs before it returns: one round trip,
    where BEGIN, the statement and COMMIT would be three. Concurrent calls on one sessionmaker share
    that statement and its commit (group_commit.py); each returns once its own transaction is durable.
    """
    entry = _new_entry(tenant, kind, postings, reference, idempotency_key)
    return await group_commit.writer_for(sessionmaker, _post_alone).post(sessionmaker, entry)


async def _post_alone(
    sessionmaker: async_sessionmaker[AsyncSession], entry: repository.NewJournalTransaction
) -> repository.JournalRecord:
    """One standalone posting in its own statement; the first use of an account and a repeated
    idempotency key take `post`'s general path in a unit of work instead."""
    async with autocommit_connection(sessionmaker) as connection:
        journal = await repository.insert_transaction(connection, entry)
    if journal is not None:
        return journal
    async with UnitOfWork(sessionmaker) as uow:
        journal = await _post_entry(uow.session, entry)
        await uow.commit()
    return journal


async def _replay(
    session: AsyncSession, first: repository.JournalRecord, entry: repository.NewJournalTransaction
) -> repository.JournalRecord:
    if (first.kind, first.reference) != (entry.kind, entry.reference) or sorted(
        await repository.legs_of(session, first.id)
    ) != sorted(entry.legs):
        raise IdempotencyKeyConflict(
            f"idempotency key {first.idempotency_key!r} was used for journal transaction {first.id},"
            " which has other postings"
        )
    return first


async def balance(session: AsyncSession, tenant: Tenant, code: str, currency: str) -> int:
    """The sum of the account's postings (0 for an account that does not exist yet)."""
    return await repository.balance_by_code(session, tenant, code, currency)


@dataclass(frozen=True, slots=True)
class AccountBalance:
    code: str
    currency: str
    amount: int


async def balances(session: AsyncSession, tenant: Tenant, codes: Sequence[str]) -> list[AccountBalance]:
    """The balance of each of the tenant's accounts with these codes, per currency (by currency, code)."""
    return [
        AccountBalance(account.code, account.currency, await repository.account_balance(session, account.id))
        for account in await repository.accounts_with_codes(session, tenant, codes)
    ]


def account_lock_key(account_id: str) -> int:
    return int.from_bytes(hashlib.sha256(account_id.encode()).digest()[:4], "big", signed=True)


async def lock_accounts(session: AsyncSession, account_ids: Iterable[str]) -> None:
    """Hold these accounts until the transaction ends: advisory locks taken in one global order.

    Any two callers take their common locks in the same (sorted) order, so they queue and never
    deadlock. Only callers that read a balance before moving money need this; posting does not.
    """
    for key in sorted({account_lock_key(account_id) for account_id in account_ids}):
        await repository.advisory_xact_lock(session, ACCOUNT_LOCK_SPACE, key)


async def seal_pending(session: AsyncSession, max_entries: int = DEFAULT_BLOCK_SIZE) -> int:
    """Seal the oldest settled journal transactions into the next block; return how many.

    Settled: the transaction's txid is below the snapshot's xmin, so no transaction still running
    (or yet to start) can commit an entry that belongs before it. A block takes the settled
    transactions with the lowest txids, and lists them in seq (insertion) order. It records the
    horizon below which everything is now sealed, where the next sealing starts its scan. Run it in
    its own READ COMMITTED unit of work and commit; call again while it returns max_entries.
    """
    if max_entries < 1:
        raise ValueError("max_entries must be at least 1")
    # two sealers (the scheduler's leader, an operator's `moneyrail ledger seal`) take turns
    await repository.advisory_xact_lock_64(session, SEALING_LOCK_ID)
    last = await repository.latest_block(session)
    lower = last.txid_horizon if last is not None else 0
    batch = await repository.pending_batch(session, lower, max_entries)
    if not batch.transaction_ids:
        return 0
    loaded = await repository.journal_entries(session, batch.transaction_ids)
    entries = [loaded[transaction_id] for transaction_id in batch.transaction_ids]
    previous_hash = last.block_hash if last is not None else GENESIS_HASH
    block = LedgerBlock(
        height=last.height + 1 if last is not None else 1,
        previous_hash=previous_hash,
        block_hash=block_hash(previous_hash, entries),
        entry_count=len(entries),
        txid_horizon=batch.horizon,
    )
    await repository.insert_block(session, block, batch.transaction_ids)
    await repository.write_checkpoints(
        session,
        height=block.height,
        lower=lower,
        upper=batch.horizon,
        hot=CHECKPOINT_HOT_POSTINGS,
        max_blocks=CHECKPOINT_MAX_BLOCKS,
    )
    return len(entries)


async def verify(session: AsyncSession) -> VerificationReport:
    """Check the whole ledger: balance, postings, the hash chain, checkpoints and the triggers.

    It reports and never repairs. For one consistent picture run it in a REPEATABLE READ transaction
    (the CLI does).
    """
    return await verify_ledger(session)


# The leading scheduler seals a block every 2 s; each run seals up to DEFAULT_BLOCK_SIZE entries.
register_periodic("ledger.seal", timedelta(seconds=2), seal_pending)


async def transactions_about(
    session: AsyncSession, tenant: Tenant, references: Sequence[str]
) -> list[repository.RecordedTransaction]:
    """The journal transactions written for these objects (their `reference`), oldest first, each with
    its legs: what the operator console shows as the money behind an operation."""
    return await repository.transactions_about(session, tenant, references)
