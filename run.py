#!/usr/bin/env python3
"""Bootstrap: keep the project's virtual environment in step with pyproject.toml, then run.

    python3 run.py dev                 # the whole service on embedded PostgreSQL and Redis
    python3 run.py test                # the whole test suite, in parallel (extra arguments go to pytest)
    python3 run.py fuzz                # the long schemathesis fuzz (the suite runs a short one)
    python3 run.py moneyrail keys ...  # the operator CLI (beside a running `dev`: no variables needed)
    python3 run.py setup               # the environment for development: dev and test extras

Needs only Python 3.11+. The environment lives in .venv/ and is rebuilt when pyproject.toml changes.
Each command installs only what it uses: `dev` the embedded servers (extra `dev`), `test` those and
the test tools (extras `dev` and `test`), `moneyrail` the service alone.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
STAMP = VENV / ".moneyrail-installed"
# The Python client (a distribution of its own) comes with the development environment: the guides show it
# beside curl, and the suite tests it against the server. Editable, so both use the client in this checkout.
CLIENT = ROOT / "clients" / "python"
CLIENT_EXTRA = "dev"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")

# The extras each command needs (pyproject.toml [project.optional-dependencies]).
EXTRAS = {
    "dev": {"dev"},
    "test": {"dev", "test"},
    "fuzz": {"dev", "test"},
    "setup": {"dev", "test"},
    "moneyrail": set(),
}
# The suite's own processes (web, workers, PostgreSQL) wait on each other much of the time, so more
# pytest workers than cores keep the cores busy; each worker has its own database, Redis database,
# processes and ports (tests/harness.py).
PYTEST_WORKERS_PER_CORE = 2
FUZZ_CASES_PER_OPERATION = "40"


def _project_digest() -> str:
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes())
    digest.update((CLIENT / "pyproject.toml").read_bytes())
    digest.update(sys.version.encode())
    return digest.hexdigest()


def _installed_extras() -> set[str] | None:
    """The extras installed for the current pyproject.toml, or None when it must be installed again."""
    try:
        stamp = json.loads(STAMP.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(stamp, dict) or stamp.get("digest") != _project_digest():
        return None
    return set(stamp.get("extras", []))


def ensure_venv(extras: set[str]) -> None:
    if sys.version_info < (3, 11):
        sys.exit("moneyrail needs Python 3.11 or newer")
    if not (BIN / "python").exists():
        print("creating .venv ...", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    installed = _installed_extras()
    if installed is not None and extras <= installed:
        return
    # Keep what an earlier command installed: `test` after `dev` adds the test tools, and `dev` after
    # `test` needs nothing new.
    wanted = extras | (installed or set())
    label = f"[{','.join(sorted(wanted))}]" if wanted else ""
    log = VENV / "install.log"
    print(f"installing moneyrail{label} into .venv (pip's output: {log.relative_to(ROOT)}) ...", flush=True)
    pip = [str(BIN / "python"), "-m", "pip", "--disable-pip-version-check", "-q"]
    steps = [["install", "--upgrade", "pip"], ["install", "-e", f"{ROOT}{label}"]]
    if CLIENT_EXTRA in wanted:
        steps.append(["install", "-e", str(CLIENT)])
    with log.open("w") as output:  # pip's warnings and progress stay off the screen unless it fails
        for step in steps:
            output.flush()
            if subprocess.call([*pip, *step], stdout=output, stderr=subprocess.STDOUT) != 0:
                output.flush()
                sys.exit(f"pip {' '.join(step)} failed; the end of {log}:\n" + _tail(log))
    STAMP.write_text(json.dumps({"digest": _project_digest(), "extras": sorted(wanted)}))


def _tail(path: Path, lines: int = 20) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def _names_its_workers(arguments: list[str]) -> bool:
    """`-n N`, `--numprocesses`, or `-p no:xdist` given by the caller: theirs, not ours."""
    return any(a.startswith(("-n", "--numprocesses")) or a == "no:xdist" for a in arguments)


def _pytest_workers() -> int:
    return PYTEST_WORKERS_PER_CORE * (os.cpu_count() or 1)


def _run_suite(command: list[str], started: float) -> int:
    """Run pytest as a child and print the whole command's time (the environment's set-up included)."""
    suite = subprocess.Popen(command)
    while True:
        try:
            code = suite.wait()
            break
        except KeyboardInterrupt:  # Ctrl-C reached pytest too (one process group): let it report and end
            continue
    minutes, seconds = divmod(time.monotonic() - started, 60)
    print(f"run.py test: {int(minutes)}:{seconds:04.1f} in all (exit {code})", flush=True)
    return code


def main() -> None:
    started = time.monotonic()
    if len(sys.argv) < 2 or sys.argv[1] not in EXTRAS:
        sys.exit(__doc__)
    command, rest = sys.argv[1], sys.argv[2:]
    ensure_venv(EXTRAS[command])
    os.chdir(ROOT)
    if command == "dev":
        os.execv(BIN / "moneyrail", [str(BIN / "moneyrail"), "dev", *rest])
    elif command == "test":
        # Whole files to a worker, in collection order: tests/conftest.py puts the longest files first, and
        # xdist's default reorder (files with the most tests first) would start them last, alone at the end
        parallel = (
            []
            if _names_its_workers(rest)
            else ["-n", str(_pytest_workers()), "--dist", "loadfile", "--no-loadscope-reorder"]
        )
        sys.exit(_run_suite([str(BIN / "python"), "-m", "pytest", *parallel, *rest], started))
    elif command == "fuzz":
        os.environ["MONEYRAIL_FUZZ_CASES_PER_OPERATION"] = FUZZ_CASES_PER_OPERATION
        os.environ["MONEYRAIL_FUZZ_TIMEOUT_SECONDS"] = "900"
        runs = sorted(
            str(path.relative_to(ROOT)) for path in ROOT.glob("tests/api/test_schemathesis_fuzz*.py")
        )
        fuzz = [str(BIN / "python"), "-m", "pytest", "-n", str(len(runs)), "--dist", "loadfile", *runs]
        os.execv(BIN / "python", [*fuzz, *rest])
    elif command == "moneyrail":
        os.execv(BIN / "moneyrail", [str(BIN / "moneyrail"), *rest])


if __name__ == "__main__":
    main()
