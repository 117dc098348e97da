"""The process roles of the Procfile and `dev`: web, worker, scheduler, migrate.

Kept apart from the operator commands (cli.py), whose imports load every domain's models and services:
the entry point (entry.py) starts a process role from here alone, so a worker or scheduler, which hands
over to dramatiq or APScheduler at once (a new program that loads what it needs), does not pay seconds of
CPU for commands it never runs. cli.py lists these commands too, for `moneyrail --help`.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer

from moneyrail.config import get_settings
from moneyrail.logging import configure_logging

processes_app = typer.Typer(help="moneyrail's processes.", no_args_is_help=True)


@processes_app.command()
def web(
    host: Annotated[str | None, typer.Option(help="Bind address (MONEYRAIL_HOST).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (MONEYRAIL_PORT).")] = None,
    workers: Annotated[int, typer.Option(help="uvicorn worker processes.")] = 1,
) -> None:
    """The intake API and hosted pages (uvicorn)."""
    import uvicorn

    settings = get_settings()
    uvicorn.run(
        "moneyrail.app:create_app",
        factory=True,
        host=host or settings.host,
        port=port or settings.port,
        workers=workers,
        # named, not "auto": a missing uvloop or httptools fails the start instead of silently running
        # on asyncio's loop and h11, each much slower
        loop="uvloop",
        http="httptools",
        lifespan="on",  # the app's start-up (engine, secrets check) must run, or the process must not
        access_log=False,  # our own request log omits credentials that a raw path may carry
        log_level=settings.log_level.lower(),
        log_config=None,  # uvicorn's loggers keep to the JSON handler configure_logging set up
        # the X-Forwarded-* headers believed only from the proxies named (MONEYRAIL_FORWARDED_ALLOW_IPS);
        # unset, uvicorn's ProxyHeadersMiddleware is not run at all
        proxy_headers=settings.forwarded_allow_ips is not None,
        forwarded_allow_ips=settings.forwarded_allow_ips,
        server_header=False,  # no "server: uvicorn" on every answer (nothing a client needs to know)
    )


@processes_app.command()
def worker(
    processes: Annotated[
        int | None, typer.Option(help="Worker processes (MONEYRAIL_WORKER_PROCESSES).")
    ] = None,
    threads: Annotated[
        int | None, typer.Option(help="Threads per process (MONEYRAIL_WORKER_THREADS).")
    ] = None,
) -> None:
    """dramatiq workers for every queue."""
    settings = get_settings()
    # dramatiq's metrics exposition runs in a process forked from dramatiq's main process, which reads
    # these before any of our code runs; a folder per port keeps two fleets on one machine apart.
    metrics_dir = Path(tempfile.gettempdir()) / f"moneyrail-worker-metrics-{settings.worker_metrics_port}"
    shutil.rmtree(metrics_dir, ignore_errors=True)  # counters restart with the fleet
    metrics_dir.mkdir(parents=True)
    os.environ["dramatiq_prom_host"] = settings.worker_metrics_host  # noqa: SIM112 - dramatiq's name
    os.environ["dramatiq_prom_port"] = str(settings.worker_metrics_port)  # noqa: SIM112
    os.environ["dramatiq_prom_db"] = str(metrics_dir)  # noqa: SIM112
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(metrics_dir)
    arguments = [
        sys.executable,
        "-m",
        "workers.supervisor",  # dramatiq's command line, its logs in JSON
        "workers.main",
        "--processes",
        str(processes or settings.worker_processes),
        "--threads",
        str(threads or settings.worker_threads),
    ]
    os.execv(sys.executable, arguments)


@processes_app.command()
def scheduler() -> None:
    """The periodic jobs (APScheduler)."""
    os.execv(sys.executable, [sys.executable, "-m", "workers.scheduler"])


@processes_app.command()
def migrate() -> None:
    """Apply the database migrations (safe to run from several processes at once)."""
    from moneyrail.db.migrate import upgrade

    settings = get_settings()
    if not settings.database_url:
        typer.echo("error: DATABASE_URL is not set", err=True)
        raise typer.Exit(2)
    upgrade(settings.database_url)
    typer.echo("database is at the latest migration")


@processes_app.command()
def dev() -> None:
    """Web, worker and scheduler in one command; embedded PostgreSQL/Redis when the URLs are unset."""
    from moneyrail.devserver import run_dev

    raise typer.Exit(run_dev(get_settings()))


PROCESS_COMMANDS = frozenset({"web", "worker", "scheduler", "dev", "migrate"})
PROCESS_FUNCTIONS = (web, worker, scheduler, migrate, dev)


def run_process(arguments: Sequence[str]) -> None:
    """A process role: its logs as JSON lines on stderr."""
    settings = get_settings()
    configure_logging(settings.log_level, json=settings.log_json, stream=sys.stderr)
    processes_app(args=list(arguments))
