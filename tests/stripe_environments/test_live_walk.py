"""Issue 31's walk, over HTTP with real workers: a live platform on Stripe (the double in front of
localstripe) takes a payment with a Stripe.js token, captures, refunds part, distributes to two
connected accounts (each made at Stripe as a Custom account by its own operation), reverses one
transfer, pays out from a connected account (as its Stripe account; paid by Stripe's webhook, then
reversed), receives a dispute by Stripe's
webhook and submits evidence; `moneyrail ledger verify` passes, and Stripe holds each object once, with
the right amounts and accounts, none of whose ids reached an answer. And Stripe failing once on an
account's creation or on a transfer: the operation retries under the same key, one object at Stripe."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.conftest import Api
from tests.connect.support import (
    GOOD_BANK_ACCOUNT,
    ONBOARDING_FORM,
    create_account,
    onboarding_url,
    submit_onboarding,
)
from tests.disputes.support import png_bytes, upload
from tests.engine.conftest import wait_for_operation
from tests.harness import TLS, create_tenant, use_stripe, verify_ledger_as_an_operator_does
from tests.merchants.support import RETURN_URL, connect, register_redirect_uris
from tests.payments.support import wait_for
from tests.processor.stripe.servers import SECRET_KEY
from tests.stripe_environments.conftest import StripeEnvironments
from tests.stripe_environments.support import (
    card_token,
    charge_of,
    confirm_with_token,
    double_requests,
    fail_next,
    post_event,
    processor_authorization,
    signed_event,
    stripe_get,
    stripe_ids,
)
from tests.stripe_environments.test_stripe_webhooks import applied, webhook_secret


def at_stripe(on_stripe: StripeEnvironments, kind: str, installation: str) -> list[dict[str, Any]]:
    """The double's own objects of a kind that this installation made (metadata), oldest first."""
    found = httpx.get(
        f"{on_stripe.stripe.double}/_double/objects", params={"object": kind}, verify=TLS
    ).json()["data"]
    return [each for each in found if each.get("metadata", {}).get("installation_id") == installation]


def processor_account(db: Any, account_id: str) -> str | None:
    (linked,) = db.execute(
        "SELECT processor_account FROM connected_accounts WHERE id = %s", (account_id,)
    ).fetchone()
    return None if linked is None else str(linked)


def account_operation(db: Any, account_id: str) -> str:
    (operation_id,) = db.execute(
        "SELECT id FROM operations WHERE resource = %s AND type = 'connected_account'", (account_id,)
    ).fetchone()
    return str(operation_id)


def details_operation(db: Any, account_id: str) -> str:
    (operation_id,) = db.execute(
        "SELECT id FROM operations WHERE resource = %s AND type = 'connected_account_details'", (account_id,)
    ).fetchone()
    return str(operation_id)


def linked_account(
    on_stripe: StripeEnvironments, api: Api, db: Any, *, onboard: bool = True
) -> tuple[dict[str, Any], str]:
    """A connected account made over the API (and onboarded on the hosted page), once its operation
    made it at Stripe and, onboarded, its holder reached it there (whichever of the account's making
    and the onboarding came first): moneyrail's answer, and Stripe's id of it (kept inside)."""
    account = create_account(api)
    if onboard:
        assert submit_onboarding(onboarding_url(api, account["id"])).status_code == 200
    wait_for_operation(api, account_operation(db, account["id"]), {"succeeded"})
    stripe_id = processor_account(db, account["id"])
    assert stripe_id is not None and stripe_id.startswith("acct_")
    installation = api.keys.installation_id
    (made,) = [each for each in at_stripe(on_stripe, "account", installation) if each["id"] == stripe_id]
    assert made["external_accounts"]["data"][0]["last4"] == GOOD_BANK_ACCOUNT[-4:]
    if onboard:
        wait_for_operation(api, details_operation(db, account["id"]), {"succeeded"})
        (onboarded,) = [
            each for each in at_stripe(on_stripe, "account", installation) if each["id"] == stripe_id
        ]
        person, terms = onboarded["individual"], onboarded["tos_acceptance"]
        assert (person["first_name"], person["last_name"]) == (
            ONBOARDING_FORM["first_name"],
            ONBOARDING_FORM["last_name"],
        )
        assert terms["date"] is not None and terms["ip"] == "127.0.0.1"
        # onboarding sent the person only: the bank account made with the account is still its default
        assert onboarded["external_accounts"]["data"] == made["external_accounts"]["data"]
    return account, stripe_id


