"""What every operator command shares: one unit of work on its own engine, errors as messages."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

import typer

from moneyrail.config import get_settings
from moneyrail.db.engine import DatabaseNotConfigured, create_engine, create_sessionmaker
from moneyrail.db.uow import UnitOfWork
from moneyrail.errors import MoneyrailError

T = TypeVar("T")


def in_unit_of_work(work: Callable[[UnitOfWork], Awaitable[T]]) -> T:
    """Run `work` in one committed unit of work; a refusal exits 1 with its message, no traceback."""

    async def run() -> T:
        engine = create_engine(get_settings())
        try:
            async with UnitOfWork(create_sessionmaker(engine)) as uow:
                result = await work(uow)
                await uow.commit()
                return result
        finally:
            await engine.dispose()

    try:
        return asyncio.run(run())
    except MoneyrailError as error:
        typer.echo(f"error: {error.message}", err=True)
        raise typer.Exit(1) from error
    except DatabaseNotConfigured as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(2) from error
