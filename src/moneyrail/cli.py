"""`moneyrail`: the processes of the Procfile, `dev`, migrations and the operator commands."""

from __future__ import annotations

import asyncio
import io
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, TextIO, TypeVar, cast

import asyncpg
import typer
from redis.exceptions import RedisError
from sqlalchemy.exc import InterfaceError, OperationalError, SQLAlchemyError

from moneyrail.audit.cli import audit_app
from moneyrail.clihelpers import (
    emit,
    human_time,
    human_value,
    in_unit_of_work,
    labelled,
    no_database_message,
    safe_url,
    use_running_dev_instance,
)
from moneyrail.config import Settings, get_settings
from moneyrail.console.cli import operators_app
from moneyrail.db.engine import DatabaseNotConfigured
from moneyrail.db.secrets_cli import secrets_app
from moneyrail.devkit.cli import register as register_devkit
from moneyrail.engine.cli import DECISIONS, dead_letters_app
from moneyrail.errors import MoneyrailError
from moneyrail.installations import processors
from moneyrail.installations import service as installations
from moneyrail.kit.clock import to_unix
from moneyrail.kit.tenant import Tenant
from moneyrail.ledger.cli import ledger_app
from moneyrail.logging import configure_logging
from moneyrail.models import ApiKey, EnvironmentSettings, Installation
from moneyrail.processes import PROCESS_COMMANDS, PROCESS_FUNCTIONS, run_process
from moneyrail.processor.settings import STRIPE


def _every_domain_for_decisions(ctx: typer.Context) -> None:
    # An operator's retry or discard reaches every domain's outcome listener (domains.py): loaded here,
    # at the CLI's top, as the web, worker and scheduler processes load it at theirs.
    if ctx.invoked_subcommand in DECISIONS:
        import moneyrail.domains  # noqa: F401 - the outcome listeners register on import


app = typer.Typer(
    help="moneyrail: payments, marketplace distribution and recurring billing.", no_args_is_help=True
)
installations_app = typer.Typer(help="Create and list installations.", no_args_is_help=True)
keys_app = typer.Typer(help="Create, list and revoke API keys.", no_args_is_help=True)
settings_app = typer.Typer(help="Per-environment settings of an installation.", no_args_is_help=True)
app.add_typer(installations_app, name="installations")
app.add_typer(keys_app, name="keys")
app.add_typer(settings_app, name="settings")
app.add_typer(dead_letters_app, name="dead-letters", callback=_every_domain_for_decisions)
app.add_typer(ledger_app, name="ledger")
app.add_typer(secrets_app, name="secrets")
register_devkit(app)  # listen, trigger
app.add_typer(operators_app, name="operators")
app.add_typer(audit_app, name="audit")
for process_command in PROCESS_FUNCTIONS:  # listed in `moneyrail --help`; run by entry.py without the rest
    app.command()(process_command)

JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]
InstallationOption = Annotated[str, typer.Option("--installation", "-i", help="Installation id (inst_…).")]
EnvironmentOption = Annotated[str, typer.Option("--env", help="sandbox or live.")]

T = TypeVar("T")


def _livemode(environment: str) -> bool:
    if environment not in {"sandbox", "live"}:
        raise typer.BadParameter("--env must be sandbox or live")
    return environment == "live"


_emit = emit


def installation_view(installation: Installation) -> dict[str, Any]:
    return {
        "id": installation.id,
        "name": installation.name,
        "kind": installation.kind,
        "created": to_unix(installation.created_at),
    }


def key_view(key: ApiKey) -> dict[str, Any]:
    return {
        "id": key.id,
        "installation": key.installation_id,
        "environment": "live" if key.livemode else "sandbox",
        "name": key.name,
        "scopes": key.scopes,
        "last4": key.secret_last4,
        "revoked": key.revoked_at is not None,
        "created": to_unix(key.created_at),
    }


