"""The Stripe adapter's payment path end to end against localstripe (through the double in front of it):
cards from Stripe.js tokens, authorizations, captures, cancellations, refunds, off-session charges,
declines, bank authentication, the orphan sweep's listing, and Stripe's errors as moneyrail's."""

from __future__ import annotations

import secrets
import time
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from moneyrail.processor.interface import (
    CardDetails,
    CardNotAccepted,
    ChargeAnswer,
    NotSupported,
    OffSessionCharge,
    ProcessorRefused,
    ProcessorUnavailable,
)
from moneyrail.processor.stripe import StripeProcessor
from tests.harness import TLS
from tests.processor.stripe.servers import PUBLISHABLE_KEY, SECRET_KEY
from tests.processor.stripe.support import (
    AUTHENTICATION,
    DECLINED_WHEN_CHARGED,
    DECLINED_WHEN_SAVED,
    StripeWorld,
    fresh_key,
)


def test_a_stripe_js_token_becomes_a_saved_card_with_stripes_fingerprint(world: StripeWorld) -> None:
    card = world.card()
    customer, _, method = card.token.partition("/")
    assert customer.startswith("cus_") and method.startswith("card_")
    assert (card.brand, card.last4, card.exp_month, card.exp_year) == ("visa", "4242", 12, 2031)
    assert world.card().fingerprint == card.fingerprint  # the same number, another token
    saved = world.stripe_get(f"/v1/customers/{customer}")
    assert saved["metadata"]["installation_id"] == world.tenant.installation_id
    risk = world.run(world.processor.card_risk(world.tenant, card_token=card.token))
    assert (risk.risk_level, risk.country) == ("normal", "US")


def test_typed_card_numbers_never_reach_stripe(world: StripeWorld) -> None:
    calls = len(world.requests())
    typed = CardDetails(number="4242424242424242", exp_month=12, exp_year=2031, cvc="123")
    with pytest.raises(NotSupported) as refused:
        world.run(world.processor.tokenize_card(world.tenant, typed))
    assert refused.value.code == "card_token_required"
    assert "4242" not in str(refused.value)
    assert len(world.requests()) == calls


def test_a_manual_capture_holds_then_captures_part_then_refunds(world: StripeWorld) -> None:
    card = world.card()
    held = world.authorize(card, 5000, reference="pi_manual")
    assert (held.status, held.amount, held.currency) == ("authorized", 5000, "eur")
    assert held.id.startswith("pi_")
    intent = world.stripe_get(f"/v1/payment_intents/{held.id}")
    assert (intent["status"], intent["capture_method"], intent["metadata"]["reference"]) == (
        "requires_capture",
        "manual",
        "pi_manual",
    )
    captured = world.run(
        world.processor.capture(
            world.tenant, idempotency_key=fresh_key("capture"), authorization_id=held.id, amount=4000
        )
    )
    assert (captured.authorization_id, captured.amount_captured) == (held.id, 4000)
    refunded = world.run(
        world.processor.refund(
            world.tenant, idempotency_key=fresh_key("refund"), authorization_id=held.id, amount=1500
        )
    )
    assert refunded.processor_id.startswith("re_") and refunded.amount == 1500
    # captured already (an earlier attempt whose answer was lost, a key Stripe forgot): the capture stands
    again = world.run(
        world.processor.capture(
            world.tenant, idempotency_key=fresh_key("capture"), authorization_id=held.id, amount=4000
        )
    )
    assert again.authorization_id == held.id


def test_an_automatic_capture_takes_the_money_in_one_call(world: StripeWorld) -> None:
    card = world.card()
    calls = len(world.requests())
    answer = world.run(
        world.processor.authorize_and_capture(
            world.tenant,
            idempotency_key=fresh_key("charge"),
            card_token=card.token,
            card_fingerprint=card.fingerprint,
            amount=2500,
            currency="eur",
            off_session=False,
            reference="pi_automatic",
        )
    )
    assert answer.authorization.status == "authorized"
    assert answer.capture is not None and answer.capture.amount_captured == 2500
    assert len(world.requests()) == calls + 1
    assert world.stripe_get(f"/v1/payment_intents/{answer.authorization.id}")["status"] == "succeeded"


def test_cancel_releases_the_hold_and_a_second_cancel_answers_the_same(world: StripeWorld) -> None:
    held = world.authorize(world.card(), 3000)
    canceled = world.run(
        world.processor.cancel(world.tenant, idempotency_key=fresh_key("cancel"), authorization_id=held.id)
    )
    assert (canceled.id, canceled.status) == (held.id, "canceled")
    again = world.run(
        world.processor.cancel(world.tenant, idempotency_key=fresh_key("cancel"), authorization_id=held.id)
    )
    assert again.status == "canceled"


