"""`moneyrail listen` and `moneyrail trigger` as a developer runs them, in their own processes, against
the session's web process and a worker: the event a trigger makes reaches a local HTTP server through
`listen`, with the service's own signed headers, and verifies with the secret `listen` printed."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

import httpx
import pytest

from moneyrail.installations import service as installations
from moneyrail_client import webhooks
from moneyrail_client.events import PaymentIntentEvent
from tests.events.receiver import Receiver, receiver
from tests.harness import ROOT, TLS, TenantKeys, create_tenant, run_moneyrail

SECRET_LINE = re.compile(r"Webhook signing secret: (whsec_\S+)")


def moneyrail(servers, *arguments: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return run_moneyrail(servers, *arguments, timeout=timeout)


@dataclass
class Listening:
    process: subprocess.Popen[str]
    target: Receiver
    secret: str
    keys: TenantKeys
    lines: list[str] = field(default_factory=list)

    def wait_for_line(self, pattern: str, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = next((line for line in list(self.lines) if re.search(pattern, line)), None)
            if found:
                return found
            time.sleep(0.05)
        raise AssertionError(f"listen printed no line like {pattern!r}: {self.lines}")


def read_lines(stream: IO[str], into: list[str]) -> None:
    for line in stream:
        into.append(line.rstrip("\n"))


@pytest.fixture(scope="module")
def listening(servers, web, bridge) -> Iterator[Listening]:
    keys = create_tenant(bridge)
    with receiver() as target:
        process = subprocess.Popen(
            [
                *(sys.executable, "-m", "moneyrail", "listen", "--forward-to", target.url),
                *("--api-key", keys.secret, "--base-url", web.base_url),
            ],
            env=servers.environment(),
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        lines: list[str] = []
        reader = threading.Thread(target=read_lines, args=(process.stdout, lines), daemon=True)
        reader.start()
        listening = Listening(process, target, "", keys, lines)
        try:
            ready = listening.wait_for_line("Webhook signing secret")
            match = SECRET_LINE.search(ready)
            assert match, ready
            listening.secret = match.group(1)
            yield listening
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            reader.join(10)  # the output ends with the process
            assert process.stdout is not None
            process.stdout.close()


def deliveries_of(target: Receiver, event_type: str, timeout: float = 30) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [d for d in list(target.deliveries) if json.loads(d.body).get("type") == event_type]
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(
        f"no {event_type} reached the local server: {[d.body[:80] for d in target.deliveries]}"
    )


def test_a_triggered_payment_reaches_the_local_server_signed(servers, web, listening, client_stack) -> None:
    made = moneyrail(
        servers,
        "trigger",
        "payment_intent.succeeded",
        "--api-key",
        listening.keys.secret,
        "--base-url",
        web.base_url,
    )
    assert made.returncode == 0, made.stdout + made.stderr
    payment_id = re.search(r"payment_intent\s+(pi_\w+)\s+succeeded", made.stdout)
    assert payment_id, made.stdout

    (delivery,) = [
        d
        for d in deliveries_of(listening.target, "payment_intent.succeeded")
        if json.loads(d.body)["data"]["object"]["id"] == payment_id.group(1)
    ]
    event = webhooks.verify(delivery.body, delivery.headers, listening.secret)  # the original signature
    assert isinstance(event, PaymentIntentEvent) and event.data.object.status == "succeeded"
    assert delivery.headers["webhook-id"] == event.id
    listening.wait_for_line(rf"payment_intent\.succeeded\s+{event.id}\s+-> 200")


def test_a_trigger_names_what_it_supports_and_refuses_a_live_key(
    servers, web, bridge, listening, client_stack
) -> None:
    unknown = moneyrail(
        servers, "trigger", "customer.deleted", "--api-key", listening.keys.secret, "--base-url", web.base_url
    )
    assert unknown.returncode == 1
    assert (
        "no trigger for 'customer.deleted'" in unknown.stderr and "payment_intent.succeeded" in unknown.stderr
    )
    live = create_tenant(bridge, livemode=True)
    refused = moneyrail(
        servers, "trigger", "payment_intent.created", "--api-key", live.secret, "--base-url", web.base_url
    )
    assert refused.returncode == 1 and "sandbox" in refused.stderr
    help_text = moneyrail(servers, "trigger", "--help").stdout
    assert "payout.paid" in help_text and "transfer.paid" in help_text


def test_transfer_and_payout_triggers_walk_through_the_workers(servers, web, bridge, client_stack) -> None:
    platform = create_tenant(bridge, kind="platform")
    made = moneyrail(
        servers,
        "trigger",
        "transfer.paid",
        "--json",
        "--api-key",
        platform.secret,
        "--base-url",
        web.base_url,
    )
    assert made.returncode == 0, made.stdout + made.stderr
    transfer = json.loads(made.stdout)["objects"][-1]
    assert transfer["object"] == "transfer" and transfer["status"] == "paid"

    direct = create_tenant(bridge, kind="direct")

    async def with_bank_account(session: Any) -> None:
        await installations.update_environment_settings(
            session, direct.tenant, payout_bank_account="DE89370400440532013000"
        )

    bridge.in_unit_of_work(with_bank_account)
    made = moneyrail(
        servers, "trigger", "payout.paid", "--json", "--api-key", direct.secret, "--base-url", web.base_url
    )
    assert made.returncode == 0, made.stdout + made.stderr
    payout = json.loads(made.stdout)["objects"][-1]
    assert payout["object"] == "payout" and payout["status"] == "paid"


def test_listen_removes_its_endpoint_on_exit(web, listening, client_stack) -> None:
    """Last in the module: it stops the module's `listen`."""
    headers = {"Authorization": f"Bearer {listening.keys.secret}"}
    endpoints = httpx.get(f"{web.base_url}/v1/webhook-endpoints", headers=headers, verify=TLS).json()["data"]
    assert [endpoint["description"] for endpoint in endpoints] == ["moneyrail listen (temporary)"]
    listening.process.send_signal(signal.SIGINT)
    assert listening.process.wait(30) == 0
    listening.wait_for_line(rf"Removed endpoint {endpoints[0]['id']}")
    assert httpx.get(f"{web.base_url}/v1/webhook-endpoints", headers=headers, verify=TLS).json()["data"] == []
