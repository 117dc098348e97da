"""State machines are data (STYLE.md habit 7): each domain keeps its table of allowed transitions, and
every move goes through this one check, so a forbidden move is the same 409 everywhere."""

from __future__ import annotations

from collections.abc import Mapping, Set
from datetime import datetime
from typing import Protocol

from moneyrail.errors import Conflict
from moneyrail.kit.clock import utcnow


class HasStatus(Protocol):
    status: str
    updated_at: datetime


def move(row: HasStatus, status: str, transitions: Mapping[str, Set[str]], what: str) -> None:
    """Move `row` to `status` if its table allows it from where it is; else 409 naming `what`."""
    if status not in transitions[row.status]:
        raise Conflict(f"{what} cannot go from {row.status} to {status}.")
    row.status = status
    row.updated_at = utcnow()
