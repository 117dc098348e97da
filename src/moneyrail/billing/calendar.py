"""The billing calendar (CONVENTIONS.md §14): UTC, the anchor kept.

Boundary n of a subscription is anchor + n x interval, computed from the anchor every time (never
from the previous boundary), the day clamped to the month's last day and the time of day kept:
31 Jan -> 28/29 Feb -> 31 Mar -> 30 Apr; 29 Feb yearly -> 28 Feb, and 29 Feb again in leap years.
"""

from __future__ import annotations

from calendar import monthrange
from datetime import datetime
from typing import Literal

Interval = Literal["month", "year"]
MONTHS_PER: dict[str, int] = {"month": 1, "year": 12}


def boundary(anchor: datetime, interval: Interval, interval_count: int, n: int) -> datetime:
    """The start of period n (n = 0 is the anchor itself), the end of period n - 1."""
    if n < 0:
        raise ValueError("periods are counted from the anchor, n >= 0")
    months = n * interval_count * MONTHS_PER[interval]
    index = anchor.month - 1 + months
    year, month = anchor.year + index // 12, index % 12 + 1
    day = min(anchor.day, monthrange(year, month)[1])
    return anchor.replace(year=year, month=month, day=day)


def cycle_at(anchor: datetime, interval: Interval, interval_count: int, now: datetime) -> int:
    """The period that contains `now`: boundary(n) <= now < boundary(n + 1); 0 before the anchor."""
    if now < anchor:
        return 0
    step = interval_count * MONTHS_PER[interval]
    months = (now.year - anchor.year) * 12 + (now.month - anchor.month)
    n = max(0, months // step)
    while n > 0 and boundary(anchor, interval, interval_count, n) > now:
        n -= 1
    while boundary(anchor, interval, interval_count, n + 1) <= now:
        n += 1
    return n
