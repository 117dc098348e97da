"""Policy per operation type: its queue, how many run together, and its retries (exponential
backoff with full jitter and a maximum of attempts).

dramatiq's defaults do not fit money (20 retries over about 35 days, dead letters purged from Redis
after 7 days), so the engine keeps retries in PostgreSQL and dramatiq itself never retries.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import timedelta


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 8
    base_delay: timedelta = timedelta(seconds=2)
    max_delay: timedelta = timedelta(minutes=10)
    queue_name: str = "default"
    # Operations one message may carry, run one after another in one unit of work and committed
    # together (one claim, one commit). Only for work local to the database: an operation that calls
    # out (a processor, a webhook receiver) would hold up the others behind its call.
    batch_size: int = 1

    def __post_init__(self) -> None:
        if not 1 <= self.batch_size <= 1000:
            raise ValueError("batch_size is 1 to 1000 operations per message")
        if self.max_attempts < 1:
            raise ValueError("an operation needs at least one attempt")
        if self.base_delay <= timedelta(0) or self.max_delay < self.base_delay:
            raise ValueError("delays must be positive and max_delay >= base_delay")

    def delay_after(self, attempt: int, rng: random.Random | None = None) -> timedelta:
        """Delay before the attempt that follows attempt number `attempt` (1-based): full jitter."""
        ceiling = min(self.max_delay, self.base_delay * (2 ** (attempt - 1)))
        source = rng if rng is not None else random.Random()  # noqa: S311 - jitter, not secrecy
        fraction: float = source.uniform(0.5, 1.0)  # never immediate, never past the ceiling
        return timedelta(seconds=ceiling.total_seconds() * fraction)


_POLICIES: dict[str, RetryPolicy] = {}
DEFAULT_POLICY = RetryPolicy()


def register_policy(operation_type: str, policy: RetryPolicy) -> None:
    _POLICIES[operation_type] = policy


def operation_types() -> list[str]:
    """Every operation type a module registered a policy for (the modules imported so far)."""
    return sorted(_POLICIES)


def policy_for(operation_type: str) -> RetryPolicy:
    return _POLICIES.get(operation_type, DEFAULT_POLICY)
