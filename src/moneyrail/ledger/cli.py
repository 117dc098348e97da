"""`moneyrail ledger`: verify the ledger, seal pending entries now.

Also runnable alone: `python -m moneyrail.ledger.cli verify`. It opens its own engine from the
settings, like the other operator commands (it does not import moneyrail.cli, which registers it).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Annotated, TypeVar

import typer

from moneyrail.config import get_settings
from moneyrail.db.engine import DatabaseNotConfigured, create_engine, create_sessionmaker
from moneyrail.db.uow import UnitOfWork

from . import service

T = TypeVar("T")

ledger_app = typer.Typer(
    help="The double-entry ledger: verify it, seal pending entries.", no_args_is_help=True
)

JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]


def _run(work: Callable[[UnitOfWork], Awaitable[T]]) -> T:
    async def run() -> T:
        engine = create_engine(get_settings())
        try:
            return await work(UnitOfWork(create_sessionmaker(engine)))
        finally:
            await engine.dispose()

    try:
        return asyncio.run(run())
    except DatabaseNotConfigured as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(2) from error


async def _verify(uow: UnitOfWork) -> service.VerificationReport:
    async with uow:
        # one snapshot for every check, and a promise to write nothing
        await uow.session.connection(
            execution_options={"isolation_level": "REPEATABLE READ", "postgresql_readonly": True}
        )
        return await service.verify(uow.session)


@ledger_app.command()
def verify(as_json: JsonOption = False) -> None:
    """Check balance, postings, the hash chain, checkpoints and the immutability triggers.

    Exit code 0 when the ledger is intact, 1 on any problem.
    """
    report = _run(_verify)
    if as_json:
        typer.echo(json.dumps(report.as_dict(), indent=2))
    elif report.ok:
        typer.echo(f"ledger verified: {report.transactions} transactions, {report.blocks} blocks")
    else:
        for problem in report.problems:
            typer.echo(problem)
        typer.echo(f"ledger verification FAILED: {len(report.problems)} problem(s)", err=True)
    if not report.ok:
        raise typer.Exit(1)


async def _seal_all(uow: UnitOfWork, max_entries: int) -> tuple[int, int]:
    sealed = blocks = 0
    while True:
        async with uow:  # a block per transaction: sealing never holds the journal in one long one
            count = await service.seal_pending(uow.session, max_entries)
            await uow.commit()
        if count == 0:
            return sealed, blocks
        sealed, blocks = sealed + count, blocks + 1
        if count < max_entries:
            return sealed, blocks


@ledger_app.command()
def seal(
    max_entries: Annotated[
        int, typer.Option(min=1, help="Most entries per block.")
    ] = service.DEFAULT_BLOCK_SIZE,
    as_json: JsonOption = False,
) -> None:
    """Seal every settled journal transaction into blocks now (the scheduler also does it)."""
    sealed, blocks = _run(lambda uow: _seal_all(uow, max_entries))
    if as_json:
        typer.echo(json.dumps({"sealed": sealed, "blocks": blocks}))
    else:
        typer.echo(f"sealed {sealed} transactions into {blocks} blocks" if sealed else "nothing to seal")


if __name__ == "__main__":
    ledger_app()
