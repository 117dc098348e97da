"""Every `moneyrail <command>` that the deployment files name is a command of the real CLI.

The Procfile and the files under deploy/ (Dockerfile, compose file, Kubernetes manifests, systemd
units, README) start processes by naming a CLI subcommand; a renamed or mistyped one would only show
at deploy time. These tests read the files as text (PyYAML is not a dependency) and find invocations
in the three spellings the files use:

    moneyrail web                  shell form: Procfile, compose `command:`, `ExecStart=`, README
    ["moneyrail", "web"]           exec form: Dockerfile `CMD`, Kubernetes `command:`
    - moneyrail                    YAML block list
    - web

Convention for these files: `moneyrail` followed by a word names a command, in comments and prose too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
import typer

from moneyrail import cli

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
PROCFILE = ROOT / "Procfile"

# The processes and the command each one runs (Procfile process type -> CLI command).
PROCESS_COMMANDS = {"web": "web", "worker": "worker", "scheduler": "scheduler", "release": "migrate"}
REQUIRED_COMMANDS = frozenset(PROCESS_COMMANDS.values())

_INVOCATION = re.compile(
    r"""
      (?<![\w.-])moneyrail[ \t]+(?P<shell>[A-Za-z][\w-]*)
    | ["']moneyrail["'][ \t]*,[ \t]*["'](?P<exec>[A-Za-z][\w-]*)
    | ^[ \t]*-[ \t]+["']?moneyrail["']?[ \t]*\n[ \t]*-[ \t]+["']?(?P<block>[A-Za-z][\w-]*)
    """,
    re.VERBOSE | re.MULTILINE,
)
_COMMENT = re.compile(r"(?:^|[ \t])#.*$", re.MULTILINE)


@dataclass(frozen=True)
class Invocation:
    path: str
    line: int
    command: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: moneyrail {self.command}"


def find_invocations(text: str, path: str) -> list[Invocation]:
    found = []
    for match in _INVOCATION.finditer(text):
        group = next(name for name in ("shell", "exec", "block") if match.group(name) is not None)
        line = text.count("\n", 0, match.start(group)) + 1
        found.append(Invocation(path, line, match.group(group)))
    return found


def without_comments(text: str) -> str:
    """Drop `#` comments (whole lines and trailing ones), keeping the line count."""
    return _COMMENT.sub("", text)


def commands_in(path: Path, *, comments: bool = True) -> set[str]:
    text = path.read_text(encoding="utf-8")
    return {
        invocation.command
        for invocation in find_invocations(text if comments else without_comments(text), relative(path))
    }


def relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def deployment_files() -> list[Path]:
    files = [PROCFILE, *sorted(path for path in DEPLOY.rglob("*") if path.is_file())]
    return [path for path in files if path.exists()]


@cache
def all_invocations() -> tuple[Invocation, ...]:
    found: list[Invocation] = []
    for path in deployment_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:  # a binary file starts no process
            continue
        found.extend(find_invocations(text, relative(path)))
    return tuple(found)


@cache
def cli_command_names() -> frozenset[str]:
    # A TyperGroup; recent typer vendors its own click, so ask for the mapping, not a click.Group.
    commands = getattr(typer.main.get_command(cli.app), "commands", None)
    assert isinstance(commands, dict), "the moneyrail CLI should be a group of subcommands"
    return frozenset(commands)


def read_procfile() -> dict[str, str]:
    processes: dict[str, str] = {}
    for number, raw in enumerate(PROCFILE.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, separator, command = line.partition(":")
        assert separator and re.fullmatch(r"[A-Za-z0-9_-]+", name), f"Procfile:{number}: not `name: command`"
        assert name not in processes, f"Procfile:{number}: process type {name!r} is defined twice"
        processes[name] = " ".join(command.split())
    return processes


def compose_service_commands(text: str) -> dict[str, set[str]]:
    """The commands named by each service of a compose file, read by indentation."""
    services: dict[str, set[str]] = {}
    lines = without_comments(text).splitlines()
    start = next((i for i, line in enumerate(lines) if re.fullmatch(r"services:\s*", line)), None)
    assert start is not None, "compose file without a top-level `services:`"
    indent: str | None = None
    current: str | None = None
    body: list[str] = []

    def close() -> None:
        if current is not None:
            services[current] = {i.command for i in find_invocations("\n".join(body), "compose")}

    for line in lines[start + 1 :]:
        if not line.strip():
            continue
        if not line[0].isspace():  # the next top-level key ends `services:`
            break
        if indent is None:
            indent = line[: len(line) - len(line.lstrip())]
        key = re.fullmatch(re.escape(indent) + r"([A-Za-z0-9][\w.-]*):\s*", line)
        if key:
            close()
            current, body = key.group(1), []
        else:
            body.append(line)
    close()
    return services


def test_deploy_files_name_the_web_worker_scheduler_and_migrate_commands() -> None:
    found = {invocation.command for invocation in all_invocations()}
    assert found, (
        "no `moneyrail <command>` found in the Procfile or deploy/: the other tests would be vacuous"
    )
    missing = REQUIRED_COMMANDS - found
    assert not missing, f"deploy files never run: {sorted(missing)}"


def test_every_command_named_in_deploy_files_exists_in_the_cli() -> None:
    known = cli_command_names()
    assert known >= REQUIRED_COMMANDS, f"the CLI lacks {sorted(REQUIRED_COMMANDS - known)}"
    unknown = [str(invocation) for invocation in all_invocations() if invocation.command not in known]
    assert not unknown, (
        "commands the CLI does not have (known: " + ", ".join(sorted(known)) + "):\n" + "\n".join(unknown)
    )


def test_procfile_maps_each_process_to_its_command() -> None:
    processes = read_procfile()
    for process, command in PROCESS_COMMANDS.items():
        assert processes.get(process) == f"moneyrail {command}", f"Procfile `{process}:` should run it"


@pytest.mark.parametrize(
    ("path", "command"),
    [
        ("deploy/Dockerfile", "web"),
        ("deploy/kubernetes/migrate-job.yaml", "migrate"),
        ("deploy/kubernetes/web.yaml", "web"),
        ("deploy/kubernetes/worker.yaml", "worker"),
        ("deploy/kubernetes/scheduler.yaml", "scheduler"),
        ("deploy/systemd/moneyrail-migrate.service", "migrate"),
        ("deploy/systemd/moneyrail-web.service", "web"),
        ("deploy/systemd/moneyrail-worker.service", "worker"),
        ("deploy/systemd/moneyrail-scheduler.service", "scheduler"),
    ],
)
def test_each_process_file_runs_only_the_command_it_is_named_for(path: str, command: str) -> None:
    assert commands_in(ROOT / path, comments=False) == {command}


def test_each_compose_service_runs_the_command_it_is_named_for() -> None:
    services = compose_service_commands((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))
    for command in ("migrate", "web", "worker", "scheduler"):
        assert services.get(command) == {command}, f"compose service {command!r} should run it"
