#!/usr/bin/env python3
"""Bootstrap: keep the project's virtual environment in step with pyproject.toml, then run.

    python3 run.py dev     # the whole service on embedded PostgreSQL and Redis
    python3 run.py test    # the whole test suite (extra arguments go to pytest)

Needs only Python 3.11+. The environment lives in .venv/ and is rebuilt when pyproject.toml changes.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
STAMP = VENV / ".moneyrail-installed"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")


def _wanted_stamp() -> str:
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes())
    digest.update(sys.version.encode())
    return digest.hexdigest()


def ensure_venv() -> None:
    if sys.version_info < (3, 11):
        sys.exit("moneyrail needs Python 3.11 or newer")
    if not (BIN / "python").exists():
        print("creating .venv ...", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    if STAMP.exists() and STAMP.read_text() == _wanted_stamp():
        return
    print("installing moneyrail and its test tools into .venv ...", flush=True)
    pip = [str(BIN / "python"), "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.check_call([*pip, "install", "--upgrade", "pip"])
    subprocess.check_call([*pip, "install", "-e", f"{ROOT}[test]"])
    STAMP.write_text(_wanted_stamp())


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in {"dev", "test", "setup"}:
        sys.exit(__doc__)
    ensure_venv()
    command, rest = sys.argv[1], sys.argv[2:]
    os.chdir(ROOT)
    if command == "dev":
        os.execv(BIN / "moneyrail", [str(BIN / "moneyrail"), "dev", *rest])
    elif command == "test":
        os.execv(BIN / "python", [str(BIN / "python"), "-m", "pytest", *rest])


if __name__ == "__main__":
    main()
