"""The Stripe adapter's Connect and dispute calls against the double (in front of localstripe, which
keeps the payments they draw on): connected accounts, transfers from a captured payment, reversals,
connected payouts, disputes with evidence and files, and one object per operation key whatever fails."""

from __future__ import annotations

from datetime import UTC, date, datetime

import httpx
import pytest

from moneyrail.processor.interface import (
    AccountHolder,
    EvidenceFile,
    NotSupported,
    ProcessorRefused,
    ProcessorUnavailable,
    TransferRequest,
)
from moneyrail.processor.stripe import ConnectedAccount
from tests.harness import TLS
from tests.processor.stripe.servers import SECRET_KEY
from tests.processor.stripe.support import StripeWorld, fresh_key

NOW = datetime.now(UTC)


def connected(world: StripeWorld) -> ConnectedAccount:
    return world.run(
        world.processor.create_connected_account(
            world.tenant,
            idempotency_key=fresh_key("account"),
            country="fr",
            email="shop@example.com",
            reference="mer_1",
            bank_account="FR1420041010050500013M02606",
        )
    )


def captured_payment(world: StripeWorld, amount: int = 10_000) -> str:
    held = world.authorize(world.card(), amount)
    world.run(
        world.processor.capture(
            world.tenant, idempotency_key=fresh_key("capture"), authorization_id=held.id, amount=amount
        )
    )
    return held.id


def test_a_connected_account_is_made_once_per_key(world: StripeWorld) -> None:
    key = fresh_key("account")
    made = [
        world.run(
            world.processor.create_connected_account(
                world.tenant,
                idempotency_key=key,
                country="fr",
                reference="acct_x",
                bank_account="FR1420041010050500013M02606",
            )
        )
        for _ in range(2)
    ]
    assert made[0] == made[1] and made[0].processor_id.startswith("acct_")
    assert (made[0].country, made[0].payouts_enabled) == ("FR", True)
    (at_stripe,) = [each for each in world.objects("account") if each["id"] == made[0].processor_id]
    # a Custom account: moneyrail onboards the person on its own page, Stripe never writes to them
    assert (at_stripe["type"], at_stripe["metadata"]["reference"]) == ("custom", "acct_x")
    assert (
        world.run(world.processor.connected_account(world.tenant, account_id=made[0].processor_id)) == made[0]
    )


def test_what_onboarding_and_a_later_bank_account_tell_reaches_the_account(world: StripeWorld) -> None:
    """An account made with neither a bank account nor its holder (a merchant whose bank account was
    still due): its payouts are refused until an update gives both, under one key however often sent."""
    made = world.run(
        world.processor.create_connected_account(
            world.tenant, idempotency_key=fresh_key("account"), country="fr", reference="acct_later"
        )
    )
    with pytest.raises(ProcessorRefused, match="external accounts"):
        world.run(
            world.processor.create_payout(
                world.tenant,
                idempotency_key=fresh_key("payout"),
                amount=100,
                currency="eur",
                bank_account="",
                connected_account=made.processor_id,
            )
        )
    holder = AccountHolder("Ada", "Lovelace", date(1990, 12, 10), NOW, "203.0.113.9")
    key = fresh_key("details")
    for _ in range(2):
        world.run(
            world.processor.update_connected_account(
                world.tenant,
                idempotency_key=key,
                processor_account=made.processor_id,
                country="fr",
                bank_account="FR7630006000011234567890189",
                holder=holder,
            )
        )
    (at_stripe,) = [each for each in world.objects("account") if each["id"] == made.processor_id]
    assert at_stripe["business_type"] == "individual"
    person = at_stripe["individual"]
    assert (person["first_name"], person["last_name"], person["dob"]) == (
        "Ada",
        "Lovelace",
        {"day": "10", "month": "12", "year": "1990"},
    )
    assert at_stripe["tos_acceptance"]["date"] == int(NOW.timestamp())
    assert at_stripe["tos_acceptance"]["ip"] == "203.0.113.9"
    (bank,) = at_stripe["external_accounts"]["data"]
    assert bank["last4"] == "0189"


