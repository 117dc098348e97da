"""A PostgreSQL wire-protocol proxy that counts what a server process sends to the database.

PostgreSQL here has no `pg_stat_statements` loaded (a shared server's `shared_preload_libraries` is not
ours to change), so the count is taken on the wire: a moneyrail process is pointed at this proxy, which
forwards every byte both ways and reads the frontend's messages. An Execute (extended protocol) or a
Query (simple protocol: BEGIN, SAVEPOINT, COMMIT...) is one statement; a Sync or a Query is one round
trip. Parse messages name the prepared statements, so each execution is recorded with its SQL text.
"""

from __future__ import annotations

import asyncio
import struct
import threading
from collections import Counter
from dataclasses import dataclass, field

SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104


@dataclass
class Tally:
    statements: list[str] = field(default_factory=list)
    round_trips: int = 0

    def by_text(self) -> Counter[str]:
        return Counter(" ".join(text.split())[:160] for text in self.statements)


class _Connection:
    """One client connection's frontend stream, parsed message by message."""

    def __init__(self, counter: StatementCounter) -> None:
        self.counter = counter
        self.buffer = b""
        self.started = False
        self.prepared: dict[bytes, str] = {}
        self.bound = ""

    def feed(self, data: bytes) -> bytes | None:
        """Record the messages in `data`; the answer the proxy gives itself (refusing SSL), if any."""
        self.buffer += data
        while True:
            if not self.started:
                if len(self.buffer) < 8:
                    return None
                length, code = struct.unpack("!ii", self.buffer[:8])
                if len(self.buffer) < length:
                    return None
                self.buffer = self.buffer[length:]
                if code in (SSL_REQUEST, GSSENC_REQUEST):
                    return b"N"  # plain text, so the stream stays readable
                self.started = True
                continue
            if len(self.buffer) < 5:
                return None
            kind = self.buffer[:1]
            (length,) = struct.unpack("!i", self.buffer[1:5])
            if len(self.buffer) < 1 + length:
                return None
            body = self.buffer[5 : 1 + length]
            self.buffer = self.buffer[1 + length :]
            self._message(kind, body)

    def _message(self, kind: bytes, body: bytes) -> None:
        if kind == b"P":
            name, _, rest = body.partition(b"\0")
            self.prepared[name] = rest.partition(b"\0")[0].decode(errors="replace")
        elif kind == b"B":
            _portal, _, rest = body.partition(b"\0")
            self.bound = self.prepared.get(rest.partition(b"\0")[0], "?")
        elif kind == b"E":
            self.counter.record(self.bound, round_trip=False)
        elif kind == b"S":
            self.counter.record(None, round_trip=True)
        elif kind == b"Q":
            self.counter.record(body.rstrip(b"\0").decode(errors="replace"), round_trip=True)


class StatementCounter:
    """`with StatementCounter(host, port) as counter:` then point a process at `counter.port`.

    A `host` that is a directory is PostgreSQL's socket folder (the embedded server listens there).
    """

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.upstream_socket = (
            f"{upstream_host}/.s.PGSQL.{upstream_port}" if upstream_host.startswith("/") else None
        )
        self.port = 0
        self._tally = Tally()
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.AbstractServer | None = None

    def record(self, text: str | None, *, round_trip: bool) -> None:
        with self._lock:
            if text is not None:
                self._tally.statements.append(text)
            if round_trip:
                self._tally.round_trips += 1

    def take(self) -> Tally:
        """What was counted since the last take (or the start), and a fresh count from now on."""
        with self._lock:
            taken, self._tally = self._tally, Tally()
        return taken

    def __enter__(self) -> StatementCounter:
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._serve, "127.0.0.1", 0), self._loop
        ).result()
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def __exit__(self, *exc: object) -> None:
        async def close() -> None:
            assert self._server is not None
            self._server.close()
            connections = asyncio.all_tasks() - {asyncio.current_task()}
            for task in connections:
                task.cancel()
            await asyncio.gather(*connections, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(close(), self._loop).result()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()

    async def _serve(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        connection = _Connection(self)
        try:
            if self.upstream_socket is not None:
                server_reader, server_writer = await asyncio.open_unix_connection(self.upstream_socket)
            else:
                server_reader, server_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            client_writer.close()
            return

        async def upstream() -> None:
            while data := await client_reader.read(65536):
                answer = connection.feed(data)
                if answer is not None:  # an SSL request: answered here, never forwarded
                    client_writer.write(answer)
                    await client_writer.drain()
                    continue
                server_writer.write(data)
                await server_writer.drain()
            server_writer.close()

        async def downstream() -> None:
            while data := await server_reader.read(65536):
                client_writer.write(data)
                await client_writer.drain()
            client_writer.close()

        try:
            await asyncio.gather(upstream(), downstream(), return_exceptions=True)
        except (ConnectionError, OSError, asyncio.CancelledError):
            pass  # a connection closed, or the proxy shutting down: this connection's work is over
        finally:
            client_writer.close()
            server_writer.close()