def settings_view(settings: EnvironmentSettings) -> dict[str, Any]:
    return {
        "installation": settings.installation_id,
        "environment": "live" if settings.livemode else "sandbox",
        "checkout_enabled": settings.checkout_enabled,
        "recurring_enabled": settings.recurring_enabled,
        "return_urls": settings.return_urls,
        "oauth_redirect_uris": settings.oauth_redirect_uris,
        "commission_basis_points": settings.commission_basis_points,
        "commission_fixed_amount": settings.commission_fixed_amount,
        "rate_limit_per_second": settings.rate_limit_per_second,  # null: MONEYRAIL_RATE_LIMIT_PER_SECOND
        # the environment's own payouts go there; shown as its last four digits only
        "payout_bank_account_last4": (settings.payout_bank_account or "")[-4:] or None,
        # who moves the money: sandbox (the simulator), stripe, or none (a live environment not set yet)
        "processor": settings.processor or "none",
        "processor_key": settings.processor_key_hint,  # `sk_live_…1234`: the key itself is never shown
        "processor_publishable_key": settings.processor_publishable_key,
        "processor_webhook_secret": settings.processor_webhook_secret_hint,
        "processor_connect_webhook_secret": settings.processor_connect_webhook_secret_hint,
        # where the Stripe webhook endpoint of this environment posts (register it in Stripe's dashboard)
        "processor_webhook_url": (
            f"{get_settings().base_url}/processor/stripe/webhooks/{settings.installation_id}/"
            f"{'live' if settings.livemode else 'sandbox'}"
            if settings.processor == STRIPE
            else None
        ),
    }


def settings_for_people(view: dict[str, Any]) -> str:
    rate_limit = view["rate_limit_per_second"]
    last4 = view["payout_bank_account_last4"]
    return labelled(
        [
            ("installation", view["installation"]),
            ("environment", view["environment"]),
            ("checkout enabled", view["checkout_enabled"]),
            ("recurring enabled", view["recurring_enabled"]),
            ("return URLs", view["return_urls"]),
            ("OAuth redirect URIs", view["oauth_redirect_uris"]),
            (
                "commission",
                f"{view['commission_basis_points']} basis points "
                f"+ {view['commission_fixed_amount']} minor units",
            ),
            (
                "rate limit",
                "the service-wide default (MONEYRAIL_RATE_LIMIT_PER_SECOND)"
                if rate_limit is None
                else "no limit"
                if rate_limit == 0
                else f"{rate_limit} requests per second per key",
            ),
            ("payout bank account", f"…{last4}" if last4 else None),
            ("processor", view["processor"]),
            ("processor key", view["processor_key"]),
            ("processor publishable key", view["processor_publishable_key"]),
            ("processor webhook secret", view["processor_webhook_secret"]),
            ("processor Connect webhook secret", view["processor_connect_webhook_secret"]),
            ("processor webhook URL", view["processor_webhook_url"]),
        ]
    )


STDIN = "-"


def _read_secret(path: str, option: str) -> str:
    """A secret from a file, or from stdin for `-`: never from the command line, where the shell's
    history and the process list would keep it."""
    try:
        secret = sys.stdin.read() if path == STDIN else Path(path).read_text()
    except OSError as error:
        raise typer.BadParameter(f"cannot read {path}: {error.strerror}", param_hint=option) from error
    secret = secret.strip()
    if not secret:
        raise typer.BadParameter(f"{'stdin' if path == '-' else path} holds no key", param_hint=option)
    return secret


def _checked_before_storing(tenant: Tenant, processor: str | None, api_key: str) -> None:
    """One call to Stripe, outside any transaction, before the key is kept; a refusal exits 1."""
    try:
        asyncio.run(processors.check_processor_key(tenant, processor or STRIPE, api_key))
    except MoneyrailError as refused:
        typer.echo(f"error: {refused.message}", err=True)
        raise typer.Exit(1) from refused


# --- installations ---------------------------------------------------------------------------
@installations_app.command("create", help="Create an installation (direct or platform).")
def installations_create(
    name: Annotated[str, typer.Option(help="Display name.")],
    kind: Annotated[str, typer.Option(help="direct or platform.")] = "direct",
    as_json: JsonOption = False,
) -> None:
    installation = in_unit_of_work(
        lambda uow: installations.create_installation(uow.session, name=name, kind=kind)
    )
    view = installation_view(installation)
    _emit(
        as_json,
        view,
        f"created installation {view['id']} ({view['kind']}) at {human_time(view['created'])}: "
        f"{view['name']}",
    )


@installations_app.command("list", help="List every installation, oldest first.")
def installations_list(as_json: JsonOption = False) -> None:
    rows = in_unit_of_work(lambda uow: installations.list_installations(uow.session))
    views = [installation_view(row) for row in rows]
    _emit(
        as_json,
        views,
        "\n".join(f"{v['id']}  {v['kind']:<8}  {human_time(v['created'])}  {v['name']}" for v in views)
        or "no installations",
    )


