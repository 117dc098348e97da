"""Billing's contract fuzzed on real objects (issue 14 item 3, applied to billing).

The suite-wide fuzz (tests/api/test_schemathesis_fuzz*.py) runs with a tenant whose subscriptions are
not enabled, and with no product, price or subscription to put in a path: billing operations there
answer 403 or 404 before any rule runs. Here the environment has billing on, and real catalog objects
and subscriptions stand in every path and body (the checkout session's subscription mode included),
so the generated requests reach the billing rules; every answer must be what `/openapi.json`
documents: no 5xx, a documented status, content type, body and headers.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.api.fuzz import BILLING_PATHS, schemathesis
from tests.billing.schemathesis_hooks import BODY_IDS_ENV
from tests.billing.support import customer, price, subscribe

HOOKS = Path(__file__).with_name("schemathesis_hooks.py")  # fresh keys and real ids: bodies reach the rules


def test_billing_operations_answer_as_documented_under_a_seeded_fuzz_on_real_objects(
    biller, web, monkeypatch
):
    # the paths' objects, which the fuzz archives and cancels...
    in_path = price(biller)
    payer = customer(biller)
    subscription = subscribe(biller, in_path["id"], payer["id"])
    path_ids = {"product": in_path["product"], "price": in_path["id"], "subscription": subscription["id"]}
    # ...and the bodies' objects, which no path names, so they stay active for new prices and subscriptions
    in_body = price(biller)
    to_check_out = subscribe(biller, in_body["id"], payer["id"])
    body_ids = {
        "product": in_body["product"],
        "price": in_body["id"],
        "customer": payer["id"],
        "subscription": to_check_out["id"],
    }
    monkeypatch.setenv("SCHEMATHESIS_HOOKS", str(HOOKS))
    monkeypatch.setenv(BODY_IDS_ENV, json.dumps(body_ids))

    run, _ = schemathesis(
        web.base_url, biller.keys.secret, "billing", "--include-path-regex", BILLING_PATHS, path_ids=path_ids
    )

    assert run.returncode == 0, run.stdout[-20000:] + run.stderr[-5000:]
    assert "No issues found" in run.stdout, run.stdout[-5000:]
    # the generated bodies got past the gates to the rules: the fuzz made products and subscriptions
    assert len(biller.get("/v1/products", params={"limit": 100}).json()["data"]) > 2
    assert len(biller.get("/v1/subscriptions", params={"limit": 100}).json()["data"]) > 2
