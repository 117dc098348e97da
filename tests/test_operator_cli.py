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
from moneyrail.clihelpers import DevInstance
from moneyrail.engine.service import create_operation
from moneyrail.kit.clock import utcnow
from tests.harness import ROOT, AsyncBridge, TenantKeys, free_port
from tests.installations.test_cli import moneyrail

ISO_UTC = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\b")
# what people read: an ISO 8601 time in UTC and its age
ISO_UTC_WITH_AGE = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \((just now|\d+ (s|min|h|days?) ago)\)")


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


def test_human_output_reads_like_a_person_wrote_it(servers) -> None:
    installation = json.loads(
        moneyrail(servers, "installations", "create", "--name", "Prose", "--json").stdout
    )
    listed = moneyrail(servers, "installations", "list")
    line = next(line for line in listed.stdout.splitlines() if installation["id"] in line)
    assert ISO_UTC_WITH_AGE.search(line), line

    issued = moneyrail(
        servers,
        "keys",
        "create",
        "-i",
        installation["id"],
        "--scope",
        "customers:write",
        "--scope",
        "account:read",
    )
    assert issued.returncode == 0, issued.stderr
    assert "with scopes account:read, customers:write" in issued.stdout
    keys = moneyrail(servers, "keys", "list", "-i", installation["id"]).stdout
    assert "account:read, customers:write" in keys and ISO_UTC_WITH_AGE.search(keys), keys

    shown = moneyrail(
        servers,
        "settings",
        "set",
        "-i",
        installation["id"],
        "--checkout",
        "--return-url",
        "https://shop.example/ok",
        "--return-url",
        "https://shop.example/cancel",
    )
    assert shown.returncode == 0, shown.stderr
    lines = dict(re.split(r":\s+", line, maxsplit=1) for line in shown.stdout.splitlines())
    assert lines["checkout enabled"] == "yes" and lines["recurring enabled"] == "no"
    assert lines["return URLs"] == "https://shop.example/ok, https://shop.example/cancel"
    assert lines["OAuth redirect URIs"] == "none"
    assert lines["rate limit"].startswith("the service-wide default")
    assert lines["payout bank account"] == "none"
    for raw in ("True", "False", "None", "[", "]"):
        assert raw not in shown.stdout, shown.stdout
    # scripts keep the machine-readable form
    as_json = json.loads(moneyrail(servers, "settings", "show", "-i", installation["id"], "--json").stdout)
    assert as_json["checkout_enabled"] is True and as_json["oauth_redirect_uris"] == []
    assert as_json["rate_limit_per_second"] is None


def dead_letter_made_by_hand(bridge: AsyncBridge, tenant: TenantKeys) -> str:
    """A dead letter of a type no worker runs, for an operator to decide on."""

    async def work(session) -> str:
        operation = await create_operation(
            session, tenant.tenant, operation_type="operator_record_check", actor_name="nobody.runs_this"
        )
        operation.status, operation.dead_lettered_at = "dead_letter", utcnow()
        operation.last_error = "made by hand"
        return operation.id

    operation_id: str = bridge.in_unit_of_work(work)
    return operation_id


def test_an_operator_action_is_recorded_in_the_audit_log_and_in_no_file(
    servers, bridge, tenant, tmp_path
) -> None:
    # from a folder where `moneyrail dev` runs (this test's process stands for it) on a database of its
    # own: the command acts on the test database, and writes nothing anywhere on disk
    folder, home = tmp_path / "project", tmp_path / "home"
    home.mkdir()
    (folder / ".moneyrail").mkdir(parents=True)
    other_database = "postgresql://postgres@127.0.0.1:1/moneyrail_dev"
    DevInstance(os.getpid(), other_database, servers.redis_url, "http://127.0.0.1:1").write(
        folder / ".moneyrail"
    )
    operation_id = dead_letter_made_by_hand(bridge, tenant)
    answered = run_cli(
        "dead-letters",
        "discard",
        operation_id,
        "--reason",
        "checked by phone",
        "--operator",
        "ops@example.com",
        cwd=folder,
        HOME=str(home),
        DATABASE_URL=servers.database_url,
        MONEYRAIL_SECRET_KEYS=servers.secret_keys,
    )
    assert answered.returncode == 0, answered.stderr
    assert answered.stderr == ""  # results on stdout, logs never on the screen
    assert sorted(path.name for path in folder.rglob("*") if path.is_file()) == ["dev-instance.json"]
    assert list(home.iterdir()) == []

    listed = run_cli(
        "audit", "list", "--operation", operation_id, "--json", cwd=folder, DATABASE_URL=servers.database_url
    )
    assert listed.returncode == 0, listed.stderr
    (entry,) = json.loads(listed.stdout)
    assert (entry["actor"], entry["via"], entry["action"], entry["reason"], entry["operations"]) == (
        "ops@example.com",
        "cli",
        "dead_letter.discard",
        "checked by phone",
        [operation_id],
    )
    human = run_cli(
        "audit", "list", "--operation", operation_id, cwd=folder, DATABASE_URL=servers.database_url
    )
    assert ISO_UTC_WITH_AGE.search(human.stdout), human.stdout
    assert f"ops@example.com (cli)  dead_letter.discard 1 operation: {operation_id}" in human.stdout
    assert 'because "checked by phone"' in human.stdout


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


def test_run_py_passes_moneyrail_commands_to_the_cli(tmp_path) -> None:
    spec = importlib.util.spec_from_file_location("run", ROOT / "run.py")
    assert spec is not None and spec.loader is not None
    run_py = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run_py)
    if run_py._installed_extras() is None:
        pytest.skip("run.py would install .venv first; this checks the pass-through only")
    answered = subprocess.run(
        [sys.executable, str(ROOT / "run.py"), "moneyrail", "dead-letters", "retry", "--help"],
        env={**os.environ, "MONEYRAIL_DATA_DIR": str(tmp_path)},  # never a running dev of this folder
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert answered.returncode == 0, answered.stderr
    assert "--dry-run" in answered.stdout