# --- keys ------------------------------------------------------------------------------------
@keys_app.command("create", help="Create a secret API key; its secret is shown once.")
def keys_create(
    installation: InstallationOption,
    scope: Annotated[list[str], typer.Option("--scope", "-s", help="Repeatable; `*` grants every scope.")],
    environment: EnvironmentOption = "sandbox",
    name: Annotated[str, typer.Option(help="What the key is for.")] = "",
    as_json: JsonOption = False,
) -> None:
    tenant = Tenant(installation, _livemode(environment))
    issued = in_unit_of_work(
        lambda uow: installations.create_api_key(uow.session, tenant, scopes=scope, name=name)
    )
    view = {**key_view(issued.key), "secret": issued.secret}
    _emit(
        as_json,
        view,
        f"created key {view['id']} with scopes {human_value(view['scopes'])}\n"
        f"secret (shown once, store it now): {issued.secret}",
    )


@keys_app.command("list", help="List an installation's API keys (never their secrets).")
def keys_list(installation: InstallationOption, as_json: JsonOption = False) -> None:
    rows = in_unit_of_work(lambda uow: installations.list_api_keys(uow.session, installation))
    views = [key_view(row) for row in rows]
    lines = [
        f"{v['id']}  {v['environment']:<7}  …{v['last4']}  {'revoked' if v['revoked'] else 'active ':<7}  "
        f"{human_time(v['created'])}  {human_value(v['scopes'])}  {v['name']}".rstrip()
        for v in views
    ]
    _emit(as_json, views, "\n".join(lines) or "no keys")


@keys_app.command("revoke", help="Revoke an API key; effective on the next request.")
def keys_revoke(
    key: Annotated[str, typer.Argument(help="Key id (key_…).")], as_json: JsonOption = False
) -> None:
    revoked = in_unit_of_work(lambda uow: installations.revoke_api_key(uow.session, key))
    _emit(as_json, key_view(revoked), f"revoked key {revoked.id}")


# --- settings --------------------------------------------------------------------------------
@settings_app.command("show", help="Show an environment's settings (checkout, billing, return URLs, fees).")
def settings_show(
    installation: InstallationOption, environment: EnvironmentOption = "sandbox", as_json: JsonOption = False
) -> None:
    tenant = Tenant(installation, _livemode(environment))
    view = settings_view(
        in_unit_of_work(lambda uow: installations.get_environment_settings(uow.session, tenant))
    )
    _emit(as_json, view, settings_for_people(view))


