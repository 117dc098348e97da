"""Allocation groups after capture: reserve, allocate, commit (202 + operation), and POST /v1/transfers as
a one-recipient group committed at once. Reservations never exceed what the payment can distribute."""

from __future__ import annotations

import threading

import httpx

from tests.connect.support import create_account
from tests.engine.conftest import wait_for_operation
from tests.harness import TLS, add_key
from tests.helpers import assert_error, count_rows
from tests.payments.support import confirm, create_payment, event_types, paid
from tests.transfers.support import FINAL, account_balance, allocate, committed_group, reserve


def test_a_group_is_reserved_allocated_and_committed_into_paid_transfers(platform, money_stack):
    payment = paid(platform, 5000)
    courier, driver = create_account(platform, "courier"), create_account(platform, "driver")
    created = reserve(platform, payment["id"], 4000)
    assert created.status_code == 200, created.text
    group = created.json()
    assert group["id"].startswith("ag_") and group["object"] == "allocation_group"
    assert (group["status"], group["amount"], group["amount_allocated"], group["operation"]) == (
        "open",
        4000,
        0,
        None,
    )
    allocate(platform, group["id"], courier["id"], 2500, role="courier", metadata={"order": "7"})
    after = allocate(platform, group["id"], driver["id"], 1000).json()
    assert [(a["recipient"], a["amount"], a["transfer"]) for a in after["allocations"]] == [
        (courier["id"], 2500, None),
        (driver["id"], 1000, None),
    ]
    assert after["amount_allocated"] == 3500

    committed = platform.post(f"/v1/allocation-groups/{group['id']}/commit")
    assert committed.status_code == 202, committed.text
    operation = committed.json()
    assert (operation["object"], operation["type"], operation["resource"]) == (
        "operation",
        "allocation_commit",
        group["id"],
    )
    assert wait_for_operation(platform, operation["id"], FINAL)["status"] == "succeeded"
    done = platform.get(f"/v1/allocation-groups/{group['id']}").json()
    assert done["status"] == "committed" and done["operation"] == operation["id"]
    assert [(t["destination"], t["amount"], t["status"]) for t in done["transfers"]] == [
        (courier["id"], 2500, "paid"),
        (driver["id"], 1000, "paid"),
    ]
    assert done["transfers"][0]["metadata"] == {"order": "7"}
    assert {a["transfer"] for a in done["allocations"]} == {t["id"] for t in done["transfers"]}
    assert account_balance(platform, courier["id"]) == (0, 2500)
    # what was reserved but not allocated went back: 5000 - 3500 can be reserved again
    assert_error(reserve(platform, payment["id"], 1501), 400, "amount_invalid", "amount")
    assert reserve(platform, payment["id"], 1500).status_code == 200
    assert_error(platform.post(f"/v1/allocation-groups/{group['id']}/commit"), 409, "resource_state_invalid")
    assert_error(allocate(platform, group["id"], courier["id"], 1), 409, "resource_state_invalid")


def test_allocations_never_exceed_the_reservation_and_name_only_this_tenants_accounts(platform, make_api, db):
    payment = paid(platform, 3000)
    mine = create_account(platform)["id"]
    foreign = create_account(make_api(kind="platform"))["id"]
    group = reserve(platform, payment["id"], 1000).json()
    assert_error(allocate(platform, group["id"], mine, 1001), 400, "amount_invalid", "amount")
    assert_error(allocate(platform, group["id"], foreign, 100), 400, "resource_missing", "recipient")
    assert_error(allocate(platform, group["id"], "sbx_tr_abc", 100), 400, "parameter_invalid", "recipient")
    assert_error(allocate(platform, group["id"], mine, 100, surprise=1), 400, "parameter_unknown", "surprise")
    assert count_rows(db, "allocations", platform.keys.installation_id) == 0
    assert_error(platform.post(f"/v1/allocation-groups/{group['id']}/commit"), 409, "resource_state_invalid")


def test_only_a_captured_payment_of_this_tenant_can_be_reserved(platform, make_api, db):
    held = create_payment(platform, 1000, capture_method="manual")
    confirm(platform, held)
    assert_error(reserve(platform, held["id"], 100), 409, "resource_state_invalid")
    foreign = paid(make_api(kind="platform"), 1000)
    assert_error(reserve(platform, foreign["id"], 100), 400, "resource_missing", "payment_intent")
    assert_error(reserve(platform, "pi_" + "0" * 24, 100), 400, "resource_missing", "payment_intent")
    assert count_rows(db, "allocation_groups", platform.keys.installation_id) == 0
    assert_error(
        platform.get("/v1/allocation-groups/ag_" + "0" * 24), 404, "resource_missing", "allocation_group"
    )


