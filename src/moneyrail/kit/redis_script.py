"""One Lua script called on one persistent Redis connection, for a call made on every request.

redis-py's asyncio client takes a pooled connection, builds the command and parses the reply through
several layers of Python on each call: for the rate limit (one EVALSHA per request) that cost more CPU
than the rest of the check. This client keeps a single connection per process and pipelines the calls
on it: each call writes one command and waits for its reply, which Redis sends in order.

Any failure (refused connection, a reply not there within the timeout, a closed connection) fails every
call waiting on the connection with `ScriptUnavailable` and drops the connection; the next call opens a
new one. The caller decides what a failure means (the rate limit fails open).
"""

from __future__ import annotations

import asyncio
import hashlib
import ssl
from collections import deque
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

RESP_NIL = None


class ScriptUnavailable(Exception):
    """Redis could not run the script: unreachable, too slow, or it answered an error."""


def encode_command(*parts: bytes | str | int) -> bytes:
    """A command as RESP: an array of bulk strings."""
    chunks = [b"*%d\r\n" % len(parts)]
    for part in parts:
        data = part if isinstance(part, bytes) else str(part).encode()
        chunks.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(chunks)


class _Incomplete(Exception):
    """The buffer ends inside a reply: wait for more bytes."""


def parse_reply(buffer: bytes, position: int) -> tuple[Any, int]:
    """One RESP2 reply from buffer[position:], and the position after it (`_Incomplete` if cut short).

    An error reply comes back as a `ScriptUnavailable` instance (not raised: it answers one call only).
    """
    end = buffer.find(b"\r\n", position)
    if end < 0:
        raise _Incomplete
    kind, line = buffer[position : position + 1], buffer[position + 1 : end]
    after = end + 2
    if kind == b":":
        return int(line), after
    if kind == b"+":
        return line, after
    if kind == b"-":
        return ScriptUnavailable(line.decode(errors="replace")), after
    if kind == b"$":
        length = int(line)
        if length < 0:
            return RESP_NIL, after
        if len(buffer) < after + length + 2:
            raise _Incomplete
        return buffer[after : after + length], after + length + 2
    if kind == b"*":
        count = int(line)
        if count < 0:
            return RESP_NIL, after
        items = []
        for _ in range(count):
            item, after = parse_reply(buffer, after)
            items.append(item)
        return items, after
    raise ValueError(f"not a RESP reply: {buffer[position : position + 20]!r}")


class _Connection(asyncio.Protocol):
    def __init__(self) -> None:
        self.transport: Any = None  # uvloop's transports are not asyncio.Transport instances
        self.waiting: deque[asyncio.Future[Any]] = deque()
        self.buffer = b""
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer + data if self.buffer else data
        position = 0
        while position < len(buffer) and self.waiting:
            try:
                reply, position = parse_reply(buffer, position)
            except _Incomplete:
                break
            except ValueError as error:
                self.fail(ScriptUnavailable(str(error)))
                return
            waiter = self.waiting.popleft()
            if not waiter.done():
                waiter.set_result(reply)
        self.buffer = buffer[position:]

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._fail_waiting(ScriptUnavailable(f"the Redis connection closed: {exc or 'by the server'}"))

    def fail(self, error: ScriptUnavailable) -> None:
        """Replies can no longer be matched to calls: drop the connection and everything waiting on it."""
        self.closed = True
        if self.transport is not None:
            self.transport.abort()
        self._fail_waiting(error)

    def _fail_waiting(self, error: ScriptUnavailable) -> None:
        while self.waiting:
            waiter = self.waiting.popleft()
            if not waiter.done():
                waiter.set_exception(error)

    def send(self, command: bytes, loop: asyncio.AbstractEventLoop) -> asyncio.Future[Any]:
        assert self.transport is not None
        waiter: asyncio.Future[Any] = loop.create_future()
        self.waiting.append(waiter)
        self.transport.write(command)
        return waiter


class RedisScript:
    """`await script(keys, args)`: the script's reply, or `ScriptUnavailable`."""

    def __init__(self, redis_url: str, source: str, *, timeout_s: float) -> None:
        self._url = redis_url
        self._source = source.encode()
        self._sha = hashlib.sha1(self._source, usedforsecurity=False).hexdigest()
        self._timeout_s = timeout_s
        self._connection: _Connection | None = None
        self._connecting: asyncio.Future[_Connection] | None = None

    async def __call__(self, keys: tuple[str, ...], args: tuple[bytes | str | int, ...]) -> Any:
        connection = self._connection
        if connection is None or connection.closed:
            connection = await self._connect()
        reply = await self._call(connection, encode_command(b"EVALSHA", self._sha, len(keys), *keys, *args))
        if isinstance(reply, ScriptUnavailable) and str(reply).startswith("NOSCRIPT"):
            # first call on this Redis (or after a SCRIPT FLUSH): EVAL sends the source and caches it
            reply = await self._call(
                connection, encode_command(b"EVAL", self._source, len(keys), *keys, *args)
            )
        if isinstance(reply, ScriptUnavailable):
            raise reply
        return reply

    async def _call(self, connection: _Connection, command: bytes) -> Any:
        loop = asyncio.get_running_loop()
        waiter = connection.send(command, loop)
        timer = loop.call_later(self._timeout_s, self._time_out, connection, waiter)
        try:
            return await waiter
        finally:
            timer.cancel()

    def _time_out(self, connection: _Connection, waiter: asyncio.Future[Any]) -> None:
        if not waiter.done():
            connection.fail(ScriptUnavailable(f"no reply from Redis within {self._timeout_s} s"))

    async def _connect(self) -> _Connection:
        if self._connecting is not None:  # one connection attempt however many calls wait for it
            return await asyncio.shield(self._connecting)
        connecting: asyncio.Future[_Connection] = asyncio.get_running_loop().create_future()
        self._connecting = connecting
        try:
            connection = await asyncio.wait_for(self._open(), self._timeout_s)
        except BaseException as error:
            failure = ScriptUnavailable(f"cannot reach Redis: {type(error).__name__}: {error}")
            connecting.set_exception(failure)
            connecting.exception()  # retrieved: no "never retrieved" warning when nobody else waits
            if isinstance(error, (OSError, TimeoutError, ScriptUnavailable)):
                raise failure from error
            raise
        finally:
            self._connecting = None
        self._connection = connection
        connecting.set_result(connection)
        return connection

    async def _open(self) -> _Connection:
        loop = asyncio.get_running_loop()
        url = urlsplit(self._url)
        query = parse_qs(url.query)
        if url.scheme == "unix":
            database = query.get("db", ["0"])[0]
            _, protocol = await loop.create_unix_connection(_Connection, url.path)
        else:
            database = query.get("db", [""])[0] or url.path.strip("/")
            secure = ssl.create_default_context() if url.scheme == "rediss" else None
            _, protocol = await loop.create_connection(
                _Connection, url.hostname or "127.0.0.1", url.port or 6379, ssl=secure
            )
        setup: list[bytes] = []
        if url.password is not None:
            user = unquote(url.username) if url.username else "default"
            setup.append(encode_command(b"AUTH", user, unquote(url.password)))
        if database and database != "0":
            setup.append(encode_command(b"SELECT", database))
        for command in setup:
            reply = await protocol.send(command, loop)
            if isinstance(reply, ScriptUnavailable):
                protocol.fail(reply)
                raise reply
        return protocol

    def close(self) -> None:
        if self._connection is not None:
            self._connection.fail(ScriptUnavailable("closed"))
            self._connection = None
