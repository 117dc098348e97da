"""Per-key rate limits (CONVENTIONS.md §3: 429 `rate_limited`), counted in Redis, spent from a lease.

Each API key may make `rate_limit_per_second` requests per second (a sliding window): the installation's
own figure for the environment when the operator set one (`moneyrail settings set --rate-limit`), else
MONEYRAIL_RATE_LIMIT_PER_SECOND; 0 means no limit. A refusal is 429 `rate_limited` with `Retry-After`,
checked before the Idempotency-Key is claimed, so it is never stored and the key stays free.

The window is the `limits` library's sliding window counter, computed in Redis by one Lua script with its
keys (so every web process of a fleet counts against the same budget, and a process running the `limits`
library, or an older moneyrail, shares it): a count for the current second and one for the previous, the
previous weighted by how much of it still falls within the last second. The script runs on one
persistent connection per process (kit/redis_script.py), and a refusal's reply carries what
`Retry-After` needs, so a refusal costs no second call.

A busy key does not cost a Redis round trip per request: one call reserves a *lease* of several
requests at once, counted in Redis when taken, and the process admits the next requests of that key from
it locally. The lease's size is what this process expects to see of the key in the rest of the current
window: the rate it saw over the last second (`SeenRate`) times the window's time left, as the script
measures it, at least 1, at most `largest_lease(limit)` (1/16 of the limit), at most the room left.
A lease ends when it is spent or when the Redis window it was counted in ends, whichever comes first
(its end is the window's time left as Redis reported it, counted from before the call was sent).

The exact guarantee, for a fleet of any number of web processes sharing one Redis:
- Admitted: every admitted request was counted in Redis before it was admitted, in the window during
  which it is admitted. Redis's counts are the sliding window counter's, with a lease's requests counted
  at the moment it was taken; a lease is granted only while `previous * weight + current` stays within
  the limit. So in every one of the key's 1-second windows the fleet admits at most `limit` requests, and
  it admits nothing the counter would have refused had each lease's requests all arrived when it was
  taken.
- Refused early: a request is refused only when Redis has no room and this process holds no lease for
  the key. Room can be missing while other processes hold unspent leases: at most `largest_lease(limit)`
  requests per process and window (less for a process that sees fewer), stranded when its traffic
  stops before the window ends, and weighing on the next window as the previous second's count.
- Batch 1: a key whose requests reach this process more than half a second apart (under two a second)
  gets leases of one request, that is one Redis call per request with exactly the counter's decisions
  of before; so does every limit under 32 (`largest_lease` is 1).
- Clocks: a lease's end is measured on this process's monotonic clock, Redis's window on Redis's; the
  two need only run at the same rate, not show the same time.
- Requests of one key that arrive while its Redis call is in flight wait for that call and spend from
  its lease (a busy key makes one call at a time, not one per request in flight); one that still finds
  no room asks Redis itself.

Redis down must not stop payments: a request with no lease goes through unchecked (fail open), logged
and counted in `moneyrail_rate_limit_unchecked_total`; for a short while after a failure Redis is not
asked at all, so an outage costs no request a connection timeout. A lease already held is still spent.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import structlog
from fastapi import Request
from prometheus_client import Counter

from moneyrail.api.context import Principal, request_session
from moneyrail.errors import RateLimited
from moneyrail.kit.redis_script import RedisScript, ScriptUnavailable
from moneyrail.models import EnvironmentSettings

logger = structlog.get_logger("moneyrail.rate_limits")

unchecked = Counter(
    "moneyrail_rate_limit_unchecked_total",
    "Requests let through without a rate-limit check because Redis did not answer (fail open).",
)
refused = Counter("moneyrail_rate_limited_total", "Requests refused with 429 rate_limited.")
leases_taken = Counter(
    "moneyrail_rate_limit_leases_total",
    "Rate-limit calls to Redis that reserved a lease (one request or more) for an API key.",
)
leased_requests = Counter(
    "moneyrail_rate_limit_leased_requests_total",
    "Requests counted in Redis by those leases: admitted, or stranded when a lease's window ended.",
)

REDIS_TIMEOUT_SECONDS = 0.25
PAUSE_AFTER_FAILURE_SECONDS = 2.0  # Redis is not asked again for this long after it failed
SETTINGS_CACHE_SECONDS = 10.0  # an operator's change reaches every web process within this
WINDOW_SECONDS = 1
KEY_PREFIX = "moneyrail:rate"
LEASE_SHARE_OF_LIMIT = 16  # a lease holds at most 1/16 of the limit: what one process can strand
WAITS_FOR_ANOTHER_CALL = 3  # then a request asks Redis itself rather than queue behind more calls
KEYS_BEFORE_SWEEP = 4096  # past this many keys, those idle for a window or more are forgotten
SWEEP_EVERY_SECONDS = 2.0

# The `limits` library's acquire_sliding_window.lua (limits 5.8), taking `size` requests at once instead
# of 1 and with the window's state in the reply of a refusal. KEYS: previous window, current window;
# ARGV: limit, window in seconds, and optionally the rate this process sees for the key in requests per
# 1000 s and the largest lease (absent: a lease of 1, the library's own behaviour). Times in milliseconds.
# Reply: {size, the current window's time left} when granted, {0, window state...} when refused.
SLIDING_WINDOW = """
local limit = tonumber(ARGV[1])
local expiry = tonumber(ARGV[2]) * 1000
local rate_milli = tonumber(ARGV[3]) or 0
local largest = tonumber(ARGV[4]) or 1
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
local room = limit - math.floor(previous_count * previous_ttl / expiry) - current_count
if room < 1 then
    return {0, previous_count, previous_ttl, current_count, current_ttl}