def captured_payment(on_stripe: StripeEnvironments, api: httpx.Client, amount: int) -> dict[str, Any]:
    created = api.post(
        "/v1/payment-intents", json={"amount": amount, "currency": "eur", "capture_method": "manual"}
    )
    assert created.status_code == 200, created.text
    confirmed = confirm_with_token(api, created.json(), card_token(on_stripe.stripe))
    assert confirmed.status_code == 200 and confirmed.json()["status"] == "requires_capture", confirmed.text
    captured = api.post(f"/v1/payment-intents/{created.json()['id']}/capture")
    assert captured.status_code == 200, captured.text
    assert (captured.json()["status"], captured.json()["amount_received"]) == ("succeeded", amount)
    payment: dict[str, Any] = captured.json()
    return payment


def deliver(
    on_stripe: StripeEnvironments, db: Any, installation: str, secret: str, kind: str, found: dict[str, Any]
) -> str:
    """A webhook event signed as Stripe signs it, posted to the live environment's route; what it did."""
    body, signature, event_id = signed_event(kind, found, secret, livemode=True)
    received = post_event(on_stripe.web.base_url, installation, "live", body, signature)
    assert received.status_code == 200, received.text
    return applied(db, installation, event_id)


def test_the_walk_on_stripe_over_http(on_stripe: StripeEnvironments, db: Any, servers: Any) -> None:
    secret = webhook_secret()
    live = on_stripe.api(livemode=True, kind="platform", webhook_secret=secret)
    installation = live.keys.installation_id
    answers: list[str] = []  # every answer moneyrail gave, searched for Stripe's ids at the end

    # two connected accounts, each made at Stripe by its own operation
    (courier, courier_at_stripe), (driver, driver_at_stripe) = (
        linked_account(on_stripe, live, db),
        linked_account(on_stripe, live, db),
    )
    for account in (courier, driver):
        shown = live.get(f"/v1/connected-accounts/{account['id']}")
        assert shown.json()["capabilities"] == {"transfers": "active", "payouts": "active"}
        answers.append(shown.text)

    # a payment with a Stripe.js token, captured, refunded in part
    payment = captured_payment(on_stripe, live, 10_000)
    refund = live.post("/v1/refunds", json={"payment_intent": payment["id"], "amount": 1_500})
    assert refund.status_code == 200, refund.text
    wait_for_operation(live, refund.json()["operation"], {"succeeded"})
    intent_id = processor_authorization(db, payment["id"])
    charge = charge_of(on_stripe.stripe, intent_id)
    assert (charge["amount"], charge["amount_refunded"]) == (10_000, 1_500)

    # distributed to the two accounts: one commit, two transfers at Stripe from the payment's charge
    group = live.post("/v1/allocation-groups", json={"payment_intent": payment["id"], "amount": 6_000})
    assert group.status_code == 200, group.text
    for recipient, amount in ((courier["id"], 4_000), (driver["id"], 2_000)):
        added = live.post(
            f"/v1/allocation-groups/{group.json()['id']}/allocations",
            json={"recipient": recipient, "amount": amount},
        )
        assert added.status_code == 200, added.text
    committed = live.post(f"/v1/allocation-groups/{group.json()['id']}/commit")
    assert committed.status_code == 202, committed.text
    wait_for_operation(live, committed.json()["id"], {"succeeded"})
    listed = live.get("/v1/transfers", params={"allocation_group": group.json()["id"]}).json()["data"]
    transfers = {transfer["destination"]: transfer for transfer in listed}
    assert {account: t["status"] for account, t in transfers.items()} == {
        courier["id"]: "paid",
        driver["id"]: "paid",
    }

    # one transfer reversed in part
    reversal = live.post(f"/v1/transfers/{transfers[driver['id']]['id']}/reversals", json={"amount": 500})
    assert reversal.status_code == 200, reversal.text
    answers.append(reversal.text)

    # Stripe books the charge: the payment's fees become final, the accounts' money available
    assert deliver(on_stripe, db, installation, secret, "charge.updated", charge).endswith("fees final")
    balance = live.get(f"/v1/connected-accounts/{courier['id']}/balance").json()
    assert [(each["amount"], each["currency"]) for each in balance["available"]] == [(4_000, "eur")]

    # a payout of the courier's, made at Stripe as its own account
    payout = live.post(
        f"/v1/connected-accounts/{courier['id']}/payouts", json={"amount": 1_000, "currency": "eur"}
    )
    assert payout.status_code == 200, payout.text
    wait_for_operation(live, payout.json()["operation"], {"succeeded"})
    shown_payout = live.get(f"/v1/payouts/{payout.json()['id']}")
    assert shown_payout.json()["status"] == "in_transit"
    answers.append(shown_payout.text)
    # Stripe reports it paid (a Connect event: the account's own payout); then it is reversed, as that
    # account again (the double finds another account's payout missing)
    (payout_at_stripe,) = at_stripe(on_stripe, "payout", installation)
    paid_event = {**payout_at_stripe, "status": "paid"}
    assert deliver(on_stripe, db, installation, secret, "payout.paid", paid_event).endswith("paid")
    reversed_payout = live.post(f"/v1/payouts/{payout.json()['id']}/reverse", json={})
    assert reversed_payout.status_code == 200, reversed_payout.text
    wait_for_operation(live, reversed_payout.json()["operation"], {"succeeded"})
    assert live.get(f"/v1/payouts/{reversed_payout.json()['id']}").json()["status"] == "in_transit"

    # the card network opens a dispute at Stripe, which reports it by webhook
    opened = httpx.post(
        f"{on_stripe.stripe.double}/_double/disputes",
        json={"charge": charge["id"], "amount": 1_000},
        verify=TLS,
    )
    assert opened.status_code == 200, opened.text
    assert deliver(on_stripe, db, installation, secret, "charge.dispute.created", opened.json()).endswith(
        "opened"
    )
    (dispute,) = live.get("/v1/disputes", params={"payment_intent": payment["id"]}).json()["data"]
    wait_for(lambda: live.get(f"/v1/disputes/{dispute['id']}").json()["withdrawal_status"] == "succeeded")

    # evidence, with a receipt, submitted to Stripe
    receipt = upload(live, dispute["id"], png_bytes(), "receipt.png", "image/png")
    assert receipt.status_code == 200, receipt.text
    submitted = live.post(
        f"/v1/disputes/{dispute['id']}/evidence",
        json={
            "evidence": {"product_description": "A delivery", "receipt": receipt.json()["id"]},
            "submit": True,
        },
    )
    assert submitted.status_code == 200, submitted.text
    assert submitted.json()["status"] == "under_review"
    answers.append(submitted.text)

    # Stripe's side: each object once, the right amounts, the right accounts
    accounts = at_stripe(on_stripe, "account", installation)
    assert sorted((each["id"], each["type"], each["metadata"]["reference"]) for each in accounts) == sorted(
        [(courier_at_stripe, "custom", courier["id"]), (driver_at_stripe, "custom", driver["id"])]
    )
    made = at_stripe(on_stripe, "transfer", installation)
    assert sorted(
        (each["destination"], each["amount"], each["source_transaction"]) for each in made
    ) == sorted([(courier_at_stripe, 4_000, charge["id"]), (driver_at_stripe, 2_000, charge["id"])])
    reversed_at_stripe = {each["destination"]: each["amount_reversed"] for each in made}
    for account, stripe_id in ((courier, courier_at_stripe), (driver, driver_at_stripe)):
        shown = live.get(f"/v1/transfers/{transfers[account['id']]['id']}")
        answers.append(shown.text)
        assert shown.json()["amount_reversed"] == reversed_at_stripe[stripe_id]
    assert reversed_at_stripe[driver_at_stripe] > 500  # the reversal, then the dispute's share
    payout_at_stripe, reversal_at_stripe = at_stripe(on_stripe, "payout", installation)
    assert (payout_at_stripe["amount"], payout_at_stripe["reversed_by"]) == (1_000, reversal_at_stripe["id"])
    assert (reversal_at_stripe["amount"], reversal_at_stripe["original_payout"]) == (
        1_000,
        payout_at_stripe["id"],
    )
    payout_calls = [
        (entry["path"], entry["stripe_account"])
        for entry in double_requests(on_stripe.stripe)
        if entry["method"] == "POST"
        and entry["path"].startswith("/v1/payouts")
        and entry["status"] == 200
        and entry["stripe_account"] in (courier_at_stripe, driver_at_stripe)
    ]
    assert payout_calls == [
        ("/v1/payouts", courier_at_stripe),
        (f"/v1/payouts/{payout_at_stripe['id']}/reverse", courier_at_stripe),
    ]
    dispute_at_stripe = stripe_get(on_stripe.stripe, f"/v1/disputes/{opened.json()['id']}")
    assert dispute_at_stripe["status"] == "under_review"
    assert "A delivery" in dispute_at_stripe["evidence"]["uncategorized_text"]  # the text, as one
    assert dispute_at_stripe["evidence"]["receipt"].startswith("file_")
    assert dispute_at_stripe["evidence_details"]["submission_count"] == 1

    # none of Stripe's ids reached an answer
    answers.append(live.get("/v1/connected-accounts").text)
    answers.append(live.get("/v1/events", params={"limit": 100}).text)
    shown_text = "\n".join(answers) + json.dumps(listed)
    leaked = {
        found
        for found in stripe_ids([accounts, made, payout_at_stripe, reversal_at_stripe, dispute_at_stripe])
        if found in shown_text
    }
    assert not leaked, leaked

    # reconciliation against Stripe's listing: the books agree; a transfer made at Stripe outside
    # moneyrail is reported without showing Stripe's id
    assert reconciled(live)["issues"] == []
    stray = httpx.post(
        f"{on_stripe.stripe.double}/v1/transfers",
        data={
            "amount": "77",
            "currency": "eur",
            "destination": driver_at_stripe,
            "metadata[installation_id]": installation,
        },
        auth=(SECRET_KEY, ""),
        verify=TLS,
    )
    assert stray.status_code == 200, stray.text
    reported = reconciled(live)
    assert [
        (issue["type"], issue["processor_transfer"], issue["actual"]) for issue in reported["issues"]
    ] == [("missing_in_ledger", None, 77)]
    assert stray.json()["id"] not in json.dumps(reported)
    verify_ledger_as_an_operator_does(servers)