def test_transfers_pass_on_a_captured_payments_charge_to_two_accounts(world: StripeWorld) -> None:
    payment = captured_payment(world)
    first, second = connected(world), connected(world)
    answers = world.run(
        world.processor.create_transfers(
            world.tenant,
            idempotency_key=fresh_key("distribute"),
            transfers=[
                TransferRequest(fresh_key("transfer"), 6000, "eur", first.processor_id, payment),
                TransferRequest(fresh_key("transfer"), 3000, "eur", second.processor_id, payment),
                TransferRequest(
                    fresh_key("transfer"), 5000, "eur", second.processor_id, payment
                ),  # more than is left
            ],
        )
    )
    assert [answer.status for answer in answers] == ["paid", "paid", "refused"]
    assert answers[2].failure_code == "balance_insufficient" and "Stripe request req_" in (
        answers[2].failure_message or ""
    )
    charge = world.stripe_get(f"/v1/payment_intents/{payment}")["latest_charge"]
    charge_id = charge if isinstance(charge, str) else charge["id"]
    made = {each["id"]: each for each in world.objects("transfer")}
    assert {
        made[answer.processor_id]["source_transaction"] for answer in answers[:2] if answer.processor_id
    } == {charge_id}
    assert made[answers[0].processor_id or ""]["destination"] == first.processor_id


def test_a_transfer_is_reversed_in_part_and_the_listing_says_so(world: StripeWorld) -> None:
    account = connected(world)
    transfer = world.run(
        world.processor.create_transfer(
            world.tenant,
            idempotency_key=fresh_key("transfer"),
            amount=4000,
            currency="eur",
            destination=account.processor_id,
            source_authorization_id=captured_payment(world),
        )
    )
    assert (transfer.amount, transfer.destination) == (4000, account.processor_id)
    reversal = world.run(
        world.processor.reverse_transfer(
            world.tenant, idempotency_key=fresh_key("reverse"), transfer_id=transfer.processor_id, amount=1500
        )
    )
    assert reversal.processor_id.startswith("trr_") and (reversal.transfer_id, reversal.amount) == (
        transfer.processor_id,
        1500,
    )
    with pytest.raises(ProcessorRefused):  # more than is left of it
        world.run(
            world.processor.reverse_transfer(
                world.tenant,
                idempotency_key=fresh_key("reverse"),
                transfer_id=transfer.processor_id,
                amount=2501,
            )
        )
    listed = {
        record.processor_id: record for record in world.run(world.processor.list_transfers(world.tenant))
    }
    record = listed[transfer.processor_id]
    assert (record.amount, record.amount_reversed, record.status, record.destination) == (
        4000,
        1500,
        "paid",
        account.processor_id,
    )
    world.run(
        world.processor.reverse_transfer(
            world.tenant, idempotency_key=fresh_key("reverse"), transfer_id=transfer.processor_id, amount=2500
        )
    )
    listed = {
        record.processor_id: record for record in world.run(world.processor.list_transfers(world.tenant))
    }
    assert listed[transfer.processor_id].status == "reversed"


def test_a_connected_account_pays_out_as_itself_and_the_payout_is_reversed_whole(world: StripeWorld) -> None:
    account = connected(world)
    key = fresh_key("payout")
    payout = world.run(
        world.processor.create_payout(
            world.tenant,
            idempotency_key=key,
            amount=2500,
            currency="eur",
            bank_account="",
            connected_account=account.processor_id,
        )
    )
    assert payout.processor_id.startswith("po_") and (payout.amount, payout.status) == (2500, "pending")
    sent = [each for each in world.requests() if each["idempotency_key"] == key]
    assert [each["stripe_account"] for each in sent] == [account.processor_id]
    # another account's payout (here: the platform's own view) is not this one's
    answer = httpx.get(
        f"{world.servers.double}/v1/payouts/{payout.processor_id}", auth=(SECRET_KEY, ""), verify=TLS
    )
    assert answer.status_code == 404
    with pytest.raises(ProcessorRefused) as refused:
        world.run(
            world.processor.reverse_payout(
                world.tenant,
                idempotency_key=fresh_key("reverse"),
                payout_id=payout.processor_id,
                amount=1000,
                currency="eur",
                connected_account=account.processor_id,
            )
        )
    assert refused.value.code == "amount_invalid"
    reversed_payout = world.run(
        world.processor.reverse_payout(
            world.tenant,
            idempotency_key=fresh_key("reverse"),
            payout_id=payout.processor_id,
            amount=2500,
            currency="eur",
            connected_account=account.processor_id,
        )
    )
    assert reversed_payout.processor_id != payout.processor_id and reversed_payout.amount == 2500


