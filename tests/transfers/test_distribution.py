"""A payment declared with a distribution (platform installations): checked at creation, and after
capture one allocation_commit operation makes its transfers, the commission taken from the merchant
allocations in proportion (largest remainder)."""

from __future__ import annotations

from tests.connect.support import create_account
from tests.helpers import assert_error, count_rows
from tests.payments.support import create_payment, event_types, ledger_balance, set_commission
from tests.transfers.support import account_balance, distributed, group_of


def payment_with(api, amount, allocations, **fields):
    distribution = {
        "allocations": [{"recipient": r, "role": role, "amount": a} for r, role, a in allocations],
        **fields,
    }
    return api.post(
        "/v1/payment-intents", json={"amount": amount, "currency": "eur", "distribution": distribution}
    )


def test_a_distributed_payment_pays_each_recipient_once_captured(platform, db, money_stack):
    courier, driver = create_account(platform, "courier"), create_account(platform, "driver")
    payment = distributed(platform, 2500, [(courier["id"], "courier", 1500), (driver["id"], "other", 1000)])
    group = group_of(platform, payment["id"])
    assert (group["status"], group["source"], group["amount"]) == ("committed", "distribution", 2500)
    assert platform.get(f"/v1/operations/{group['operation']}").json()["type"] == "allocation_commit"
    transfers = {item["destination"]: item for item in group["transfers"]}
    assert {key: (item["amount"], item["status"]) for key, item in transfers.items()} == {
        courier["id"]: (1500, "paid"),
        driver["id"]: (1000, "paid"),
    }
    assert all(item["source_transaction"] == payment["id"] for item in transfers.values())
    # the proceeds left the platform's pending balance for the recipients' pending balances
    assert account_balance(platform, courier["id"]) == (0, 1500)
    assert account_balance(platform, driver["id"]) == (0, 1000)
    assert ledger_balance(db, platform.keys.installation_id, "balance:pending") == 0
    tr = transfers[courier["id"]]["id"]
    assert event_types(platform, tr) == ["transfer.created", "transfer.paid"]
    assert event_types(platform, group["id"]) == [
        "allocation_group.created",
        "allocation_group.updated",
        "allocation_group.updated",
    ]


def test_the_commission_comes_from_merchant_allocations_in_proportion_and_settles_later(
    platform, bridge, db, money_stack
):
    set_commission(bridge, platform.keys, 250, 30)  # 10000 -> a reserve of 280
    shop_a, shop_b = create_account(platform, "merchant"), create_account(platform, "merchant")
    courier, developer = create_account(platform, "courier"), create_account(platform, "other")
    payment = distributed(
        platform,
        10000,
        [
            (shop_a["id"], "merchant", 6000),
            (shop_b["id"], "merchant", 3000),
            (courier["id"], "courier", 700),
            (developer["id"], "developer", 300),
        ],
        merchant_of_record=shop_a["id"],
    )
    group = group_of(platform, payment["id"])
    shown = platform.get(f"/v1/payment-intents/{payment['id']}").json()["distribution"]
    assert shown["merchant_of_record"] == shop_a["id"] and shown["allocation_group"] == group["id"]
    assert [(a["recipient"], a["amount"], a["commission"]) for a in shown["allocations"]][:2] == [
        (shop_a["id"], 6000, 187),
        (shop_b["id"], 3000, 93),
    ]
    # 280 over 6000:3000 is 186.67 and 93.33: the leftover unit goes to the larger remainder
    assert [(a["gross_amount"], a["commission"], a["amount"]) for a in group["allocations"]] == [
        (6000, 187, 5813),
        (3000, 93, 2907),
        (700, 0, 700),
        (300, 0, 300),
    ]
    assert sum(item["amount"] for item in group["transfers"]) == 10000 - 280
    assert account_balance(platform, shop_a["id"]) == (0, 5813)
    # three sandbox days later the processor reports the cost: every recipient's money becomes available
    platform.post("/v1/test-helpers/clock/advance", json={"seconds": 3 * 86400 + 60})
    assert account_balance(platform, shop_a["id"]) == (5813, 0)
    assert account_balance(platform, courier["id"]) == (700, 0)
    installation = platform.keys.installation_id
    assert ledger_balance(db, installation, "balance:pending") == 0
    assert ledger_balance(db, installation, "balance:available") == 0