def reconciled(api: httpx.Client) -> dict[str, Any]:
    created = api.post("/v1/reconciliation-runs")
    assert created.status_code == 202, created.text
    wait_for_operation(api, created.json()["operation"]["id"], {"succeeded"})
    done: dict[str, Any] = api.get(f"/v1/reconciliation-runs/{created.json()['id']}").json()
    assert (done["status"], done["transfers_checked"]) == ("completed", 2 + len(done["issues"]))
    return done


@pytest.mark.parametrize("failing", ["/v1/accounts", "/v1/transfers"], ids=["account", "transfer"])
def test_stripe_failing_once_after_making_it_is_retried_into_one_object(
    on_stripe: StripeEnvironments, db: Any, failing: str
) -> None:
    live = on_stripe.api(livemode=True, kind="platform")
    installation = live.keys.installation_id
    if failing == "/v1/accounts":
        fail_next(on_stripe.stripe, failing, when="after")  # made at Stripe, its answer lost
    account, stripe_id = linked_account(on_stripe, live, db, onboard=False)
    payment = captured_payment(on_stripe, live, 5_000)
    if failing == "/v1/transfers":
        fail_next(on_stripe.stripe, failing, when="after")
    created = live.post(
        "/v1/transfers",
        json={"destination": account["id"], "amount": 2_500, "source_transaction": payment["id"]},
    )
    assert created.status_code == 200, created.text
    operation = wait_for_operation(live, created.json()["operation"], {"succeeded"})
    assert live.get(f"/v1/transfers/{created.json()['id']}").json()["status"] == "paid"
    calls = [
        entry
        for entry in double_requests(on_stripe.stripe)
        if (entry["method"], entry["path"]) == ("POST", failing)
        and entry["idempotency_key"] is not None
        and entry["idempotency_key"].startswith(
            account_operation(db, account["id"]) if failing == "/v1/accounts" else operation["id"]
        )
    ]
    # the engine asked again under the same key, and Stripe replayed what it had made
    assert [entry["status"] for entry in calls] == [500, 200]
    assert len({entry["idempotency_key"] for entry in calls}) == 1
    assert [each["id"] for each in at_stripe(on_stripe, "account", installation)] == [stripe_id]
    made = at_stripe(on_stripe, "transfer", installation)
    assert [(each["destination"], each["amount"]) for each in made] == [(stripe_id, 2_500)]


