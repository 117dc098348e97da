"""The guides run: every shell block of docs/guides/*.md, in order, against a live `moneyrail dev`.

One `moneyrail dev` serves the module, as a reader runs it (web, worker and scheduler, here on the test
session's PostgreSQL and Redis, on free ports) in a folder of its own. Each guide then runs in one bash
shell from that folder, with the variables a reader has there: `MONEYRAIL_PORT` (which the guides' first
block reads, as `dev` was told to listen there), `.moneyrail/dev-key` (which `dev` wrote) and the
project's `moneyrail` command on the PATH. How blocks are found, run and checked: tests/guide_blocks.py.
A guide that drifts from the code (a route, a field, an answer) fails here.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from moneyrail.api.home import GUIDES as HOME_GUIDES
from tests.guide_blocks import (
    RUNNABLE,
    fenced_blocks,
    problems,
    run_guide,
    run_script,
    runnable_blocks,
    script_for,
)
from tests.harness import ROOT, Servers, free_port

GUIDES_DIR = ROOT / "docs" / "guides"
# The guides the service's front page (`GET /`) names, in the order a reader takes them: every guide in
# docs/guides/ is there (checked below).
GUIDES = tuple(Path(path).name for _title, path in HOME_GUIDES)
# Fence languages a guide may use: the runnable ones, and ones for reading only.
READ_ONLY = {"text", "ini", "python", "json", "yaml", "dockerfile"}
CURL_LINE = re.compile(r"^\s*curl .+$", re.MULTILINE)
GUIDE_SECONDS = 240


def reader_environment(port: int) -> dict[str, str]:
    """A shell as a reader's, beside `dev`: none of the servers' variables, the project's commands first."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DATABASE_URL", "REDIS_URL"} and not key.startswith("MONEYRAIL_")
    }
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["MONEYRAIL_PORT"] = str(port)
    return env


@dataclass
class DevStack:
    folder: Path
    port: int
    process: subprocess.Popen[bytes]
    screen: Path


@pytest.fixture(scope="module")
def dev(servers: Servers, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    if shutil.which("curl") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("curl is missing: .ci/run installs it under CI")
        pytest.skip("the guides' blocks use curl, which is not installed")
    folder = tmp_path_factory.mktemp("guides")
    screen = folder / "dev.screen"
    port = free_port()
    with screen.open("wb") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "moneyrail", "dev"],
            # the data folder a reader's `dev` uses, in the folder the guides run from (the suite's
            # processes otherwise share the session's)
            env=servers.environment(
                MONEYRAIL_PORT=str(port),
                MONEYRAIL_WORKER_METRICS_PORT=str(free_port()),
                MONEYRAIL_DATA_DIR=str(folder / ".moneyrail"),
            ),
            cwd=folder,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 120
        while CURL_LINE.search(screen.read_text(errors="replace")) is None:
            assert process.poll() is None, screen.read_text(errors="replace")
            assert time.monotonic() < deadline, screen.read_text(errors="replace")
            time.sleep(0.2)
        yield DevStack(folder, port, process, screen)
    finally:
        process.send_signal(signal.SIGINT)  # as Ctrl-C: dev stops its processes
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_every_guide_is_run_here() -> None:
    present = {path.name for path in GUIDES_DIR.glob("*.md")} - {"README.md"}
    assert present == set(GUIDES)


@pytest.mark.parametrize("guide", GUIDES)
def test_every_fence_says_whether_it_runs(guide: str) -> None:
    """An unlabelled or misspelt fence would be skipped silently; each names a language of either kind."""
    for line, language, _text in fenced_blocks((GUIDES_DIR / guide).read_text()):
        assert language in RUNNABLE | READ_ONLY, f"{guide}, line {line}: fence language {language!r}"


@pytest.mark.parametrize("guide", GUIDES)
def test_the_guide_runs(guide: str, dev: DevStack) -> None:
    path = GUIDES_DIR / guide
    blocks, outcome = run_guide(path, dev.folder, reader_environment(dev.port), timeout=GUIDE_SECONDS)
    assert blocks, f"{guide} has no shell block"
    found = problems(blocks, outcome, guide)
    if not outcome.finished:
        found.append(f"dev's screen:\n{dev.screen.read_text(errors='replace')[-2000:]}")
    assert not found, "\n\n".join(found)
    # every part of every block ran
    assert outcome.ran == [f"{block.number}.{index}" for block in blocks for index in range(len(block.parts))]


# --- the runner itself, on small guides with no server ----------------------------------------------


def outcome_of(markdown: str, tmp_path: Path) -> list[str]:
    blocks = runnable_blocks(textwrap.dedent(markdown))
    outcome = run_script(script_for(blocks), tmp_path, dict(os.environ), timeout=30)
    return problems(blocks, outcome, "example.md")


def test_blocks_share_one_shell_in_order_and_text_blocks_do_not_run(tmp_path: Path) -> None:
    markdown = """
        ```sh
        GREETING=hello
        ```

        ```text
        exit 1
        ```

        ```bash
        echo "$GREETING, world"
        # => hello, world
        ```

        ```console
        $ echo '{"status":"paid"}'
        {"status": "paid"}
        ```
        """
    assert outcome_of(markdown, tmp_path) == []


def test_an_output_that_differs_from_its_assertion_fails(tmp_path: Path) -> None:
    found = outcome_of(
        """
        ```sh
        echo '{"status": "pending"}'
        # => "status": "paid"
        ```
        """,
        tmp_path,
    )
    assert len(found) == 1 and "should print" in found[0] and "line 2" in found[0]


def test_a_failing_command_stops_the_guide_and_names_its_block(tmp_path: Path) -> None:
    found = outcome_of(
        """
        ```sh
        echo first
        ```

        ```sh
        false
        echo never
        ```

        ```sh
        echo not reached
        ```
        """,
        tmp_path,
    )
    assert any("line 6 exited with 1" in problem for problem in found), found


def test_an_error_answer_fails_unless_an_assertion_expects_it(tmp_path: Path) -> None:
    unexpected = outcome_of(
        """
        ```sh
        echo '{"error": {"type": "invalid_request_error", "code": "parameter_missing"}}'
        ```
        """,
        tmp_path,
    )
    assert len(unexpected) == 1 and "answered an error" in unexpected[0]
    expected = outcome_of(
        """
        ```sh
        echo '{"error": {"type": "invalid_request_error", "code": "parameter_missing"}}'
        # => "error": {"type": "invalid_request_error"
        ```
        """,
        tmp_path,
    )
    assert expected == []
