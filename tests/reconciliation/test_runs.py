"""Reconciliation runs over HTTP through real workers: the ledger's transfers against the sandbox
processor's own records, each kind of discrepancy made by a sandbox helper and reported as an issue."""

from __future__ import annotations

import pytest

from moneyrail.processor.sandbox import SandboxProcessor
from tests.connect.support import create_account
from tests.engine.conftest import wait_for_operation
from tests.helpers import assert_error
from tests.payments.support import paid
from tests.transfers.support import FINAL, committed_group


@pytest.fixture
def platform(make_api):
    return make_api(kind="platform")


def transfers(api, count: int) -> list[dict]:
    payment = paid(api, 1000 * count)
    group = committed_group(
        api, payment["id"], [(create_account(api)["id"], 100 * (i + 1)) for i in range(count)]
    )
    return group["transfers"]


def run(api) -> dict:
    created = api.post("/v1/reconciliation-runs")
    assert created.status_code == 202, created.text
    body = created.json()
    assert body["object"] == "reconciliation_run" and body["id"].startswith("recon_")
    assert (body["status"], body["operation"]["type"]) == ("pending", "reconciliation")
    assert wait_for_operation(api, body["operation"]["id"], FINAL)["status"] == "succeeded"
    done: dict = api.get(f"/v1/reconciliation-runs/{body['id']}").json()
    assert done["status"] == "completed"
    return done


def test_books_that_agree_give_a_run_without_issues(platform, money_stack):
    made = transfers(platform, 2)
    platform.post(f"/v1/transfers/{made[0]['id']}/reversals")  # a full reversal: reversed on both sides
    platform.post(f"/v1/transfers/{made[1]['id']}/reversals", json={"amount": 50})
    done = run(platform)
    assert (done["issues"], done["transfers_checked"]) == ([], 2)
    assert [item["id"] for item in platform.get("/v1/reconciliation-runs").json()["data"]] == [done["id"]]


def test_every_kind_of_discrepancy_is_reported(platform, bridge, money_stack):
    lost, altered, failed, fine = transfers(platform, 4)
    helper = "/v1/test-helpers/processor-transfers"
    assert platform.post(f"{helper}/{lost['id']}/lose").status_code == 204
    assert platform.post(f"{helper}/{altered['id']}/alter", json={"amount": 999}).status_code == 204
    assert platform.post(f"{helper}/{failed['id']}/alter", json={"status": "failed"}).status_code == 204
    # the processor made a transfer the ledger never booked (a worker died between the two)
    stray = bridge.run(
        SandboxProcessor(bridge.sessionmaker).create_transfer(
            platform.keys.tenant,
            idempotency_key="op_stray:alloc_stray",
            amount=77,
            currency="eur",
            destination=fine["destination"],
        )
    )
    issues = run(platform)["issues"]
    assert sorted(
        (issue["type"], issue["transfer"], issue["expected"], issue["actual"]) for issue in issues
    ) == sorted(
        [
            ("missing_at_processor", lost["id"], lost["amount"], None),
            ("amount_mismatch", altered["id"], altered["amount"], 999),
            ("status_mismatch", failed["id"], "paid", "failed"),
            ("missing_in_ledger", None, None, 77),
        ]
    )
    assert (
        next(issue for issue in issues if issue["type"] == "missing_in_ledger")["processor_transfer"]
        == stray.processor_id
    )


def test_runs_belong_to_their_installation_and_helpers_check_their_input(platform, make_api, money_stack):
    done = run(platform)
    other = make_api(kind="platform")
    assert_error(other.get(f"/v1/reconciliation-runs/{done['id']}"), 404, "resource_missing", "run")
    assert_error(
        platform.post("/v1/test-helpers/processor-transfers/tr_" + "0" * 24 + "/lose"),
        404,
        "resource_missing",
        "transfer",
    )
    assert_error(
        platform.post("/v1/reconciliation-runs", json={"scope": "all"}), 400, "parameter_unknown", "scope"
    )