def test_an_account_made_before_the_environment_was_on_stripe_is_made_there_when_money_goes_to_it(
    on_stripe: StripeEnvironments, db: Any
) -> None:
    from moneyrail.connect import service as connect
    from moneyrail.connect.schemas import ConnectedAccountCreate

    keys = create_tenant(on_stripe.bridge, livemode=False, kind="platform")
    sandbox = Api(on_stripe.web.base_url, keys)
    on_stripe.clients.append(sandbox)

    async def on_the_simulator(session: Any) -> dict[str, Any]:
        # made here, not over HTTP: the service's processes would remember the simulator for a while
        command = ConnectedAccountCreate.model_validate(
            {"kind": "courier", "external_account": {"account_number": GOOD_BANK_ACCOUNT}}
        )
        return {"id": (await connect.create_connected_account(session, keys.tenant, command)).id}

    account = on_stripe.bridge.in_unit_of_work(on_the_simulator)
    assert processor_account(db, account["id"]) is None  # nothing to make anywhere
    use_stripe(on_stripe.bridge, keys.tenant, publishable_key="pk_test_moneyrail_tests")
    payment = captured_payment(on_stripe, sandbox, 3_000)
    created = sandbox.post(
        "/v1/transfers",
        json={"destination": account["id"], "amount": 1_000, "source_transaction": payment["id"]},
    )
    assert created.status_code == 200, created.text
    # the transfer waits while the account is made at Stripe, then goes
    wait_for_operation(sandbox, account_operation(db, account["id"]), {"succeeded"})
    wait_for_operation(sandbox, created.json()["operation"], {"succeeded"})
    stripe_id = processor_account(db, account["id"])
    assert stripe_id is not None
    made = at_stripe(on_stripe, "transfer", keys.installation_id)
    assert [(each["destination"], each["amount"]) for each in made] == [(stripe_id, 1_000)]
    assert [each["id"] for each in at_stripe(on_stripe, "account", keys.installation_id)] == [stripe_id]
    shown = sandbox.get(f"/v1/connected-accounts/{account['id']}").json()
    assert shown["capabilities"]["transfers"] == "active" and stripe_id not in json.dumps(shown)