def test_a_distribution_that_does_not_add_up_or_names_the_wrong_recipients_is_refused(
    platform, make_api, db, bridge
):
    mine = create_account(platform, "merchant")["id"]
    other = create_account(platform, "courier")["id"]
    foreign = create_account(make_api(kind="platform"))["id"]
    cases = [
        ([(mine, "merchant", 900)], {}, "distribution[allocations]"),
        ([(mine, "merchant", 600), (other, "courier", 500)], {}, "distribution[allocations]"),
        ([(foreign, "merchant", 1000)], {}, "distribution[allocations][0][recipient]"),
        (
            [(mine, "merchant", 500), ("sbx_tr_1234", "courier", 500)],
            {},
            "distribution[allocations][1][recipient]",
        ),
        ([("mer_" + "a" * 24, "merchant", 1000)], {}, "distribution[allocations][0][recipient]"),
        ([("acct_" + "b" * 24, "merchant", 1000)], {}, "distribution[allocations][0][recipient]"),
        (
            [(mine, "merchant", 500), (other, "courier", 500)],
            {"merchant_of_record": other},
            "distribution[merchant_of_record]",
        ),
        ([(mine, "boss", 1000)], {}, "distribution[allocations][0][role]"),
    ]
    for allocations, fields, param in cases:
        assert_error(payment_with(platform, 1000, allocations, **fields), 400, "distribution_invalid", param)
    assert count_rows(db, "payment_intents", platform.keys.installation_id) == 0
    assert count_rows(db, "payment_distributions", platform.keys.installation_id) == 0


def test_allocations_take_amounts_not_basis_points_on_a_payment(platform):
    account = create_account(platform)["id"]
    body = {
        "amount": 1000,
        "currency": "eur",
        "distribution": {"allocations": [{"recipient": account, "role": "merchant", "basis_points": 10000}]},
    }
    answer = platform.post("/v1/payment-intents", json=body)
    assert_error(answer, 400, "distribution_invalid", "distribution[allocations][0][basis_points]")


def test_merchant_allocations_must_be_able_to_carry_the_commission(platform, bridge):
    set_commission(bridge, platform.keys, 1000, 0)  # 10 %: 100 of 1000
    shop, courier = create_account(platform, "merchant")["id"], create_account(platform, "courier")["id"]
    refused = payment_with(platform, 1000, [(shop, "merchant", 50), (courier, "courier", 950)])
    assert_error(refused, 400, "distribution_invalid", "distribution[allocations]")
    assert (
        payment_with(platform, 1000, [(shop, "merchant", 100), (courier, "courier", 900)]).status_code == 200
    )


def test_a_direct_installation_cannot_distribute(api):
    account = create_account(api)["id"]
    assert_error(
        payment_with(api, 1000, [(account, "merchant", 1000)]), 400, "distribution_invalid", "distribution"
    )
    assert create_payment(api, 1000)["status"] == "requires_payment_method"


def test_a_commission_unit_that_cannot_be_split_evenly_goes_to_the_earlier_merchant(
    platform, bridge, money_stack
):
    set_commission(bridge, platform.keys, 0, 1)  # a fixed commission of one unit
    first, second = create_account(platform, "merchant")["id"], create_account(platform, "merchant")["id"]
    payment = distributed(platform, 1000, [(first, "merchant", 500), (second, "merchant", 500)])
    group = group_of(platform, payment["id"])
    assert [(a["recipient"], a["commission"], a["amount"]) for a in group["allocations"]] == [
        (first, 1, 499),
        (second, 0, 500),
    ]
