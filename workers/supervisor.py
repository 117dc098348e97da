"""What `moneyrail worker` runs: dramatiq's own command line, whose main process forks the worker
processes and passes their output on, with the JSON logging of every moneyrail process set up first.

dramatiq would give its main process and its workers a plain-text `logging.basicConfig` of its own
(`--skip-logging` turns that off); the workers then log through the handler `workers.main` sets up.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import dramatiq.cli

from moneyrail.config import get_settings
from moneyrail.logging import configure_logging


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(argv) if argv is not None else sys.argv[1:]
    settings = get_settings()
    configure_logging(settings.log_level, json=settings.log_json, stream=sys.stderr)
    # dramatiq restarts itself on SIGHUP by exec'ing sys.argv: this command line, run again
    sys.argv = [sys.executable, "-m", "workers.supervisor", *arguments]
    parser = dramatiq.cli.make_argument_parser()  # type: ignore[no-untyped-call]
    code: int = dramatiq.cli.main(parser.parse_args([*arguments, "--skip-logging"]))  # type: ignore[no-untyped-call]
    return code


if __name__ == "__main__":
    sys.exit(main())
