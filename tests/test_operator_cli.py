"""The operator CLI for people: help everywhere, ISO times for people and Unix seconds for scripts, results
on stdout and never a log line, and one clear line (never a traceback) when the servers are out of reach."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest
import typer

from moneyrail import cli
from tests.harness import ROOT, free_port
from tests.installations.test_cli import moneyrail

ISO_UTC = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\b")


def run_cli(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DATABASE_URL", "REDIS_URL"} and not key.startswith("MONEYRAIL_")
    }
    environment.update(env)
    return subprocess.run(
        [sys.executable, "-m", "moneyrail", *args],
        env=environment,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


def all_commands() -> list[tuple[str, click.Command]]:
    found: list[tuple[str, click.Command]] = []

    def walk(prefix: str, command: click.Command) -> None:
        found.append((prefix, command))
        for name, child in getattr(command, "commands", {}).items():
            walk(f"{prefix} {name}".strip(), child)

    walk("", typer.main.get_command(cli.app))
    return found


@pytest.mark.parametrize(("path", "command"), all_commands(), ids=lambda value: str(value) or "moneyrail")
def test_every_command_and_parameter_has_help(path: str, command: click.Command) -> None:
    assert (command.help or "").strip(), f"`moneyrail {path}` has no help text"
    for parameter in command.params:
        text = getattr(parameter, "help", None)
        assert (text or "").strip(), f"`moneyrail {path}`: {parameter.name} has no help text"


def test_without_a_database_or_a_running_dev_the_cli_says_what_to_do_in_one_line(tmp_path) -> None:
    for command in (("keys", "list", "-i", "inst_x"), ("dead-letters", "list"), ("ledger", "verify")):
        answered = run_cli(*command, cwd=tmp_path)
        assert answered.returncode == 2
        assert answered.stderr.count("\n") == 1, answered.stderr
        assert "moneyrail dev" in answered.stderr and "DATABASE_URL" in answered.stderr
        assert answered.stdout == ""


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://postgres@/moneyrail?host=/nonexistent/socket/folder",  # a wrong socket path
        "postgresql://postgres:s3cret@127.0.0.1:{port}/moneyrail",  # nothing listens there
    ],
)
def test_an_unreachable_database_is_one_line_without_a_traceback_or_a_password(tmp_path, url: str) -> None:
    for command in (("keys", "list", "-i", "inst_x"), ("dead-letters", "list"), ("ledger", "verify")):
        answered = run_cli(*command, cwd=tmp_path, DATABASE_URL=url.format(port=free_port()))
        assert answered.returncode == 2, answered.stderr
        assert "Traceback" not in answered.stderr
        assert answered.stderr.count("\n") == 1, answered.stderr
        assert answered.stderr.startswith("error: cannot connect to the database")
        assert "s3cret" not in answered.stderr


def test_human_output_shows_iso_times_and_json_unix_seconds(servers) -> None:
    human = moneyrail(servers, "installations", "create", "--name", "Clockwork")
    assert human.returncode == 0, human.stderr
    assert ISO_UTC.search(human.stdout), human.stdout
    as_json = json.loads(moneyrail(servers, "installations", "create", "--name", "Clock", "--json").stdout)
    assert isinstance(as_json["created"], int)
    listed = moneyrail(servers, "keys", "list", "-i", as_json["id"])
    assert listed.stdout.strip() == "no keys"


def test_logs_never_reach_the_cli_output(servers) -> None:
    env = {**servers.environment(MONEYRAIL_LOG_LEVEL="DEBUG")}
    answered = subprocess.run(
        [sys.executable, "-m", "moneyrail", "installations", "create", "--name", "Quiet", "--json"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert answered.returncode == 0, answered.stderr
    assert answered.stderr == ""
    assert json.loads(answered.stdout)["name"] == "Quiet"  # stdout is the result alone


def test_run_py_passes_moneyrail_commands_to_the_cli() -> None:
    spec = importlib.util.spec_from_file_location("run", ROOT / "run.py")
    assert spec is not None and spec.loader is not None
    run_py = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run_py)
    if run_py._installed_extras() is None:
        pytest.skip("run.py would install .venv first; this checks the pass-through only")
    answered = subprocess.run(
        [sys.executable, str(ROOT / "run.py"), "moneyrail", "dead-letters", "retry", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert answered.returncode == 0, answered.stderr
    assert "--dry-run" in answered.stdout