def test_two_reservations_at_the_same_moment_never_exceed_the_payment(platform, web, db):
    """Two connections race for 700 of a 1000 payment: the payment's lock lets exactly one win."""
    payment = paid(platform, 1000)
    start = threading.Barrier(2)
    statuses: list[int] = []

    def attempt() -> None:
        with httpx.Client(
            base_url=web.base_url, headers=dict(platform.headers), timeout=30, verify=TLS
        ) as client:
            start.wait()
            statuses.append(reserve(client, payment["id"], 700).status_code)

    threads = [threading.Thread(target=attempt) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [200, 400]
    row = db.execute(
        "SELECT coalesce(sum(amount), 0) FROM allocation_groups WHERE payment_intent_id = %s",
        (payment["id"],),
    ).fetchone()
    assert row[0] == 700


def test_post_transfers_is_a_one_recipient_group_committed_at_once(platform, money_stack):
    payment = paid(platform, 2000)
    courier = create_account(platform)
    answer = platform.post(
        "/v1/transfers",
        json={
            "destination": courier["id"],
            "amount": 1200,
            "source_transaction": payment["id"],
            "metadata": {"k": "v"},
        },
    )
    assert answer.status_code == 200, answer.text
    transfer = answer.json()
    assert transfer["id"].startswith("tr_") and transfer["object"] == "transfer"
    assert (transfer["status"], transfer["amount"], transfer["currency"]) == ("pending", 1200, "eur")
    group = platform.get(f"/v1/allocation-groups/{transfer['allocation_group']}").json()
    assert (group["source"], group["status"] in {"committing", "committed"}) == ("transfer", True)
    # the answer names the operation that makes it, as a refund's does (CONVENTIONS.md §9)
    assert transfer["operation"] == group["operation"] and transfer["operation"].startswith("op_")
    operation = platform.get(f"/v1/operations/{transfer['operation']}").json()
    assert (operation["type"], operation["resource"]) == ("transfer", group["id"])
    wait_for_operation(platform, transfer["operation"], FINAL)
    read = platform.get(f"/v1/transfers/{transfer['id']}").json()
    assert (read["operation"], read["last_operation_error"]) == (transfer["operation"], None)
    assert (read["status"], read["amount_reversed"], read["reversals"], read["metadata"]) == (
        "paid",
        0,
        [],
        {"k": "v"},
    )
    listed = platform.get("/v1/transfers", params={"destination": courier["id"]}).json()["data"]
    assert [item["id"] for item in listed] == [transfer["id"]]
    assert event_types(platform, transfer["id"]) == ["transfer.created", "transfer.paid"]
    over = platform.post(
        "/v1/transfers",
        json={"destination": courier["id"], "amount": 801, "source_transaction": payment["id"]},
    )
    assert_error(over, 400, "amount_invalid", "amount")
    wrong_currency = platform.post(
        "/v1/transfers",
        json={
            "destination": courier["id"],
            "amount": 1,
            "source_transaction": payment["id"],
            "currency": "usd",
        },
    )
    assert_error(wrong_currency, 400, "currency_invalid", "currency")


def test_groups_and_transfers_answer_only_to_their_own_tenant(platform, make_api, money_stack):
    payment = paid(platform, 1000)
    group = committed_group(platform, payment["id"], [(create_account(platform)["id"], 400)])
    other = make_api(kind="platform")
    assert_error(
        other.get(f"/v1/allocation-groups/{group['id']}"), 404, "resource_missing", "allocation_group"
    )
    transfer_id = group["transfers"][0]["id"]
    assert_error(other.get(f"/v1/transfers/{transfer_id}"), 404, "resource_missing", "transfer")
    assert_error(other.post(f"/v1/transfers/{transfer_id}/reversals"), 404, "resource_missing", "transfer")
    assert other.get("/v1/transfers").json()["data"] == []


def test_transfer_routes_need_the_transfers_scope(platform, web, bridge):
    payments_only = add_key(bridge, platform.keys.tenant, ("payments:write",))
    with httpx.Client(
        base_url=web.base_url, headers={"Authorization": f"Bearer {payments_only}"}, verify=TLS
    ) as client:
        assert_error(client.get("/v1/transfers"), 403, "insufficient_scope")
        assert_error(client.post("/v1/allocation-groups", json={}), 403, "insufficient_scope")


def test_a_refund_since_the_reservation_stops_the_commit_of_money_no_longer_there(platform, money_stack):
    payment = paid(platform, 1000)
    group = reserve(platform, payment["id"], 1000).json()
    allocate(platform, group["id"], create_account(platform)["id"], 1000)
    refund = platform.post("/v1/refunds", json={"payment_intent": payment["id"], "amount": 600}).json()
    assert wait_for_operation(platform, refund["operation"], FINAL)["status"] == "succeeded"
    assert_error(platform.post(f"/v1/allocation-groups/{group['id']}/commit"), 409, "resource_state_invalid")
    assert platform.get(f"/v1/allocation-groups/{group['id']}").json()["status"] == "open"
