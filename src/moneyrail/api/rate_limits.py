"""Per-key rate limits (CONVENTIONS.md §3: 429 `rate_limited`), counted in Redis by the `limits` library.

Each API key may make `rate_limit_per_second` requests per second (a sliding window): the installation's
own figure for the environment when the operator set one (`moneyrail settings set --rate-limit`), else
MONEYRAIL_RATE_LIMIT_PER_SECOND; 0 means no limit. A refusal is 429 `rate_limited` with `Retry-After`,
checked before the Idempotency-Key is claimed, so it is never stored and the key stays free.

Redis down must not stop payments: the request goes through unchecked (fail open), logged and counted in
`moneyrail_rate_limit_unchecked_total`; for a short while after a failure Redis is not asked at all, so
an outage costs no request a connection timeout.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import structlog
from fastapi import Request
from limits import RateLimitItemPerSecond
from limits.aio.storage import RedisStorage
from limits.aio.strategies import SlidingWindowCounterRateLimiter
from limits.errors import StorageError
from prometheus_client import Counter
from redis.exceptions import RedisError

from moneyrail.api.context import Principal, request_session
from moneyrail.errors import RateLimited
from moneyrail.installations import repository as installations

logger = structlog.get_logger("moneyrail.rate_limits")

unchecked = Counter(
    "moneyrail_rate_limit_unchecked_total",
    "Requests let through without a rate-limit check because Redis did not answer (fail open).",
)
refused = Counter("moneyrail_rate_limited_total", "Requests refused with 429 rate_limited.")

REDIS_TIMEOUT_SECONDS = 0.25
PAUSE_AFTER_FAILURE_SECONDS = 2.0  # Redis is not asked again for this long after it failed
SETTINGS_CACHE_SECONDS = 10.0  # an operator's change reaches every web process within this


class RateLimitExceeded(RateLimited):
    def __init__(self, limit: int, retry_after: int) -> None:
        super().__init__(
            f"Too many requests: this API key may make {limit} per second. Retry after {retry_after} s."
        )
        self.headers = {"Retry-After": str(retry_after)}


def redis_storage_uri(redis_url: str) -> str:
    """`limits` names its asyncio storages `async+redis://…` (and `async+redis+unix://…` for a socket)."""
    return f"async+redis+{redis_url}" if redis_url.startswith("unix://") else f"async+{redis_url}"


@dataclass
class KeyRateLimiter:
    redis_url: str
    default_per_second: int
    _limiter: SlidingWindowCounterRateLimiter | None = None
    _paused_until: float = 0.0
    _limits: dict[tuple[str, bool], tuple[float, int]] = field(default_factory=dict)

    def _strategy(self) -> SlidingWindowCounterRateLimiter:
        if self._limiter is None:  # created on the serving event loop, at first use
            storage = RedisStorage(
                redis_storage_uri(self.redis_url),
                wrap_exceptions=True,
                implementation="redispy",
                key_prefix="moneyrail:rate",
                socket_connect_timeout=REDIS_TIMEOUT_SECONDS,
                socket_timeout=REDIS_TIMEOUT_SECONDS,
            )
            self._limiter = SlidingWindowCounterRateLimiter(storage)
        return self._limiter

    async def limit_for(self, request: Request, principal: Principal) -> int:
        tenant = principal.tenant
        cache_key = (tenant.installation_id, tenant.livemode)
        cached = self._limits.get(cache_key)
        now = time.monotonic()
        if cached is not None and cached[0] > now:
            return cached[1]
        settings = await installations.get_settings(
            request_session(request), tenant.installation_id, tenant.livemode
        )
        own = settings.rate_limit_per_second
        limit = self.default_per_second if own is None else own
        self._limits[cache_key] = (now + SETTINGS_CACHE_SECONDS, limit)
        return limit

    async def check(self, request: Request, principal: Principal) -> None:
        limit = await self.limit_for(request, principal)
        if limit <= 0:
            return
        if time.monotonic() < self._paused_until:
            unchecked.inc()
            return
        item = RateLimitItemPerSecond(limit)
        strategy = self._strategy()
        try:
            if await strategy.hit(item, principal.key_id):
                return
            stats = await strategy.get_window_stats(item, principal.key_id)
        except (StorageError, RedisError, OSError) as error:
            self._paused_until = time.monotonic() + PAUSE_AFTER_FAILURE_SECONDS
            unchecked.inc()
            logger.warning("rate_limit_unchecked", reason=type(error).__name__, key=principal.key_id)
            return
        refused.inc()
        retry_after = max(1, math.ceil(stats.reset_time - time.time()))
        raise RateLimitExceeded(limit, retry_after)


async def check(request: Request, principal: Principal) -> None:
    """The gate's call: refuse the request if its key is over its limit."""
    limiter: KeyRateLimiter | None = getattr(request.app.state, "rate_limiter", None)
    if limiter is None:
        settings = request.app.state.settings
        redis_url = settings.redis_url or "redis://127.0.0.1:6379/0"
        limiter = KeyRateLimiter(redis_url, settings.rate_limit_per_second)
        request.app.state.rate_limiter = limiter
    await limiter.check(request, principal)