def test_a_merchants_bank_account_given_on_its_activation_page_reaches_its_account_at_stripe(
    on_stripe: StripeEnvironments, db: Any
) -> None:
    live = on_stripe.api(livemode=True, kind="platform")
    installation = live.keys.installation_id
    register_redirect_uris(on_stripe.bridge, live.keys)
    merchant = connect(live)
    account_id = merchant["connected_account"]
    wait_for_operation(live, account_operation(db, account_id), {"succeeded"})
    stripe_id = processor_account(db, account_id)
    assert stripe_id is not None
    (made,) = [each for each in at_stripe(on_stripe, "account", installation) if each["id"] == stripe_id]
    assert made["external_accounts"]["data"] == []  # live: the merchant's bank account is still due
    shown = live.get(f"/v1/connected-accounts/{account_id}").json()
    assert shown["payouts_enabled"] is False and shown["external_account"] is None

    session = live.post(
        f"/v1/merchants/{merchant['id']}/onboarding-sessions", json={"return_url": RETURN_URL}
    )
    assert session.status_code == 200, session.text
    done = httpx.post(
        session.json()["url"],
        data={"bank_account": "8937 0400 12"},
        follow_redirects=False,
        timeout=30,
        verify=TLS,
    )
    assert done.status_code == 303, done.text
    wait_for_operation(live, details_operation(db, account_id), {"succeeded"})
    (updated,) = [each for each in at_stripe(on_stripe, "account", installation) if each["id"] == stripe_id]
    assert [bank["last4"] for bank in updated["external_accounts"]["data"]] == ["0012"]
    shown_after = live.get(f"/v1/connected-accounts/{account_id}")
    assert shown_after.json()["payouts_enabled"] is True
    assert shown_after.json()["external_account"]["bank_last4"] == "0012"
    assert stripe_id not in shown_after.text
