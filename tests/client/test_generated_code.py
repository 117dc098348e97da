"""The client's generated modules stay in step: its models with the running service's /openapi.json, and
the sync client with the async one it is made from (clients/python/generate.py)."""

from __future__ import annotations

import subprocess
import sys

from tests.harness import ROOT

GENERATE = ROOT / "clients" / "python" / "generate.py"


def test_the_committed_models_are_what_the_running_service_generates(web) -> None:
    """A route or schema change that is not regenerated fails here with the diff and the command to run."""
    result = subprocess.run(
        [sys.executable, str(GENERATE), "--check", "--url", web.base_url],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
