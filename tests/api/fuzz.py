"""What the schemathesis runs share (tests/api/test_schemathesis_fuzz*.py): schemathesis reads
/openapi.json from the real server and sends generated requests, valid and invalid, to every operation as
an authenticated tenant. Every answer must be what the document says: no 5xx, a documented status,
content type, body and headers. The three runs are three test files, so the parallel suite runs them at once.

Bounded: a fixed seed and a few cases per operation, so the suite's run is repeatable and short. Each
operation's generated cases (the coverage and fuzzing phases) run once, in the run where its requests reach
its rules: the operations on one object with real objects in the path (real-objects), billing's on a tenant
with billing on (tests/billing/test_contract_fuzz.py), the rest here; the secret-key run still sends every
operation its documented examples. `python3 run.py fuzz` runs every phase on every operation in every run,
with many more cases (MONEYRAIL_FUZZ_CASES_PER_OPERATION).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.harness import OUTPUT_DIR, TLS

CHECKS = (
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_schema_conformance",
    "response_headers_conformance",
)
SEED = 14
LONG_FUZZ = "MONEYRAIL_FUZZ_CASES_PER_OPERATION" in os.environ  # `python3 run.py fuzz`
CASES_PER_OPERATION = int(os.environ.get("MONEYRAIL_FUZZ_CASES_PER_OPERATION", "5"))
# Paths with an object in them (`/v1/customers/{customer}`), and billing's paths (403 or 404 on a tenant
# without billing and catalog objects): fuzzed on real objects by their own runs.
ON_ONE_OBJECT = r"\{"
BILLING_PATHS = r"^/v1/(products|prices|subscriptions|checkout-sessions)"
# A hung run is cut off; how long the fuzz takes is written to its report directory
RUN_TIMEOUT_SECONDS = int(os.environ.get("MONEYRAIL_FUZZ_TIMEOUT_SECONDS", "600"))


def examples_only(path_regex: str) -> str:
    """A schemathesis.toml section: the operations whose path matches get their documented examples only,
    in the suite's short run (their generated cases run elsewhere); every phase in the long fuzz."""
    if LONG_FUZZ:
        return ""
    return (
        f"[[operations]]\ninclude-path-regex = '{path_regex}'\n"
        "phases.coverage.enabled = false\nphases.fuzzing.enabled = false\n"
    )


def schemathesis(
    base_url: str,
    key: str,
    name: str,
    *selection: str,
    path_ids: dict[str, str] | None = None,
    operations: str = "",
) -> tuple[subprocess.CompletedProcess[str], float]:
    """One schemathesis run; `operations`: schemathesis.toml `[[operations]]` sections (`examples_only`)."""
    report = OUTPUT_DIR / "schemathesis" / name
    report.mkdir(parents=True, exist_ok=True)
    config = report / "schemathesis.toml"
    pinned = "".join(f'"path.{name}" = "{value}"\n' for name, value in (path_ids or {}).items())
    config.write_text((f"[parameters]\n{pinned}" if pinned else "") + operations)
    command = [
        str(Path(sys.executable).parent / "schemathesis"),
        "--config-file",
        str(config),
        "run",
        f"{base_url}/openapi.json",
        *selection,
        "--checks",
        ",".join(CHECKS),
        "--phases",
        "examples,coverage,fuzzing",
        "--seed",
        str(SEED),
        "--max-examples",
        str(CASES_PER_OPERATION),
        "--workers",
        "1",  # hypothesis' lambda descriptions are not thread-safe: 2 workers crash now and then
        "--request-timeout",
        "30",
        "--header",
        f"Authorization: Bearer {key}",
        "--report",
        "junit",
        "--report-dir",
        str(report),
        "--output-truncate",
        "false",
        "--warnings",
        "off",
    ]
    started = time.monotonic()
    run = subprocess.run(  # its example cache lands in the report directory, not the worktree
        command, capture_output=True, text=True, timeout=RUN_TIMEOUT_SECONDS, check=False, cwd=report
    )
    (report / "output.txt").write_text(run.stdout + run.stderr)
    return run, time.monotonic() - started


def client_side_operation_ids(base_url: str) -> list[str]:
    spec = httpx.get(f"{base_url}/openapi.json", verify=TLS).json()
    return [
        operation["operationId"]
        for item in spec["paths"].values()
        for operation in item.values()
        if any("PublishableKey" in requirement for requirement in operation.get("security") or [])
    ]


def real_objects(web, keys) -> dict[str, str]:
    """One of each object a path names, made through the API, so the fuzz also reads and acts on real ones."""
    secret = httpx.Client(
        base_url=web.base_url, headers={"Authorization": f"Bearer {keys.secret}"}, timeout=30, verify=TLS
    )
    public = httpx.Client(
        base_url=web.base_url, headers={"Authorization": f"Bearer {keys.publishable_key}"}, verify=TLS
    )
    card = {"number": "4242424242424242", "exp_month": 12, "exp_year": 2034, "cvc": "123"}
    with secret, public:
        customer = secret.post("/v1/customers", json={"email": "fuzz@example.com"}).json()
        setup = secret.post(f"/v1/customers/{customer['id']}/setup-intents", json={}).json()
        saved = public.post(
            f"/v1/setup-intents/{setup['id']}/confirm",
            json={"client_secret": setup["client_secret"], "card": card},
        ).json()
        payment = secret.post("/v1/payment-intents", json={"amount": 5000, "currency": "eur"}).json()
        public.post(
            f"/v1/payment-intents/{payment['id']}/confirm",
            json={"client_secret": payment["client_secret"], "card": card},
        ).raise_for_status()
        refund = secret.post("/v1/refunds", json={"payment_intent": payment["id"], "amount": 100}).json()
        endpoint = secret.post(
            "/v1/webhook-endpoints", json={"url": "http://127.0.0.1:9/hook", "enabled_events": ["*"]}
        ).json()
        event = secret.get("/v1/events").json()["data"][0]
        session = secret.post(f"/v1/customers/{customer['id']}/customer-sessions", json={}).json()
    return {
        "customer": customer["id"],
        "setup_intent": setup["id"],
        "payment_method": saved["payment_method"],
        "payment_intent": payment["id"],
        "refund": refund["id"],
        "operation": refund["operation"],
        "webhook_endpoint": endpoint["id"],
        "event": event["id"],
        "customer_session": session["id"],
    }


def assert_no_issues(run: subprocess.CompletedProcess[str], elapsed: float, name: str) -> None:
    assert run.returncode == 0, run.stdout[-20000:] + run.stderr[-5000:]
    assert "No issues found" in run.stdout, run.stdout[-5000:]
    (OUTPUT_DIR / "schemathesis" / name / "seconds.txt").write_text(f"{elapsed:.1f}\n")
