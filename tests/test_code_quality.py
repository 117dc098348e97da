"""ruff and mypy --strict stay clean (the service, and the Python client in clients/python), and the
import contracts of pyproject.toml hold: part of the suite, so the README's test command checks them too."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.harness import ROOT


def _run(*command: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *command], cwd=cwd, capture_output=True, text=True, timeout=600
    )


def test_ruff_finds_nothing():
    result = _run("ruff", "check", "src", "workers", "tests", "bench", "clients")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_is_applied():
    result = _run("ruff", "format", "--check", "src", "workers", "tests", "bench", "clients")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_finds_nothing_in_src_and_workers():
    result = _run("mypy")
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_import_contracts_hold():
    """The layers of docs/ARCHITECTURE.md, no imports in a circle, nothing importing workers/
    ([tool.importlinter] in pyproject.toml); function-level imports count as any other."""
    # import-linter has no `python -m` entry: its console script's function, in this interpreter
    result = subprocess.run(
        [sys.executable, "-c", "from importlinter.cli import lint_imports_command; lint_imports_command()"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_finds_nothing_in_the_python_client():
    """With the client's own settings (clients/python/pyproject.toml), as a service that installs it
    would check its calls."""
    result = _run("mypy", cwd=ROOT / "clients" / "python")
    assert result.returncode == 0, result.stdout + result.stderr


LINES_IN_A_FILE = 700


def test_no_python_file_over_700_lines_outside_migrations():
    """A file fits in a head: none in src/ or workers/ over 700 lines (migrations are written once and
    left as they are). A file that grows past it is split along its seams into a package or siblings."""
    too_long = {
        str(path.relative_to(ROOT)): lines
        for top in ("src", "workers")
        for path in sorted((ROOT / top).rglob("*.py"))
        if "migrations" not in path.relative_to(ROOT).parts
        and (lines := len(path.read_text(encoding="utf-8").splitlines())) > LINES_IN_A_FILE
    }
    assert not too_long, f"over {LINES_IN_A_FILE} lines: {too_long}"
