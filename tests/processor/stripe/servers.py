"""localstripe and the Stripe double in front of it, as real processes on free ports."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.harness import OUTPUT_DIR, ROOT, TLS, free_port

SECRET_KEY = "sk_test_moneyrail_stripe_tests"
PUBLISHABLE_KEY = "pk_test_moneyrail_stripe_tests"


@dataclass(frozen=True)
class StripeServers:
    localstripe: str  # localstripe itself
    double: str  # the double in front of it: the one base the adapter is given


def _start(module: str, log_path: Path, *args: str) -> subprocess.Popen[bytes]:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", module, *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            start_new_session=True,
        )


def _wait_until_answers(
    url: str, process: subprocess.Popen[bytes], log_path: Path, timeout: float = 30
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{url} exited early:\n{log_path.read_text(errors='replace')[-4000:]}")
        try:
            if httpx.get(url, auth=(SECRET_KEY, ""), timeout=2, verify=TLS).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise TimeoutError(f"{url} did not answer:\n{log_path.read_text(errors='replace')[-4000:]}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def stripe_servers() -> Iterator[StripeServers]:
    """localstripe, then the double in front of it; both stopped on the way out."""
    localstripe_port, double_port = free_port(), free_port()
    localstripe = f"http://127.0.0.1:{localstripe_port}"
    double = f"http://127.0.0.1:{double_port}"
    localstripe_log, double_log = OUTPUT_DIR / "localstripe.log", OUTPUT_DIR / "stripe-double.log"
    started = [
        _start(
            "tests.processor.stripe.localstripe_server",
            localstripe_log,
            "--port",
            str(localstripe_port),
            "--from-scratch",
        )
    ]
    try:
        _wait_until_answers(f"{localstripe}/v1/balance", started[0], localstripe_log)
        started.append(
            _start(
                "tests.processor.stripe.double",
                double_log,
                "--port",
                str(double_port),
                "--upstream",
                localstripe,
            )
        )
        _wait_until_answers(f"{double}/_double/health", started[1], double_log)
        yield StripeServers(localstripe, double)
    finally:
        for process in reversed(started):
            _stop(process)
