"""Retries against the real service: under a rate limit (429 with Retry-After), across a lost answer
(the effect committed, the answer never arrived) and across a web process killed and restarted in the
middle of a call. Each call succeeds once and acts once: its attempts carry one Idempotency-Key."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from moneyrail_client import InvalidRequestError, Moneyrail, RateLimitError, RetryPolicy
from tests.api.test_rate_limits import set_rate_limit
from tests.client.conftest import Recorder
from tests.harness import KEY_CACHE_SECONDS, OUTPUT_DIR, TLS, Process, free_port, wait_until_ready
from tests.helpers import count_rows

QUICK = RetryPolicy(max_retries=8, initial_delay=0.1, max_delay=1.0)
# Enough attempts to outlast a web process's restart on a loaded machine (about a minute of retries)
ACROSS_A_RESTART = RetryPolicy(max_retries=60, initial_delay=0.1, max_delay=1.0)


def payments_described(db: Any, installation_id: str, description: str) -> int:
    row = db.execute(
        "SELECT count(*) FROM payment_intents WHERE installation_id = %s AND description = %s",
        (installation_id, description),
    ).fetchone()
    return int(row[0])


def test_calls_over_the_rate_limit_wait_out_retry_after_and_each_acts_once(servers, make_client, db) -> None:
    recorder = Recorder()
    client = make_client(http_client=recorder.http_client(), retry_policy=QUICK)
    set_rate_limit(servers, client.keys.installation_id, 2)
    time.sleep(KEY_CACHE_SECONDS)  # the web process reads the new limit within its key cache's lifetime
    made = [client.customers.create(email=f"burst{n}@example.com").id for n in range(6)]
    assert len(set(made)) == 6
    assert 429 in recorder.statuses, recorder.statuses  # the limit was met, and waited out
    assert count_rows(db, "customers", client.keys.installation_id) == 6
    # each retried POST repeated its first attempt's key
    keys = [request.headers["Idempotency-Key"] for request in recorder.requests]
    assert len(set(keys)) == 6 and len(keys) == len(recorder.statuses) > 6


def test_without_retries_the_rate_limit_is_a_rate_limit_error(servers, make_client) -> None:
    client = make_client(max_retries=0)
    set_rate_limit(servers, client.keys.installation_id, 1)
    time.sleep(KEY_CACHE_SECONDS)
    with pytest.raises(RateLimitError) as raised:
        for _ in range(5):
            client.customers.list(limit=1).first_page()
    assert raised.value.http_status == 429 and raised.value.code == "rate_limited"


def test_another_4xx_is_never_retried(make_client) -> None:
    recorder = Recorder()
    client = make_client(http_client=recorder.http_client(), retry_policy=QUICK)
    with pytest.raises(InvalidRequestError):
        client.payment_intents.create(amount=10, currency="EURO")
    assert recorder.statuses == [400]


@contextmanager
def answer_losing_proxy(upstream: str, lose: int) -> Iterator[str]:
    """An HTTP proxy that passes requests to `upstream` and, for the first `lose` POSTs, drops the
    connection once the upstream has answered: the effect is done, the client never hears of it."""
    lost = 0

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def relay(self) -> None:
            nonlocal lost
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            headers = {k: v for k, v in self.headers.items() if k.lower() not in {"host", "content-length"}}
            answer = httpx.request(
                self.command, upstream + self.path, content=body, headers=headers, timeout=30, verify=TLS
            )
            if self.command == "POST" and lost < lose:
                lost += 1
                self.close_connection = True  # nothing is written back
                return
            self.send_response(answer.status_code)
            for name, value in answer.headers.items():
                if name.lower() not in {
                    "content-length",
                    "transfer-encoding",
                    "connection",
                    "content-encoding",
                }:
                    self.send_header(name, value)
            self.send_header("content-length", str(len(answer.content)))
            self.end_headers()
            self.wfile.write(answer.content)

        do_GET = do_POST = do_DELETE = relay

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_post_whose_answer_was_lost_is_retried_and_replayed_not_repeated(web, make_client, db) -> None:
    keys = make_client().keys
    recorder = Recorder()
    with (
        answer_losing_proxy(web.base_url, lose=1) as proxy,
        Moneyrail(
            api_key=keys.secret, base_url=proxy, retry_policy=QUICK, http_client=recorder.http_client()
        ) as client,
    ):
        payment = client.payment_intents.create(amount=1234, currency="eur", description="lost-answer")
        assert client.payment_intents.retrieve(payment.id).amount == 1234
    # two attempts of the POST, the second answered the stored answer of the first; then the GET
    assert [request.method for request in recorder.requests] == ["POST", "POST", "GET"]
    assert recorder.replayed == [True, False]
    assert recorder.requests[0].headers["Idempotency-Key"] == recorder.requests[1].headers["Idempotency-Key"]
    assert payments_described(db, keys.installation_id, "lost-answer") == 1


def test_a_call_across_a_web_process_killed_and_restarted_succeeds_once(servers, make_client, db) -> None:
    port = free_port()  # kept across the restart: the client knows one address
    base_url = f"http://127.0.0.1:{port}"
    log = OUTPUT_DIR / "web-client-restart.log"

    def start() -> Process:
        process = Process.start("web", servers, log, MONEYRAIL_PORT=str(port))
        wait_until_ready(base_url, process)
        return process

    keys = make_client().keys
    recorder = Recorder()
    client = Moneyrail(
        api_key=keys.secret,
        base_url=base_url,
        retry_policy=ACROSS_A_RESTART,
        http_client=recorder.http_client(timeout=1.5),
    )
    first = start()
    restarted: Process | None = None
    try:
        assert client.account.retrieve().id  # the process serves
        first.popen.send_signal(signal.SIGSTOP)  # it hangs: the next request is taken, never answered
        outcome: dict[str, Any] = {}
        call = threading.Thread(
            target=lambda: outcome.update(
                payment=client.payment_intents.create(
                    amount=4321, currency="eur", description="across-restart"
                )
            )
        )
        call.start()
        deadline = time.monotonic() + 30
        while len(recorder.requests) < 3:  # the first attempt and its retry timed out: mid-call
            assert time.monotonic() < deadline and call.is_alive(), recorder.statuses
            time.sleep(0.05)
        first.popen.kill()
        first.popen.wait()
        restarted = start()
        call.join(60)
        assert not call.is_alive()
        assert outcome["payment"].status == "requires_payment_method"
    finally:
        client.close()
        for process in (first, restarted):
            if process is not None:
                process.stop()
    assert payments_described(db, keys.installation_id, "across-restart") == 1
    keys_sent = {
        request.headers["Idempotency-Key"] for request in recorder.requests if request.method == "POST"
    }
    assert len(keys_sent) == 1
