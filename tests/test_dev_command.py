"""`moneyrail dev` on the embedded PostgreSQL and Redis: the newcomer's first command, end to end.

This test always uses the embedded servers, whatever MONEYRAIL_TEST_* say, so CI keeps that path green.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.harness import ROOT, free_port

pytestmark = pytest.mark.embedded

CURL_LINE = re.compile(r"^\s*(curl .+)$", re.MULTILINE)


def start_dev(data_dir: Path, port: int, log_path: Path) -> subprocess.Popen[bytes]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DATABASE_URL", "REDIS_URL"} and not key.startswith("MONEYRAIL_")
    }
    env.update(MONEYRAIL_DATA_DIR=str(data_dir), MONEYRAIL_PORT=str(port))
    with log_path.open("wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "moneyrail", "dev"],
            env=env,
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
        )


def wait_for_curl_line(process: subprocess.Popen[bytes], log_path: Path, timeout: float = 120) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        match = CURL_LINE.search(log_path.read_text(errors="replace"))
        if match:
            return match.group(1)
        assert process.poll() is None, log_path.read_text(errors="replace")
        time.sleep(0.2)
    raise TimeoutError(log_path.read_text(errors="replace"))


def stop_dev(process: subprocess.Popen[bytes]) -> int:
    process.send_signal(signal.SIGINT)  # what Ctrl-C in a terminal sends
    return process.wait(60)


def postgres_running_in(data_dir: Path) -> bool:
    pid_file = data_dir / "postgres" / "postmaster.pid"
    if not pid_file.exists():
        return False
    pid = int(pid_file.read_text().split()[0])
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_dev_starts_everything_prints_a_working_curl_line_and_stops_cleanly(tmp_path):
    data_dir = tmp_path / "data"
    port = free_port()
    log_path = tmp_path / "dev.log"
    process = start_dev(data_dir, port, log_path)
    try:
        curl_line = wait_for_curl_line(process, log_path)
        output = log_path.read_text()
        secret = re.search(r"sandbox API key: (sk_test_\w+)", output).group(1)
        assert secret in curl_line and f"127.0.0.1:{port}" in curl_line

        if shutil.which("curl"):
            answered = subprocess.run(shlex.split(curl_line), capture_output=True, text=True, timeout=30)
            assert answered.returncode == 0, answered.stderr
            account = httpx.Response(200, content=answered.stdout.encode()).json()
        else:  # the same request without curl
            url = re.search(r"(http://\S+)", curl_line).group(1)
            account = httpx.get(url, headers={"Authorization": f"Bearer {secret}"}).json()
        assert account["object"] == "account" and account["livemode"] is False

        # the worker and the scheduler really run beside the web process
        children = subprocess.run(
            ["ps", "-o", "args=", "--ppid", str(process.pid)], capture_output=True, text=True
        )
        # `moneyrail worker` and `moneyrail scheduler` exec into dramatiq and the scheduler module
        for command in ("moneyrail web", "dramatiq workers.main", "workers.scheduler"):
            assert command in children.stdout, children.stdout
        assert postgres_running_in(data_dir)
    finally:
        exit_code = stop_dev(process)
    assert exit_code == 0, log_path.read_text()
    assert "stopped" in log_path.read_text()
    assert not postgres_running_in(data_dir)
    assert not (data_dir / "redis" / "redis.sock").exists() or not _socket_answers(
        data_dir / "redis" / "redis.sock"
    )

    # a second start reuses the installation and its key instead of making new ones
    second_log = tmp_path / "dev-again.log"
    again = start_dev(data_dir, port, second_log)
    try:
        wait_for_curl_line(again, second_log)
        assert f"sandbox API key: {secret}" in second_log.read_text()
    finally:
        assert stop_dev(again) == 0


def _socket_answers(path: Path) -> bool:
    import socket

    with socket.socket(socket.AF_UNIX) as probe:
        try:
            probe.connect(str(path))
        except OSError:
            return False
    return True
