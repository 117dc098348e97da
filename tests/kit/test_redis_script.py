"""The rate limit's Redis client (kit/redis_script.py): replies cut anywhere, a budget shared by two
connections (as by two web processes), and failure when Redis is not there."""

from __future__ import annotations

import asyncio
import secrets

import pytest

from moneyrail.api.rate_limits import SLIDING_WINDOW, WINDOW_SECONDS, window_keys
from moneyrail.kit.redis_script import RedisScript, ScriptUnavailable, _Connection, encode_command
from tests.harness import free_port


def test_replies_split_across_reads_reach_their_calls_in_order():
    replies = b":1\r\n*5\r\n:0\r\n:3\r\n:940\r\n$-1\r\n:0\r\n-NOSCRIPT No matching script\r\n$3\r\nabc\r\n"

    async def feed(chunk_size: int) -> list[object]:
        loop = asyncio.get_running_loop()
        connection = _Connection()
        connection.transport = type("Sink", (), {"write": lambda self, data: None})()
        waiters = [connection.send(encode_command(b"PING"), loop) for _ in range(4)]
        for start in range(0, len(replies), chunk_size):
            connection.data_received(replies[start : start + chunk_size])
        return [await waiter for waiter in waiters]

    for chunk_size in (1, 2, 3, 7, len(replies)):
        first, window, missing, bulk = asyncio.run(feed(chunk_size))
        assert first == 1 and window == [0, 3, 940, None, 0] and bulk == b"abc"
        assert isinstance(missing, ScriptUnavailable) and str(missing).startswith("NOSCRIPT")


def test_two_connections_share_one_window(servers):
    async def burst() -> list[int]:
        first = RedisScript(servers.redis_url, SLIDING_WINDOW, timeout_s=2)
        second = RedisScript(servers.redis_url, SLIDING_WINDOW, timeout_s=2)
        keys = window_keys(f"key_{secrets.token_hex(6)}", 5)
        try:
            replies = await asyncio.gather(
                *[(first if n % 2 else second)(keys, (5, WINDOW_SECONDS)) for n in range(12)]
            )
        finally:
            first.close()
            second.close()
        return [reply[0] for reply in replies]

    granted = asyncio.run(burst())
    assert granted.count(1) == 5 and granted.count(0) == 7, granted


def test_an_absent_redis_is_a_script_failure_not_a_hang():
    async def call() -> None:
        script = RedisScript(f"redis://127.0.0.1:{free_port()}/0", SLIDING_WINDOW, timeout_s=0.5)
        await script(window_keys("key_x", 1), (1, WINDOW_SECONDS))

    with pytest.raises(ScriptUnavailable):
        asyncio.run(call())