def test_the_platform_pays_out_its_own_balance_without_an_account_header(world: StripeWorld) -> None:
    key = fresh_key("payout")
    payout = world.run(
        world.processor.create_payout(
            world.tenant, idempotency_key=key, amount=900, currency="eur", bank_account=""
        )
    )
    assert payout.amount == 900
    assert [each["stripe_account"] for each in world.requests() if each["idempotency_key"] == key] == [None]


def open_dispute(world: StripeWorld, payment: str) -> str:
    charge = world.stripe_get(f"/v1/payment_intents/{payment}")["latest_charge"]
    answer = httpx.post(
        f"{world.servers.double}/_double/disputes",
        json={
            "charge": charge if isinstance(charge, str) else charge["id"],
            "reason": "fraudulent",
            "api_key": SECRET_KEY,
        },
        verify=TLS,
    )
    assert answer.status_code == 200, answer.text
    return str(answer.json()["id"])


def test_a_dispute_stripe_reported_is_read_and_answered_with_evidence_and_a_file(world: StripeWorld) -> None:
    payment = captured_payment(world, 8000)
    dispute_id = open_dispute(world, payment)
    dispute = world.run(world.processor.dispute(world.tenant, dispute_id=dispute_id))
    assert (dispute.authorization_id, dispute.amount, dispute.currency, dispute.reason) == (
        payment,
        8000,
        "eur",
        "fraudulent",
    )
    assert dispute.fee_amount == 1500 and dispute.evidence_due_by > dispute.opened_at
    assert world.run(world.processor.dispute_outcome(world.tenant, dispute_id=dispute_id, as_of=NOW)) is None
    receipt = EvidenceFile("receipt", "receipt.pdf", b"%PDF-1.4 the receipt", "application/pdf")
    key = fresh_key("evidence")
    for _ in range(2):  # a retried submission uploads and submits once
        world.run(
            world.processor.submit_dispute_evidence(
                world.tenant,
                idempotency_key=key,
                dispute_id=dispute_id,
                evidence_text="product_description: hosting",
                as_of=NOW,
                evidence_files=[receipt],
            )
        )
    answered = world.stripe_get(f"/v1/disputes/{dispute_id}")
    assert answered["status"] == "under_review"
    assert answered["evidence"]["uncategorized_text"] == "product_description: hosting"
    files = [each for each in world.objects("file") if each["id"] == answered["evidence"]["receipt"]]
    assert [(each["filename"], each["purpose"], each["size"]) for each in files] == [
        ("receipt.pdf", "dispute_evidence", 20)
    ]
    assert answered["evidence_details"]["submission_count"] == 1
    httpx.post(
        f"{world.servers.double}/_double/disputes/{dispute_id}/decide", json={"status": "won"}, verify=TLS
    )
    assert world.run(world.processor.dispute_outcome(world.tenant, dispute_id=dispute_id, as_of=NOW)) == "won"


def test_a_dispute_accepted_is_lost(world: StripeWorld) -> None:
    dispute_id = open_dispute(world, captured_payment(world, 3000))
    world.run(
        world.processor.accept_dispute(
            world.tenant, idempotency_key=fresh_key("accept"), dispute_id=dispute_id, as_of=NOW
        )
    )
    assert (
        world.run(world.processor.dispute_outcome(world.tenant, dispute_id=dispute_id, as_of=NOW)) == "lost"
    )


def test_the_simulators_own_dispute_timeline_is_not_stripes(world: StripeWorld) -> None:
    with pytest.raises(NotSupported) as refused:
        world.run(
            world.processor.open_dispute(
                world.tenant, authorization_id="pi_x", amount=100, reason="fraudulent", as_of=NOW
            )
        )
    assert refused.value.code == "dispute_simulation_not_supported"
    assert world.run(world.processor.due_disputes(world.tenant, as_of=NOW)) == []


def test_a_retried_transfer_is_one_transfer(world: StripeWorld) -> None:
    account, key = connected(world), fresh_key("transfer")
    before = len(world.objects("transfer"))
    made = [
        world.run(
            world.processor.create_transfer(
                world.tenant,
                idempotency_key=key,
                amount=700,
                currency="eur",
                destination=account.processor_id,
            )
        )
        for _ in range(3)
    ]
    assert made[0] == made[1] == made[2]
    assert len(world.objects("transfer")) == before + 1


