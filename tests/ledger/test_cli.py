"""`moneyrail ledger verify` and `seal`, run as real processes against the test database."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.harness import ROOT
from tests.ledger.support import block_of, post, seal_until_sealed, tampered


def ledger_cli(servers, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "moneyrail.ledger.cli", *args],
        env=servers.environment(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_seal_then_verify_a_clean_ledger_exits_0(servers, bridge, db, tenant):
    journal = post(bridge, tenant.tenant, ("customer_funds", -700, "usd"), ("platform:fees", 700, "usd"))
    sealed = ledger_cli(servers, "seal")
    assert sealed.returncode == 0, sealed.stderr
    assert sealed.stdout.startswith(("sealed ", "nothing to seal"))
    seal_until_sealed(bridge, db, [journal.id])  # in case a transaction elsewhere held it back

    verified = ledger_cli(servers, "verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert verified.stdout.startswith("ledger verified: ") and " transactions, " in verified.stdout
    assert verified.stdout.rstrip().endswith(" blocks")

    as_json = ledger_cli(servers, "verify", "--json")
    assert as_json.returncode == 0
    report = json.loads(as_json.stdout)
    assert report["ok"] is True and report["problems"] == [] and report["blocks"] >= 1


def test_verify_exits_1_and_names_the_broken_block_of_a_tampered_ledger(servers, bridge, db, tenant):
    journal = post(bridge, tenant.tenant, ("customer_funds", -700, "usd"), ("platform:fees", 700, "usd"))
    seal_until_sealed(bridge, db, [journal.id])
    height = block_of(db, journal.id)
    change = "UPDATE postings SET amount = amount * {} WHERE transaction_id = %s"
    with tampered(db, "postings", change.format(2), change.format("0.5"), (journal.id,)):
        broken = ledger_cli(servers, "verify")
        as_json = ledger_cli(servers, "verify", "--json")
    assert broken.returncode == 1
    assert f"block {height}: hash mismatch" in broken.stdout
    assert "ledger verification FAILED" in broken.stderr
    assert as_json.returncode == 1 and json.loads(as_json.stdout)["ok"] is False
    assert ledger_cli(servers, "verify").returncode == 0


def test_without_a_database_url_the_commands_refuse(servers):
    env = {key: value for key, value in servers.environment().items() if key != "DATABASE_URL"}
    result = subprocess.run(
        [sys.executable, "-m", "moneyrail.ledger.cli", "verify"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2 and "DATABASE_URL" in result.stderr