end
local exists = redis.call('exists', KEYS[2]) == 1
local time_left = expiry
if exists then
    time_left = math.max(current_ttl - expiry, 0)
end
-- as lease_size() below
local size = math.min(math.max(math.floor(rate_milli * time_left / 1000000), 1), largest, room)
if exists then
    redis.call('incrby', KEYS[2], size)
else
    redis.call('set', KEYS[2], size, 'PX', expiry * 2)
end
return {size, time_left}
"""


def window_keys(key_id: str, limit: int) -> tuple[str, str]:
    """(previous, current): the keys `limits` gives a per-second item of this limit for this key."""
    current = f"{KEY_PREFIX}:{{LIMITER/{key_id}/{limit}/1/second}}"
    return f"{current}/-1", current


def largest_lease(limit: int) -> int:
    return max(1, limit // LEASE_SHARE_OF_LIMIT)


def lease_size(rate_milli: int, time_left_ms: int, largest: int, room: int) -> int:
    """The script's arithmetic (kept in step with it, tested): the requests expected in the time left."""
    return min(max(rate_milli * time_left_ms // 1_000_000, 1), largest, room)


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


@dataclass(slots=True)
class SeenRate:
    """The requests of one key this process saw in the last second, before the one being checked.

    Two counts of whole local seconds, the previous one weighted by how much of it is still within the
    last second (the same approximation as the window's). Requests more than half a second apart keep
    it under 2, so such a key gets leases of one.
    """

    second: int = 0
    this_second: int = 0
    last_second: int = 0

    def note(self, now: float) -> float:
        """The rate before this request, in requests per second; then count it."""
        second = math.floor(now)
        if second != self.second:
            self.last_second = self.this_second if second == self.second + 1 else 0
            self.this_second = 0
            self.second = second
        rate = self.last_second * (1 - (now - second)) + self.this_second
        self.this_second += 1
        return rate


@dataclass(slots=True)
class Lease:
    """Requests of one key already counted in Redis, to be admitted by this process until `expires`."""

    limit: int
    requests: int = 0
    expires: float = 0.0  # monotonic; never after the end of the Redis window the requests were counted in
    seen: SeenRate = field(default_factory=SeenRate)
    last_used: float = 0.0
    call_in_flight: asyncio.Future[None] | None = None

    def spend(self, now: float) -> bool:
        if self.requests > 0 and now < self.expires:
            self.requests -= 1
            return True
        return False

    def add(self, requests: int, expires: float, now: float) -> None:
        if self.requests > 0 and now < self.expires:
            # two calls' leases at once: together they last as long as the shorter (its window may end first)
            self.requests += requests
            self.expires = min(self.expires, expires)
        else:
            self.requests, self.expires = requests, expires


@dataclass
class KeyRateLimiter:
    redis_url: str
    default_per_second: int
    clock: Callable[[], float] = time.monotonic
    _script: RedisScript | None = None
    _paused_until: float = 0.0
    _limits: dict[tuple[str, bool], tuple[float, int]] = field(default_factory=dict)
    _leases: dict[str, Lease] = field(default_factory=dict)
    _next_sweep: float = 0.0

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
        settings = await request_session(request).get(
            EnvironmentSettings, (tenant.installation_id, tenant.livemode)
        )
        if settings is None:  # every installation is created with both rows
            raise LookupError(f"no settings for {tenant.installation_id} livemode={tenant.livemode}")
        own = settings.rate_limit_per_second
        limit = self.default_per_second if own is None else own
        self._limits[cache_key] = (now + SETTINGS_CACHE_SECONDS, limit)
        return limit

    def lease_for(self, key_id: str, limit: int, now: float) -> Lease:
        lease = self._leases.get(key_id)
        if lease is None or lease.limit != limit:  # a new limit counts under other Redis keys
            if len(self._leases) >= KEYS_BEFORE_SWEEP and now >= self._next_sweep:
                self._forget_idle(now)
            lease = self._leases[key_id] = Lease(limit)
        lease.last_used = now
        return lease

    def _forget_idle(self, now: float) -> None:
        self._next_sweep = now + SWEEP_EVERY_SECONDS
        idle = [
            key_id
            for key_id, lease in self._leases.items()
            if lease.call_in_flight is None and now - lease.last_used > 2 * WINDOW_SECONDS
        ]
        for key_id in idle:
            del self._leases[key_id]

    async def check(self, request: Request, principal: Principal) -> None:
        limit = await self.limit_for(request, principal)
        if limit <= 0:
            return
        now = self.clock()
        lease = self.lease_for(principal.key_id, limit, now)
        rate = lease.seen.note(now)
        if lease.spend(now):
            return  # no await: the yield the Redis call gave is the lone statement's (db/raw.py)
        for _ in range(WAITS_FOR_ANOTHER_CALL):
            if lease.call_in_flight is None:
                break
            await asyncio.shield(lease.call_in_flight)  # its lease is sized for the requests waiting on it
            if lease.spend(self.clock()):
                return
        if self.clock() < self._paused_until:
            unchecked.inc()
            return
        await self._take_lease(lease, principal.key_id, limit, rate)

    async def _take_lease(self, lease: Lease, key_id: str, limit: int, rate: float) -> None:
        """One call to Redis: a lease whose first request is this one, or a refusal."""
        call: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if lease.call_in_flight is None:
            lease.call_in_flight = call  # the key's next requests wait for this call
        sent = self.clock()
        arguments = (limit, WINDOW_SECONDS, int(rate * 1000), largest_lease(limit))
        try:
            reply = await self._window()(window_keys(key_id, limit), arguments)
        except ScriptUnavailable as error:
            self._paused_until = self.clock() + PAUSE_AFTER_FAILURE_SECONDS
            unchecked.inc()
            logger.warning("rate_limit_unchecked", reason=str(error)[:200], key=key_id)
            return
        else:
            if reply[0] >= 1:
                leases_taken.inc()
                leased_requests.inc(reply[0])
                # counted in the window Redis reported, which ends no earlier than `sent` + its time left
                lease.add(reply[0] - 1, sent + reply[1] / 1000, self.clock())
                return
        finally:
            if lease.call_in_flight is call:
                lease.call_in_flight = None
            call.set_result(None)  # the waiters run after this coroutine has added the lease
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
