"""The hash chain: the canonical bytes of a journal entry and the hash of a block.

block_hash = sha256(previous block's hash, as 64 hex characters, then every entry's canonical line
in block order). An entry's line is compact JSON of (transaction id, installation, livemode, kind,
reference, created_at in UTC to the microsecond, [[account id, amount, currency] for its postings by
posting id]) and a newline. Sealing and verification both hash through here, and anyone can recompute
a block from a plain SQL export with a few lines of any language.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from moneyrail.models.ledger import GENESIS_HASH

__all__ = ["GENESIS_HASH", "EntryPosting", "JournalEntry", "block_hash", "canonical_line"]


@dataclass(frozen=True, slots=True)
class EntryPosting:
    account_id: str
    amount: int
    currency: str


@dataclass(frozen=True, slots=True)
class JournalEntry:
    """A journal transaction with its postings, as sealed."""

    transaction_id: str
    installation_id: str
    livemode: bool
    kind: str
    reference: str | None
    created_at: datetime
    postings: tuple[EntryPosting, ...]  # in posting id order


def _timestamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def canonical_line(entry: JournalEntry) -> bytes:
    record = [
        entry.transaction_id,
        entry.installation_id,
        entry.livemode,
        entry.kind,
        entry.reference,
        _timestamp(entry.created_at),
        [[posting.account_id, posting.amount, posting.currency] for posting in entry.postings],
    ]
    return json.dumps(record, separators=(",", ":"), ensure_ascii=True).encode("ascii") + b"\n"


def block_hash(previous_hash: str, entries: Iterable[JournalEntry]) -> str:
    digest = hashlib.sha256(previous_hash.encode("ascii"))
    for entry in entries:
        digest.update(canonical_line(entry))
    return digest.hexdigest()
