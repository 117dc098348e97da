"""`moneyrail secrets`: make a key for MONEYRAIL_SECRET_KEYS, and re-seal every stored secret after a
rotation (put the new key first, restart the processes, run `rotate`, then drop the old key).

In db/, not kit/: it opens its own engine and units of work, and kit/ stays below db/."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Annotated, Any

import typer
from sqlalchemy import text

from moneyrail.config import get_settings
from moneyrail.db.engine import DatabaseNotConfigured, create_engine, create_sessionmaker
from moneyrail.db.uow import UnitOfWork
from moneyrail.kit import crypto

secrets_app = typer.Typer(
    help="Encryption keys of the secrets stored at rest (MONEYRAIL_SECRET_KEYS).", no_args_is_help=True
)

BATCH_SIZE = 500


@dataclass(frozen=True)
class SealedColumn:
    """A column whose values are sealed with the secret keys, and the key that names its rows."""

    table: str
    key_columns: tuple[str, ...]
    column: str
    binary: bool = False
    json_path: tuple[str, ...] = ()  # a JSONB column: the sealed string sits at this path inside it


SEALED_COLUMNS = (
    SealedColumn("webhook_endpoints", ("id",), "secret"),
    SealedColumn("webhook_endpoints", ("id",), "previous_secret"),
    SealedColumn("idempotency_records", ("installation_id", "livemode", "key"), "response_body", binary=True),
    SealedColumn("payment_intents", ("id",), "next_action", json_path=("redirect_to_url", "url")),
    SealedColumn("environment_settings", ("installation_id", "livemode"), "processor_key"),
    SealedColumn("environment_settings", ("installation_id", "livemode"), "processor_webhook_secret"),
    SealedColumn("environment_settings", ("installation_id", "livemode"), "processor_connect_webhook_secret"),
    SealedColumn("operators", ("id",), "totp_secret"),
)


def _resealed(sealed: SealedColumn, value: Any, box: Any) -> Any:
    """The column's new value, or None when there is nothing sealed in it."""
    if sealed.binary:
        return crypto.reseal(bytes(value), box)
    if not sealed.json_path:
        return crypto.reseal_text(value, box)
    document = json.loads(value) if isinstance(value, str) else value
    holder = document
    for step in sealed.json_path[:-1]:
        holder = holder.get(step) if isinstance(holder, dict) else None
    if not isinstance(holder, dict) or not isinstance(holder.get(sealed.json_path[-1]), str):
        return None
    holder[sealed.json_path[-1]] = crypto.reseal_text(holder[sealed.json_path[-1]], box)
    return json.dumps(document)


@secrets_app.command("generate-key")
def generate_key() -> None:
    """Print a new key (Fernet: 32 random bytes, url-safe base64) for MONEYRAIL_SECRET_KEYS."""
    typer.echo(crypto.generate_key())


async def _reseal_column(sealed: SealedColumn, box: Any) -> int:
    """Re-seal the column batch by batch, each batch its own transaction, in key order."""
    engine = create_engine(get_settings())
    keys = ", ".join(sealed.key_columns)
    done = 0
    after: tuple[Any, ...] | None = None
    try:
        sessionmaker = create_sessionmaker(engine)
        while True:
            async with UnitOfWork(sessionmaker) as uow:
                where = f"{sealed.column} IS NOT NULL"
                parameters: dict[str, Any] = {"limit": BATCH_SIZE}
                if after is not None:
                    where += f" AND ({keys}) > ({', '.join(f':k{i}' for i in range(len(after)))})"
                    parameters.update({f"k{i}": value for i, value in enumerate(after)})
                # table and column names come from SEALED_COLUMNS, a constant; values are bound
                select_sql = f"SELECT {keys}, {sealed.column} FROM {sealed.table} WHERE {where}"  # noqa: S608
                rows = (
                    await uow.session.execute(
                        text(f"{select_sql} ORDER BY {keys} LIMIT :limit FOR UPDATE"), parameters
                    )
                ).all()
                if not rows:
                    return done
                width = len(sealed.key_columns)
                match = " AND ".join(f"{column} = :k{i}" for i, column in enumerate(sealed.key_columns))
                new_value = "CAST(:value AS jsonb)" if sealed.json_path else ":value"
                update = f"UPDATE {sealed.table} SET {sealed.column} = {new_value} WHERE {match}"  # noqa: S608
                for row in rows:
                    resealed = _resealed(sealed, row[width], box)
                    if resealed is not None:
                        await uow.session.execute(
                            text(update), {"value": resealed, **{f"k{i}": row[i] for i in range(width)}}
                        )
                        done += 1
                await uow.commit()
                after = tuple(rows[-1][:width])
    finally:
        await engine.dispose()


@secrets_app.command("rotate")
def rotate(as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False) -> None:
    """Re-encrypt every stored secret with the first key of MONEYRAIL_SECRET_KEYS (and encrypt any
    left readable from before encryption). Safe to run again; the other keys may go afterwards."""
    try:
        box = crypto.secret_box()
        counts = {
            f"{sealed.table}.{sealed.column}": asyncio.run(_reseal_column(sealed, box))
            for sealed in SEALED_COLUMNS
        }
    except (crypto.SecretKeysMissing, DatabaseNotConfigured) as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(2) from error
    if as_json:
        typer.echo(json.dumps(counts, indent=2))
    else:
        typer.echo("\n".join(f"re-encrypted {count} value(s) of {name}" for name, count in counts.items()))
