"""The `moneyrail` command (and `python -m moneyrail`).

A process role (processes.py) starts without importing the operator commands (cli.py): those load every
domain's models and services, seconds of CPU that a worker or scheduler, handing over to dramatiq or
APScheduler at once, would pay for nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from moneyrail.processes import PROCESS_COMMANDS, run_process


def main(argv: Sequence[str] | None = None) -> None:
    arguments = list(argv) if argv is not None else sys.argv[1:]
    command = next((argument for argument in arguments if not argument.startswith("-")), None)
    if command in PROCESS_COMMANDS:
        run_process(arguments)
        return
    from moneyrail.cli import main as operator_command

    operator_command(arguments)