@settings_app.command("set", help="Change an environment's settings; options left out keep their value.")
def settings_set(
    installation: InstallationOption,
    environment: EnvironmentOption = "sandbox",
    checkout: Annotated[
        bool | None, typer.Option("--checkout/--no-checkout", help="Hosted checkout.")
    ] = None,
    recurring: Annotated[
        bool | None, typer.Option("--recurring/--no-recurring", help="Subscriptions.")
    ] = None,
    return_url: Annotated[
        list[str] | None, typer.Option("--return-url", help="Repeatable; replaces the registered list.")
    ] = None,
    oauth_redirect_uri: Annotated[
        list[str] | None,
        typer.Option(
            "--oauth-redirect-uri",
            help="Repeatable; where merchants return from the OAuth consent page; replaces the list.",
        ),
    ] = None,
    commission_bps: Annotated[int | None, typer.Option(help="Commission in basis points.")] = None,
    commission_fixed: Annotated[int | None, typer.Option(help="Fixed commission in minor units.")] = None,
    rate_limit: Annotated[
        int | None,
        typer.Option(help="Requests per second per API key; 0: no limit; -1: the service-wide default."),
    ] = None,
    payout_bank_account: Annotated[
        str | None,
        typer.Option(help="Where a direct installation's own payouts go (6 to 34 digits or letters)."),
    ] = None,
    processor: Annotated[
        str | None,
        typer.Option(
            "--processor",
            help="Who moves the money: sandbox (the simulator; sandbox environments only) or stripe.",
        ),
    ] = None,
    processor_key_file: Annotated[
        str | None,
        typer.Option(
            "--processor-key-file",
            help="A file holding the Stripe secret or restricted key (sk_/rk_, live or test as the "
            "environment), or - for stdin; checked with one call to Stripe before it is stored, encrypted.",
        ),
    ] = None,
    processor_publishable_key: Annotated[
        str | None,
        typer.Option("--processor-publishable-key", help="The Stripe publishable key (pk_…) for Stripe.js."),
    ] = None,
    processor_webhook_secret_file: Annotated[
        str | None,
        typer.Option(
            "--processor-webhook-secret-file",
            help="A file holding the signing secret (whsec_…) of the Stripe webhook endpoint that posts "
            "to this environment's processor_webhook_url, or - for stdin; stored encrypted.",
        ),
    ] = None,
    processor_connect_webhook_secret_file: Annotated[
        str | None,
        typer.Option(
            "--processor-connect-webhook-secret-file",
            help="A file holding the signing secret (whsec_…) of the Stripe Connect webhook endpoint "
            "(events on connected accounts) that posts to the same processor_webhook_url, or - for stdin; "
            "stored encrypted.",
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    tenant = Tenant(installation, _livemode(environment))
    secret_files = [processor_key_file, processor_webhook_secret_file, processor_connect_webhook_secret_file]
    if secret_files.count(STDIN) > 1:
        raise typer.BadParameter("only one secret can come from stdin", param_hint="--processor-key-file")
    api_key = _read_secret(processor_key_file, "--processor-key-file") if processor_key_file else None
    webhook_secret = (
        _read_secret(processor_webhook_secret_file, "--processor-webhook-secret-file")
        if processor_webhook_secret_file
        else None
    )
    connect_webhook_secret = (
        _read_secret(processor_connect_webhook_secret_file, "--processor-connect-webhook-secret-file")
        if processor_connect_webhook_secret_file
        else None
    )
    if api_key is not None:
        _checked_before_storing(tenant, processor, api_key)

    async def work(uow: Any) -> EnvironmentSettings:
        if processor or api_key or processor_publishable_key or webhook_secret or connect_webhook_secret:
            await processors.set_processor(
                uow.session,
                tenant,
                processor=processor,
                api_key=api_key,
                publishable_key=processor_publishable_key,
                webhook_secret=webhook_secret,
                connect_webhook_secret=connect_webhook_secret,
            )
        return await installations.update_environment_settings(
            uow.session,
            tenant,
            checkout_enabled=checkout,
            recurring_enabled=recurring,
            return_urls=return_url,
            oauth_redirect_uris=oauth_redirect_uri,
            commission_basis_points=commission_bps,
            commission_fixed_amount=commission_fixed,
            rate_limit_per_second=rate_limit,
            payout_bank_account=payout_bank_account,
        )

    updated = in_unit_of_work(work)
    view = settings_view(updated)
    _emit(as_json, view, settings_for_people(view))


# Failures to open a session, however the driver names them.
CONNECTION_ERRORS = (
    OSError,
    asyncpg.exceptions.PostgresConnectionError,
    asyncpg.exceptions.InvalidCatalogNameError,
    asyncpg.exceptions.InvalidAuthorizationSpecificationError,
    asyncpg.exceptions.TooManyConnectionsError,
    asyncpg.exceptions.CannotConnectNowError,
)


# Commands that are processes (they log like one); every other command is an operator's.
def _describe_failure(error: BaseException) -> str:
    """One line for a failure to reach or use the servers: what failed, where, and what to do."""
    settings = get_settings()
    where = safe_url(settings.database_url) if settings.database_url else "(no DATABASE_URL)"
    if isinstance(error, DatabaseNotConfigured):
        return no_database_message()
    if isinstance(error, RedisError):
        return f"cannot use the broker: {type(error).__name__}: {(str(error).splitlines() or [''])[0]}"
    cause = getattr(error, "orig", None) or error
    cause = (
        getattr(cause, "__cause__", None) or cause
    )  # SQLAlchemy's adapted asyncpg error holds the real one
    detail = (str(cause).strip().splitlines() or [type(cause).__name__])[0]
    if isinstance(error, OSError | InterfaceError | OperationalError) or isinstance(cause, CONNECTION_ERRORS):
        return f"cannot connect to the database at {where}: {detail}"
    if isinstance(cause, asyncpg.exceptions.UndefinedTableError):
        return f"the database at {where} has no moneyrail tables ({detail}): run `moneyrail migrate`"
    return f"the database at {where} refused the command: {detail}"


class _Nowhere(io.TextIOBase):
    """A stream that keeps nothing: no file to leave open, however many commands a process runs."""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        return len(text)


def main(argv: Sequence[str] | None = None) -> None:
    arguments = list(argv) if argv is not None else sys.argv[1:]
    command = next((argument for argument in arguments if not argument.startswith("-")), None)
    if command in PROCESS_COMMANDS:
        run_process(arguments)
        return
    # Operator commands beside a running `moneyrail dev` need no variables: it recorded its servers.
    use_running_dev_instance(os.environ, Settings().data_dir)
    get_settings.cache_clear()  # read again, with the instance's URLs if it gave them
    settings = get_settings()
    # They print results, never log lines; what an operator decided is in the audit log (a table).
    configure_logging(settings.log_level, json=settings.log_json, stream=cast(TextIO, _Nowhere()))
    try:
        app(args=arguments)
    except (OSError, SQLAlchemyError, asyncpg.PostgresError, RedisError, DatabaseNotConfigured) as error:
        typer.echo(f"error: {_describe_failure(error)}", err=True)
        sys.exit(2)