def test_a_zero_amount_is_a_card_check_by_a_setup_intent(world: StripeWorld) -> None:
    checked = world.authorize(world.card(), 0)
    assert (checked.status, checked.amount) == ("authorized", 0)
    assert checked.id.startswith("seti_")
    assert world.run(world.processor.cost_report(world.tenant, authorization_id=checked.id)) is None


def test_off_session_charges_of_a_saved_card_each_replay_under_their_keys(world: StripeWorld) -> None:
    card = world.card()
    captured_key, held_key = fresh_key("authorize"), fresh_key("authorize")
    charges = [
        OffSessionCharge(
            captured_key,
            card.token,
            card.fingerprint,
            1200,
            "eur",
            "pi_renewal_1",
            lambda id: f"{id}:capture",
        ),
        OffSessionCharge(held_key, card.token, card.fingerprint, 800, "eur", "pi_renewal_2", None),
    ]
    answers = world.run(world.processor.charge_off_session_many(world.tenant, charges))
    captured, held = answers
    assert captured.authorization.status == "authorized"
    assert captured.capture is not None and captured.capture.amount_captured == 1200
    assert held.authorization.status == "authorized" and held.capture is None
    # asked again (a worker retrying the batch): the same answers, no new charge
    assert world.run(world.processor.charge_off_session_many(world.tenant, charges)) == answers
    assert len(world.intents_for("pi_renewal_1")) == len(world.intents_for("pi_renewal_2")) == 1
    intent = world.intents_for("pi_renewal_1")[0]
    assert intent["status"] == "succeeded"
    # a charge retried alone through `authorize` under its key replays too (the single path's keys)
    alone = world.authorize(card, 1200, key=captured_key, off_session=True, reference="pi_renewal_1")
    assert alone.id == captured.authorization.id


def test_a_card_refused_when_saved_is_not_accepted_with_its_decline_code(world: StripeWorld) -> None:
    with pytest.raises(CardNotAccepted) as refused:
        world.card(DECLINED_WHEN_SAVED)
    assert refused.value.decline_code == "card_declined"
    assert "Stripe request req_" in refused.value.message


def test_a_charge_declined_is_answered_declined_with_stripes_code(world: StripeWorld) -> None:
    card = world.card(DECLINED_WHEN_CHARGED)
    key = fresh_key("authorize")
    declined = world.authorize(card, 2000, key=key, off_session=True, reference="pi_declined")
    assert (declined.status, declined.decline_code) == ("declined", "card_declined")
    assert declined.id.startswith("pi_")
    # Stripe replays the decline under the same key: no second attempt at the bank
    assert world.authorize(card, 2000, key=key, off_session=True, reference="pi_declined") == declined
    charge = OffSessionCharge(
        key, card.token, card.fingerprint, 2000, "eur", "pi_declined", lambda id: f"{id}:c"
    )
    answers = world.run(world.processor.charge_off_session_many(world.tenant, [charge]))
    assert answers == [ChargeAnswer(declined, None)]
    assert len(world.intents_for("pi_declined")) == 1


def authenticate(world: StripeWorld, client_secret: str, *, success: bool) -> None:
    """What localstripe's Stripe.js does in the payer's browser once the bank's page is answered."""
    intent = client_secret.partition("_secret_")[0]
    answer = httpx.post(
        f"{world.servers.double}/v1/payment_intents/{intent}/_authenticate",
        params={"success": "true" if success else "false"},
        json={"key": PUBLISHABLE_KEY, "client_secret": client_secret},
        verify=TLS,
    )
    assert answer.status_code == 200, answer.text


def test_bank_authentication_is_asked_for_then_read_back(world: StripeWorld) -> None:
    card = world.card(AUTHENTICATION)
    asked = world.authorize(card, 4000)
    assert asked.status == "requires_action" and asked.client_secret is not None
    assert asked.client_secret not in repr(asked)
    authenticate(world, asked.client_secret, success=True)
    done = world.run(
        world.processor.complete_authentication(
            world.tenant, idempotency_key=fresh_key("authenticate"), authorization_id=asked.id, approved=True
        )
    )
    assert (done.id, done.status, done.amount) == (asked.id, "authorized", 4000)


