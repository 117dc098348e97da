"""An environment's processor, set by the operator CLI (a real process) against the Stripe double: the key
read from a file or stdin (never the command line), checked with one call to Stripe before it is stored,
sealed at rest and shown masked; the refusals change nothing."""

from __future__ import annotations

import json
import secrets
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.harness import TLS, Servers, run_moneyrail
from tests.processor.stripe.servers import StripeServers


def moneyrail(
    servers: Servers, stripe: StripeServers, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return run_moneyrail(servers, *args, stdin=stdin, MONEYRAIL_STRIPE_API_BASE=stripe.double)


@pytest.fixture
def installation(servers: Servers, stripe_stack: StripeServers) -> str:
    created = moneyrail(servers, stripe_stack, "installations", "create", "--name", "Shop", "--json")
    assert created.returncode == 0, created.stderr
    return str(json.loads(created.stdout)["id"])


def key_file(tmp_path: Path, key: str) -> str:
    path = tmp_path / f"key-{secrets.token_hex(4)}"
    path.write_text(key + "\n")
    return str(path)


def shown(servers: Servers, stripe: StripeServers, installation: str, environment: str) -> dict[str, Any]:
    result = moneyrail(
        servers, stripe, "settings", "show", "-i", installation, "--env", environment, "--json"
    )
    assert result.returncode == 0, result.stderr
    return dict(json.loads(result.stdout))


def stored_columns(db: Any, installation: str, livemode: bool) -> tuple[Any, ...]:
    row = db.execute(
        "SELECT processor, processor_key, processor_key_hint, processor_webhook_secret, "
        "processor_connect_webhook_secret FROM environment_settings "
        "WHERE installation_id = %s AND livemode = %s",
        (installation, livemode),
    ).fetchone()
    return tuple(row)


def balance_calls(stripe: StripeServers) -> int:
    log = httpx.get(f"{stripe.double}/_double/requests", verify=TLS).json()["data"]
    return sum(1 for entry in log if entry["path"] == "/v1/balance")


def test_a_sandbox_runs_on_the_simulator_and_live_on_nothing_until_set(servers, stripe_stack, installation):
    sandbox = shown(servers, stripe_stack, installation, "sandbox")
    live = shown(servers, stripe_stack, installation, "live")
    assert (sandbox["processor"], sandbox["processor_key"]) == ("sandbox", None)
    assert (live["processor"], live["processor_key"], live["processor_webhook_url"]) == ("none", None, None)


def test_live_on_stripe_with_a_checked_live_key_stored_sealed_and_shown_masked(
    servers, stripe_stack, installation, db, tmp_path
):
    key = f"sk_live_{secrets.token_hex(12)}"
    secret, connect_secret = f"whsec_{secrets.token_hex(12)}", f"whsec_{secrets.token_hex(12)}"
    calls = balance_calls(stripe_stack)
    result = moneyrail(
        servers,
        stripe_stack,
        "settings",
        "set",
        "-i",
        installation,
        "--env",
        "live",
        "--processor",
        "stripe",
        "--processor-key-file",
        key_file(tmp_path, key),
        "--processor-publishable-key",
        "pk_live_shop",
        "--processor-webhook-secret-file",
        "-",
        "--processor-connect-webhook-secret-file",
        key_file(tmp_path, connect_secret),
        "--json",
        stdin=secret,
    )
    assert result.returncode == 0, result.stderr
    assert balance_calls(stripe_stack) == calls + 1  # one live call checked the key
    view = json.loads(result.stdout)
    assert view["processor"] == "stripe"
    assert view["processor_key"] == f"sk_live_…{key[-4:]}"
    assert view["processor_webhook_secret"] == f"whsec_…{secret[-4:]}"
    assert view["processor_connect_webhook_secret"] == f"whsec_…{connect_secret[-4:]}"
    assert view["processor_publishable_key"] == "pk_live_shop"
    assert view["processor_webhook_url"].endswith(f"/processor/stripe/webhooks/{installation}/live")
    assert key not in result.stdout + result.stderr and secret not in result.stdout
    assert connect_secret not in result.stdout + result.stderr
    assert shown(servers, stripe_stack, installation, "live") == view
    processor, sealed_key, hint, sealed_secret, sealed_connect = stored_columns(db, installation, True)
    assert processor == "stripe" and hint == f"sk_live_…{key[-4:]}"
    for sealed, plain in ((sealed_key, key), (sealed_secret, secret), (sealed_connect, connect_secret)):
        assert sealed.startswith("fernet:") and plain not in sealed
    # the sandbox keeps its own processor
    assert shown(servers, stripe_stack, installation, "sandbox")["processor"] == "sandbox"


def test_a_sandbox_may_run_on_stripe_test_mode_and_return_to_the_simulator(
    servers, stripe_stack, installation, db, tmp_path
):
    key = f"sk_test_{secrets.token_hex(12)}"
    on_stripe = moneyrail(
        servers,
        stripe_stack,
        "settings",
        "set",
        "-i",
        installation,
        "--processor",
        "stripe",
        "--processor-key-file",
        "-",
        "--json",
        stdin=key,
    )
    assert on_stripe.returncode == 0, on_stripe.stderr
    assert json.loads(on_stripe.stdout)["processor_key"] == f"sk_test_…{key[-4:]}"
    back = moneyrail(servers, stripe_stack, "settings", "set", "-i", installation, "--processor", "sandbox")
    assert back.returncode == 0, back.stderr
    assert stored_columns(db, installation, False) == ("sandbox", None, None, None, None)


@pytest.mark.parametrize(
    ("environment", "key", "expected"),
    [
        ("live", "sk_test_{}", "live environment needs a key starting with sk_live_ or rk_live_"),
        ("sandbox", "sk_live_{}", "sandbox environment needs a key starting with sk_test_ or rk_test_"),
        ("live", "pk_live_{}", "not a Stripe secret or restricted key"),
        # the double passes the check on to localstripe, which knows no restricted key: as Stripe a
        # revoked one
        ("live", "rk_live_{}", "Stripe did not accept this key (wrong or revoked?)"),
    ],
    ids=["test-key-on-live", "live-key-on-sandbox", "publishable-key", "refused-by-stripe"],
)
def test_a_key_that_cannot_serve_the_environment_is_refused_and_nothing_is_stored(
    servers, stripe_stack, installation, db, tmp_path, environment, key, expected
):
    before = stored_columns(db, installation, environment == "live")
    result = moneyrail(
        servers,
        stripe_stack,
        "settings",
        "set",
        "-i",
        installation,
        "--env",
        environment,
        "--processor",
        "stripe",
        "--processor-key-file",
        key_file(tmp_path, key.format(secrets.token_hex(8))),
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert expected in result.stderr and "Traceback" not in result.stderr
    assert stored_columns(db, installation, environment == "live") == before


def test_stripe_not_answering_the_check_stores_nothing(servers, stripe_stack, installation, db, tmp_path):
    armed = httpx.post(
        f"{stripe_stack.double}/_double/faults",
        json={"path": "/v1/balance", "method": "GET", "when": "before", "status": 503},
        verify=TLS,
    )
    assert armed.status_code == 200
    result = moneyrail(
        servers,
        stripe_stack,
        "settings",
        "set",
        "-i",
        installation,
        "--env",
        "live",
        "--processor",
        "stripe",
        "--processor-key-file",
        key_file(tmp_path, f"sk_live_{secrets.token_hex(8)}"),
    )
    assert result.returncode == 1 and "could not be reached to check the key" in result.stderr
    assert stored_columns(db, installation, True) == (None, None, None, None, None)


def test_the_simulator_is_refused_for_live_and_a_key_has_no_command_line_option(
    servers, stripe_stack, installation, db
):
    simulated = moneyrail(
        servers,
        stripe_stack,
        "settings",
        "set",
        "-i",
        installation,
        "--env",
        "live",
        "--processor",
        "sandbox",
    )
    assert simulated.returncode == 1 and "Live mode never simulates" in simulated.stderr
    for option in ("--processor-key", "--key", "--processor-secret-key"):
        typed = moneyrail(
            servers, stripe_stack, "settings", "set", "-i", installation, option, "sk_live_typed_in_a_shell"
        )
        assert typed.returncode == 2 and "No such option" in typed.stderr, option
    secret_as_publishable = moneyrail(
        servers,
        stripe_stack,
        "settings",
        "set",
        "-i",
        installation,
        "--env",
        "live",
        "--processor",
        "stripe",
        "--processor-publishable-key",
        "sk_live_typed_in_a_shell",
    )
    assert secret_as_publishable.returncode == 1
    assert "This is a secret key, not a publishable one" in secret_as_publishable.stderr
    stripe_without_key = moneyrail(
        servers, stripe_stack, "settings", "set", "-i", installation, "--env", "live", "--processor", "stripe"
    )
    assert stripe_without_key.returncode == 1 and "--processor-key-file" in stripe_without_key.stderr
    assert stored_columns(db, installation, True) == (None, None, None, None, None)
