"""`moneyrail listen --forward-to URL`: the service's webhooks delivered to a local application.

A small HTTP receiver on this machine is registered as a temporary webhook endpoint (a sandbox endpoint
may be `http` and loopback, CONVENTIONS §10). Each delivery it receives is forwarded, body and headers
unchanged (so its Standard Webhooks signature still verifies with the secret printed at the start), to
the local URL; the local application's status is the receiver's answer, so a failing handler is retried
by the service as it would be in production. One line per event is printed. On SIGINT or SIGTERM the
endpoint is deleted and the receiver stops.
"""

from __future__ import annotations

import json
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import FrameType
from typing import Any

import httpx

from moneyrail.devkit.api import ApiConnection, call
from moneyrail.kit.tls import default_tls

# Not forwarded: they describe the connection to the receiver, not the delivery.
HOP_BY_HOP = {"host", "content-length", "connection", "keep-alive", "transfer-encoding", "accept-encoding"}
UNREACHABLE = 502  # answered to the service when the local application does not answer


@dataclass
class Forwarded:
    event_type: str
    event_id: str
    status: int | None  # the local application's answer; None when it did not answer
    error: str | None = None

    def line(self) -> str:
        answer = str(self.status) if self.status is not None else f"no answer ({self.error})"
        return f"{self.event_type}  {self.event_id}  -> {answer}"


def forward(forward_to: str, body: bytes, headers: dict[str, str], timeout: float = 30) -> Forwarded:
    try:
        event = json.loads(body)
        event_type, event_id = str(event.get("type", "?")), str(event.get("id", "?"))
    except (ValueError, AttributeError):
        event_type, event_id = "?", headers.get("webhook-id", "?")
    kept = {name: value for name, value in headers.items() if name.lower() not in HOP_BY_HOP}
    try:
        response = httpx.post(forward_to, content=body, headers=kept, timeout=timeout, verify=default_tls())
    except httpx.HTTPError as error:
        return Forwarded(event_type, event_id, None, f"{type(error).__name__}: {error}")
    return Forwarded(event_type, event_id, response.status_code)


def receiver(
    forward_to: str, host: str, port: int, report: Callable[[Forwarded], None]
) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            outcome = forward(forward_to, body, dict(self.headers.items()))
            report(outcome)
            self.send_response(outcome.status if outcome.status is not None else UNREACHABLE)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass  # one line per event is printed by `report`

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    return server


def listen(
    connection: ApiConnection,
    forward_to: str,
    *,
    events: list[str],
    host: str,
    port: int,
    public_url: str | None,
    say: Callable[[str], None],
) -> None:
    """Run until SIGINT or SIGTERM; the endpoint is deleted on the way out, whatever happened."""
    server = receiver(forward_to, host, port, lambda outcome: say(outcome.line()))
    url = public_url or f"http://{host}:{server.server_address[1]}/"
    stop = threading.Event()

    def on_signal(_number: int, _frame: FrameType | None) -> None:
        stop.set()

    previous = {number: signal.signal(number, on_signal) for number in (signal.SIGINT, signal.SIGTERM)}
    serving = threading.Thread(target=server.serve_forever, name="listen-receiver", daemon=True)
    serving.start()
    try:
        with connection.client() as client:
            endpoint = call(
                client,
                "POST",
                "/v1/webhook-endpoints",
                {"url": url, "enabled_events": events, "description": "moneyrail listen (temporary)"},
            )
            try:
                say(
                    f"Ready: events to {url} are forwarded to {forward_to} (endpoint {endpoint['id']}). "
                    f"Webhook signing secret: {endpoint['secret']}"
                )
                while not stop.wait(timeout=1):  # a signal handler sets it
                    pass
            finally:
                call(client, "DELETE", f"/v1/webhook-endpoints/{endpoint['id']}")
                say(f"Removed endpoint {endpoint['id']}.")
    finally:
        server.shutdown()
        server.server_close()
        for number, handler in previous.items():
            signal.signal(number, handler)