def test_a_transfer_made_then_lost_on_the_way_back_is_found_again_not_made_twice(world: StripeWorld) -> None:
    account, key = connected(world), fresh_key("transfer")
    before = {each["id"] for each in world.objects("transfer")}
    world.fail_next("/v1/transfers", when="after")
    with pytest.raises(ProcessorUnavailable):
        world.run(
            world.processor.create_transfer(
                world.tenant,
                idempotency_key=key,
                amount=650,
                currency="eur",
                destination=account.processor_id,
            )
        )
    made_meanwhile = [each for each in world.objects("transfer") if each["id"] not in before]
    assert [each["amount"] for each in made_meanwhile] == [650]
    retried = world.run(
        world.processor.create_transfer(
            world.tenant, idempotency_key=key, amount=650, currency="eur", destination=account.processor_id
        )
    )
    assert retried.processor_id == made_meanwhile[0]["id"]
    assert len(world.objects("transfer")) == len(before) + 1


def test_a_batch_asked_again_after_an_outage_makes_each_transfer_once(world: StripeWorld) -> None:
    account = connected(world)
    batch = [
        TransferRequest(fresh_key("transfer"), amount, "eur", account.processor_id)
        for amount in (100, 200, 300)
    ]
    before = len(world.objects("transfer"))
    world.fail_next("/v1/transfers", when="after", count=1)
    with pytest.raises(ProcessorUnavailable):
        world.run(
            world.processor.create_transfers(
                world.tenant, idempotency_key=fresh_key("batch"), transfers=batch
            )
        )
    answers = world.run(
        world.processor.create_transfers(world.tenant, idempotency_key=fresh_key("batch"), transfers=batch)
    )
    assert [answer.status for answer in answers] == ["paid"] * 3
    assert len(world.objects("transfer")) == before + 3


def test_the_same_key_with_other_parameters_is_refused_and_makes_nothing(world: StripeWorld) -> None:
    account, key = connected(world), fresh_key("transfer")
    world.run(
        world.processor.create_transfer(
            world.tenant, idempotency_key=key, amount=100, currency="eur", destination=account.processor_id
        )
    )
    before = len(world.objects("transfer"))
    with pytest.raises(ProcessorRefused) as refused:
        world.run(
            world.processor.create_transfer(
                world.tenant,
                idempotency_key=key,
                amount=101,
                currency="eur",
                destination=account.processor_id,
            )
        )
    assert refused.value.code == "processor_idempotency_key_reused"
    assert len(world.objects("transfer")) == before


def test_the_double_refuses_what_the_stripe_packages_types_do_not_allow(world: StripeWorld) -> None:
    account = connected(world)
    cases = [
        (
            {"amount": "100", "currency": "eur", "destination": account.processor_id, "bogus": "1"},
            "parameter_unknown",
            "bogus",
        ),
        ({"amount": "100", "currency": "eur"}, "parameter_missing", "destination"),
        (
            {"amount": "ten", "currency": "eur", "destination": account.processor_id},
            "parameter_invalid",
            "amount",
        ),
        (
            {"amount": "100", "currency": "eur", "destination": account.processor_id, "metadata[a][b]": "c"},
            "parameter_invalid",
            "metadata",
        ),
    ]
    for form, code, param in cases:
        answer = httpx.post(
            f"{world.servers.double}/v1/transfers", data=form, auth=(SECRET_KEY, ""), verify=TLS
        )
        assert answer.status_code == 400, answer.text
        assert (answer.json()["error"]["code"], answer.json()["error"]["param"]) == (code, param)
    answer = httpx.post(
        f"{world.servers.double}/v1/transfers", data=cases[0][0], auth=("pk_test_x", ""), verify=TLS
    )
    assert answer.status_code == 401


def test_a_payout_as_an_account_the_key_cannot_reach_is_refused_for_good(world: StripeWorld) -> None:
    with pytest.raises(ProcessorRefused) as refused:
        world.run(
            world.processor.create_payout(
                world.tenant,
                idempotency_key=fresh_key("payout"),
                amount=100,
                currency="eur",
                bank_account="",
                connected_account="acct_not_connected",
            )
        )
    assert refused.value.code == "processor_permission_denied"
    assert not isinstance(refused.value, ProcessorUnavailable)