def test_bank_authentication_failed_or_abandoned_is_a_decline(world: StripeWorld) -> None:
    card = world.card(AUTHENTICATION)
    failed = world.authorize(card, 4000)
    authenticate(world, failed.client_secret or "", success=False)
    answer = world.run(
        world.processor.complete_authentication(
            world.tenant, idempotency_key=fresh_key("authenticate"), authorization_id=failed.id, approved=True
        )
    )
    assert (answer.status, answer.decline_code) == ("declined", "authentication_failed")
    abandoned = world.authorize(card, 4000)
    answer = world.run(
        world.processor.complete_authentication(
            world.tenant,
            idempotency_key=fresh_key("authenticate"),
            authorization_id=abandoned.id,
            approved=False,
        )
    )
    assert (answer.status, answer.decline_code) == ("declined", "authentication_failed")
    assert world.stripe_get(f"/v1/payment_intents/{abandoned.id}")["status"] == "canceled"


def test_off_session_no_payer_can_authenticate_so_it_is_declined_and_nothing_holds(
    world: StripeWorld,
) -> None:
    declined = world.authorize(world.card(AUTHENTICATION), 4000, off_session=True)
    assert (declined.status, declined.decline_code) == ("declined", "authentication_required")
    assert world.stripe_get(f"/v1/payment_intents/{declined.id}")["status"] == "canceled"


def test_open_authorizations_lists_what_holds_or_took_money_oldest_first(world: StripeWorld) -> None:
    before = datetime.now(UTC) - timedelta(seconds=2)
    card = world.card()
    held = world.authorize(card, 1000, reference="pi_open_held")
    taken = world.authorize(card, 2000, reference="pi_open_taken")
    world.run(
        world.processor.capture(
            world.tenant, idempotency_key=fresh_key("capture"), authorization_id=taken.id, amount=2000
        )
    )
    gone = world.authorize(card, 3000, reference="pi_open_refunded")
    world.run(
        world.processor.capture(
            world.tenant, idempotency_key=fresh_key("capture"), authorization_id=gone.id, amount=3000
        )
    )
    world.run(
        world.processor.refund(
            world.tenant, idempotency_key=fresh_key("refund"), authorization_id=gone.id, amount=3000
        )
    )
    released = world.authorize(card, 4000, reference="pi_open_canceled")
    world.run(
        world.processor.cancel(
            world.tenant, idempotency_key=fresh_key("cancel"), authorization_id=released.id
        )
    )
    records = world.run(
        world.processor.open_authorizations(
            created_after=before, created_before=datetime.now(UTC) + timedelta(seconds=2), limit=100
        )
    )
    mine = {
        record.reference: record
        for record in records
        if record.installation_id == world.tenant.installation_id
    }
    assert set(mine) >= {"pi_open_held", "pi_open_taken"}
    assert not set(mine) & {"pi_open_refunded", "pi_open_canceled"}
    assert (mine["pi_open_held"].id, mine["pi_open_held"].status, mine["pi_open_held"].amount) == (
        held.id,
        "authorized",
        1000,
    )
    assert (mine["pi_open_taken"].status, mine["pi_open_taken"].amount_captured) == ("captured", 2000)
    assert mine["pi_open_taken"].livemode is False
    assert [record.created_at for record in records] == sorted(record.created_at for record in records)
    later = world.run(
        world.processor.open_authorizations(
            created_after=datetime.now(UTC) + timedelta(seconds=5),
            created_before=datetime.now(UTC) + timedelta(seconds=10),
            limit=100,
        )
    )
    assert later == []


def test_the_cost_is_stripes_fee_from_the_charges_balance_transaction(world: StripeWorld) -> None:
    held = world.authorize(world.card(), 10_000)
    assert (
        world.run(world.processor.cost_report(world.tenant, authorization_id=held.id)) is None
    )  # not captured
    world.run(
        world.processor.capture(
            world.tenant, idempotency_key=fresh_key("capture"), authorization_id=held.id, amount=10_000
        )
    )
    cost = world.run(world.processor.cost_report(world.tenant, authorization_id=held.id))
    assert cost is not None and (cost.cost_amount, cost.currency) == (320, "eur")  # 2.9% + 30


def test_a_refused_call_is_permanent_and_names_stripes_request(world: StripeWorld) -> None:
    with pytest.raises(ProcessorRefused) as refused:
        world.run(
            world.processor.capture(
                world.tenant, idempotency_key=fresh_key("capture"), authorization_id="pi_missing", amount=100
            )
        )
    assert not isinstance(refused.value, ProcessorUnavailable)
    assert "Stripe request req_" in refused.value.message


