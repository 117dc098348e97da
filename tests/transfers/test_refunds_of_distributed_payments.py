"""Refunding a distributed payment: the refund operation first takes back from every transfer the share
of it that the payer gets back (largest remainder over the transfers), then refunds; a refund the
platform could only pay with money it no longer holds fails before anything moves."""

from __future__ import annotations

from tests.connect.support import create_account
from tests.engine.conftest import wait_for_operation
from tests.payments.support import ledger_balance, paid, set_commission
from tests.transfers.support import FINAL, account_balance, distributed, group_of


def refund(api, payment_id: str, **fields) -> dict:
    created = api.post("/v1/refunds", json={"payment_intent": payment_id, **fields})
    assert created.status_code == 200, created.text
    wait_for_operation(api, created.json()["operation"], FINAL)
    body: dict = api.get(f"/v1/refunds/{created.json()['id']}").json()
    return body


def transfers_of(api, payment_id: str) -> dict[str, dict]:
    listed = api.get("/v1/transfers", params={"source_transaction": payment_id, "limit": 100}).json()["data"]
    return {item["destination"]: item for item in listed}


def test_a_partial_refund_takes_back_the_same_share_of_every_transfer_in_the_same_operation(
    platform, db, money_stack
):
    shop, courier = create_account(platform, "merchant")["id"], create_account(platform, "courier")["id"]
    payment = distributed(platform, 10000, [(shop, "merchant", 6000), (courier, "courier", 4000)])
    group_of(platform, payment["id"])
    half = refund(platform, payment["id"], amount=5000)
    assert half["status"] == "succeeded"
    transfers = transfers_of(platform, payment["id"])
    assert (transfers[shop]["amount_reversed"], transfers[courier]["amount_reversed"]) == (3000, 2000)
    assert {reversal["refund"] for t in transfers.values() for reversal in t["reversals"]} == {half["id"]}
    assert account_balance(platform, shop) == (0, 3000)
    installation = platform.keys.installation_id
    assert ledger_balance(db, installation, "balance:pending") == 0
    assert ledger_balance(db, installation, "world:card_network") == -5000

    rest = refund(platform, payment["id"])
    assert (rest["status"], rest["amount"]) == ("succeeded", 5000)
    transfers = transfers_of(platform, payment["id"])
    assert {t["status"] for t in transfers.values()} == {"reversed"}
    assert account_balance(platform, shop) == (0, 0) and account_balance(platform, courier) == (0, 0)
    assert ledger_balance(db, installation, "world:card_network") == 0
    assert ledger_balance(db, installation, "balance:pending") == 0


def test_an_uneven_refund_keeps_every_unit_and_gives_the_leftover_to_the_larger_remainder(
    platform, money_stack
):
    first, second = create_account(platform)["id"], create_account(platform)["id"]
    payment = distributed(platform, 1001, [(first, "merchant", 501), (second, "courier", 500)])
    group_of(platform, payment["id"])
    assert refund(platform, payment["id"], amount=333)["status"] == "succeeded"
    transfers = transfers_of(platform, payment["id"])
    # 333 of 1001: 166.67 and 166.33; the unit left over goes to the larger remainder
    assert (transfers[first]["amount_reversed"], transfers[second]["amount_reversed"]) == (167, 166)


def test_the_withheld_commission_of_a_refund_is_paid_from_the_platforms_own_balance_or_not_at_all(
    platform, bridge, db, money_stack
):
    set_commission(bridge, platform.keys, 250, 30)  # 10000 -> 280 withheld
    shop, courier = create_account(platform, "merchant")["id"], create_account(platform, "courier")["id"]
    payment = distributed(platform, 10000, [(shop, "merchant", 9000), (courier, "courier", 1000)])
    group_of(platform, payment["id"])
    installation = platform.keys.installation_id
    assert ledger_balance(db, installation, "balance:pending") == 0  # everything went out

    refused = refund(platform, payment["id"])
    assert refused["status"] == "failed" and "insufficient_platform_balance" in refused["failure_reason"]
    assert {t["amount_reversed"] for t in transfers_of(platform, payment["id"]).values()} == {0}
    assert account_balance(platform, shop) == (0, 9000 - 280)
    assert platform.get(f"/v1/payment-intents/{payment['id']}").json()["amount_refunded"] == 0

    own = paid(platform, 2000)  # a payment of the platform's own: 2000 - 80 withheld stay with it
    assert ledger_balance(db, installation, "balance:pending") == 2000 - 80
    done = refund(platform, payment["id"])
    assert done["status"] == "succeeded"
    assert {t["status"] for t in transfers_of(platform, payment["id"]).values()} == {"reversed"}
    # the 280 came out of what the platform holds (its balance, pending and available together)
    held = ledger_balance(db, installation, "balance:pending") + ledger_balance(
        db, installation, "balance:available"
    )
    assert held == 2000 - 80 - 280
    assert own["status"] == "succeeded"
