"""The service's notion of now. Sandbox clocks add a per-installation offset (issue: engine)."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    return datetime.now(UTC)


def to_unix(moment: datetime) -> int:
    return int(moment.timestamp())
