"""Per-key rate limits (CONVENTIONS.md §3: 429 `rate_limited`), counted in Redis.

Each API key may make `rate_limit_per_second` requests per second (a sliding window): the installation's
own figure for the environment when the operator set one (`moneyrail settings set --rate-limit`), else
MONEYRAIL_RATE_LIMIT_PER_SECOND; 0 means no limit. A refusal is 429 `rate_limited` with `Retry-After`,
checked before the Idempotency-Key is claimed, so it is never stored and the key stays free.

The window is the `limits` library's sliding window counter, computed in Redis by one Lua script with its
keys (so every web process of a fleet counts against the same budget, and a process running the `limits`
library itself would share it): a count for the current second and one for the previous, the previous
weighted by how much of it still falls within the last second. The script runs on one persistent
connection per process (kit/redis_script.py), one round trip per request, and a refusal's reply carries
what `Retry-After` needs, so a refusal costs no second call either.

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
from prometheus_client import Counter

from moneyrail.api.context import Principal, request_session
from moneyrail.errors import RateLimited
from moneyrail.installations import repository as installations
from moneyrail.kit.redis_script import RedisScript, ScriptUnavailable

logger = structlog.get_logger("moneyrail.rate_limits")

unchecked = Counter(
    "moneyrail_rate_limit_unchecked_total",
    "Requests let through without a rate-limit check because Redis did not answer (fail open).",
)
refused = Counter("moneyrail_rate_limited_total", "Requests refused with 429 rate_limited.")

REDIS_TIMEOUT_SECONDS = 0.25
PAUSE_AFTER_FAILURE_SECONDS = 2.0  # Redis is not asked again for this long after it failed
SETTINGS_CACHE_SECONDS = 10.0  # an operator's change reaches every web process within this
WINDOW_SECONDS = 1
KEY_PREFIX = "moneyrail:rate"

# The `limits` library's acquire_sliding_window.lua (limits 5.8), with the window's state in the reply of
# a refusal. KEYS: previous window, current window; ARGV: limit, window in seconds. Times in milliseconds.
SLIDING_WINDOW = """
local limit = tonumber(ARGV[1])
local expiry = tonumber(ARGV[2]) * 1000
local current_ttl = tonumber(redis.call('pttl', KEYS[2]))
if current_ttl > 0 and current_ttl < expiry then
    -- the current window has ended: it becomes the previous one
    redis.call('rename', KEYS[2], KEYS[1])
    redis.call('set', KEYS[2], 0, 'PX', current_ttl + expiry)
end
local previous_count = tonumber(redis.call('get', KEYS[1])) or 0
local previous_ttl = math.max(tonumber(redis.call('pttl', KEYS[1])) or 0, 0)
local current_count = tonumber(redis.call('get', KEYS[2])) or 0
current_ttl = math.max(tonumber(redis.call('pttl', KEYS[2])) or 0, 0)
if math.floor(previous_count * previous_ttl / expiry) + current_count + 1 > limit then
    return {0, previous_count, previous_ttl, current_count, current_ttl}
end
if redis.call('exists', KEYS[2]) == 1 then
    redis.call('incrby', KEYS[2], 1)
else
    redis.call('set', KEYS[2], 1, 'PX', expiry * 2)
end
return {1}
"""


def window_keys(key_id: str, limit: int) -> tuple[str, str]:
    """(previous, current): the keys `limits` gives a per-second item of this limit for this key."""
    current = f"{KEY_PREFIX}:{{LIMITER/{key_id}/{limit}/1/second}}"
    return f"{current}/-1", current


def seconds_until_room(
    previous_count: int, previous_ttl_ms: int, current_count: int, current_ttl_ms: int
) -> float:
    """When the window frees a request, as the `limits` library's window stats compute its reset time."""
    window = WINDOW_SECONDS
    previous_in = current_in = math.inf
    if previous_count:
        previous_in = (previous_ttl_ms / 1000) % (window / previous_count)
    if current_count:
        current_in = (current_ttl_ms / 1000) % window
    soonest = min(previous_in, current_in)
    return 0.0 if soonest == math.inf else soonest


class RateLimitExceeded(RateLimited):
    def __init__(self, limit: int, retry_after: int) -> None:
        super().__init__(
            f"Too many requests: this API key may make {limit} per second. Retry after {retry_after} s."
        )
        self.headers = {"Retry-After": str(retry_after)}


@dataclass
class KeyRateLimiter:
    redis_url: str
    default_per_second: int
    _script: RedisScript | None = None
    _paused_until: float = 0.0
    _limits: dict[tuple[str, bool], tuple[float, int]] = field(default_factory=dict)

    def _window(self) -> RedisScript:
        if self._script is None:
            self._script = RedisScript(self.redis_url, SLIDING_WINDOW, timeout_s=REDIS_TIMEOUT_SECONDS)
        return self._script

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
        try:
            reply = await self._window()(window_keys(principal.key_id, limit), (limit, WINDOW_SECONDS))
        except ScriptUnavailable as error:
            self._paused_until = time.monotonic() + PAUSE_AFTER_FAILURE_SECONDS
            unchecked.inc()
            logger.warning("rate_limit_unchecked", reason=str(error)[:200], key=principal.key_id)
            return
        if reply[0] == 1:
            return
        refused.inc()
        retry_after = max(1, math.ceil(seconds_until_room(*reply[1:])))
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