def test_a_key_reused_with_other_parameters_is_refused_for_good(world: StripeWorld) -> None:
    card = world.card()
    key = fresh_key("authorize")
    world.authorize(card, 1000, key=key, reference="pi_reused")
    with pytest.raises(ProcessorRefused) as refused:
        world.authorize(card, 1001, key=key, reference="pi_reused")
    assert refused.value.code == "processor_idempotency_key_reused"
    assert len(world.intents_for("pi_reused")) == 1


def test_stripe_failing_after_charging_is_transient_and_the_retry_charges_once(world: StripeWorld) -> None:
    card = world.card()
    key, reference = fresh_key("authorize"), f"pi_{secrets.token_hex(6)}"
    world.fail_next("/v1/payment_intents", when="after")
    with pytest.raises(ProcessorUnavailable) as unavailable:
        world.authorize(card, 7000, key=key, reference=reference)
    assert "Stripe request req_" in str(unavailable.value)
    assert len(world.intents_for(reference)) == 1  # charged, the answer lost on the way back
    retried = world.authorize(card, 7000, key=key, reference=reference)
    assert retried.status == "authorized"
    assert [intent["id"] for intent in world.intents_for(reference)] == [retried.id]


def test_stripe_down_before_charging_is_transient_and_the_retry_charges(world: StripeWorld) -> None:
    card = world.card()
    key, reference = fresh_key("authorize"), f"pi_{secrets.token_hex(6)}"
    world.fail_next("/v1/payment_intents", when="before", status=503)
    with pytest.raises(ProcessorUnavailable):
        world.authorize(card, 7000, key=key, reference=reference)
    assert world.intents_for(reference) == []
    world.fail_next("/v1/payment_intents", when="before", status=429)
    with pytest.raises(ProcessorUnavailable):
        world.authorize(card, 7000, key=key, reference=reference)
    assert world.authorize(card, 7000, key=key, reference=reference).status == "authorized"
    assert len(world.intents_for(reference)) == 1


def test_every_write_of_the_adapter_carries_an_idempotency_key(world: StripeWorld) -> None:
    adapter = [
        each for each in world.requests() if each["user_agent"].startswith("Stripe/")
    ]  # the stripe package's
    writes = [each for each in adapter if each["method"] == "POST"]
    assert writes and all(each["idempotency_key"] for each in writes)


def test_stripe_too_slow_is_a_timeout_and_the_retry_finds_what_it_made(world: StripeWorld) -> None:
    impatient = StripeProcessor(SECRET_KEY, api_base=world.servers.double, timeout_seconds=0.3)
    try:
        card = world.card()
        key, reference = fresh_key("authorize"), f"pi_{secrets.token_hex(6)}"
        world.fail_next("/v1/payment_intents", when="before", status=None, delay_seconds=1.0)
        asked = dict(
            idempotency_key=key,
            card_token=card.token,
            card_fingerprint=card.fingerprint,
            amount=1100,
            currency="eur",
            off_session=False,
            reference=reference,
        )
        with pytest.raises(ProcessorUnavailable) as unavailable:
            world.run(impatient.authorize(world.tenant, **asked))
        assert "Stripe did not answer" in str(unavailable.value)
        deadline = time.monotonic() + 10  # the slow call goes on at Stripe after the adapter gave up
        while time.monotonic() < deadline and not any(
            each["idempotency_key"] == key and each["status"] is not None for each in world.requests()
        ):
            time.sleep(0.05)
        made = world.intents_for(reference)
        assert len(made) == 1
        assert world.run(world.processor.authorize(world.tenant, **asked)).id == made[0]["id"]
        assert len(world.intents_for(reference)) == 1
    finally:
        world.run(impatient.aclose())


def test_a_declined_increment_answers_the_hold_that_still_stands(world: StripeWorld) -> None:
    held = world.authorize(world.card(), 5000)
    world.fail_next(
        f"/v1/payment_intents/{held.id}/increment_authorization",
        when="before",
        status=402,
        decline_code="insufficient_funds",
    )
    answer = world.run(
        world.processor.increment_authorization(
            world.tenant, idempotency_key=fresh_key("increment"), authorization_id=held.id, amount=9000
        )
    )
    assert (answer.id, answer.status, answer.amount, answer.decline_code) == (
        held.id,
        "declined",
        5000,
        "insufficient_funds",
    )
