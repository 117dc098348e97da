"""The sandbox card network behind the Processor interface (CONVENTIONS.md §6, §7, §11), on PostgreSQL."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from moneyrail.kit.clock import utcnow
from moneyrail.kit.tenant import Tenant
from moneyrail.processor.cards import LIVE_CARD_MESSAGE, SANDBOX_CARDS
from moneyrail.processor.interface import (
    Authorization,
    Capture,
    CardNotAccepted,
    CardToken,
    NotSupported,
    ProcessorRefused,
    ProcessorUnavailable,
)
from moneyrail.processor.sandbox import ALLOWED_FROM, SandboxProcessor, processing_cost
from tests.harness import create_tenant
from tests.processor.network import SUCCEEDS, Network, card

GENERIC_DECLINE = "4000000000000002"
INSUFFICIENT_FUNDS = "4000000000009995"
AUTHENTICATION = "4000002500003155"
DISPUTE = "4000000000000259"
RISK_REVIEW = "4100000000000019"
CHARGES_DECLINED = "4000000000000341"
DAY = 86_400


def authorization_row(db, authorization_id):
    return db.execute(
        "SELECT status, amount, decline_code, amount_captured, amount_refunded, captured_at, cost_amount"
        " FROM sandbox_authorizations WHERE id = %s",
        (authorization_id,),
    ).fetchone()


# tokenizing -------------------------------------------------------------------------------------------
def test_every_sandbox_card_tokenizes_to_brand_last4_expiry_and_its_behaviour(network, db):
    for number, behaviour in SANDBOX_CARDS.items():
        tokenized = network.tokenize(number, exp_month=7, exp_year=utcnow().year + 1)
        assert tokenized.token.startswith("sbx_card_")
        assert (tokenized.brand, tokenized.last4) == ("visa", number[-4:])
        assert (tokenized.exp_month, tokenized.exp_year) == (7, utcnow().year + 1)
        assert len(tokenized.fingerprint) == 20 and tokenized.fingerprint.isalnum()
        stored = db.execute(
            "SELECT behaviour, brand, last4, fingerprint FROM sandbox_cards WHERE token = %s",
            (tokenized.token,),
        ).fetchone()
        assert stored == (behaviour, "visa", number[-4:], tokenized.fingerprint)


def test_the_same_number_gives_the_same_fingerprint_within_an_installation_only(network, bridge, processor):
    first, again = network.tokenize(SUCCEEDS), network.tokenize("4242 4242 4242 4242")
    assert first.token != again.token and first.fingerprint == again.fingerprint
    assert network.tokenize(GENERIC_DECLINE).fingerprint != first.fingerprint
    elsewhere = Network(processor, bridge, create_tenant(bridge).tenant)
    assert elsewhere.tokenize(SUCCEEDS).fingerprint != first.fingerprint


@pytest.mark.parametrize(
    ("number", "fields", "decline_code"),
    [
        ("4242424242424241", {}, "incorrect_number"),  # fails the Luhn check
        ("4242-4242-4242-4242", {}, "incorrect_number"),
        ("42424242424", {}, "incorrect_number"),  # 11 digits
        ("42424242424242424242", {}, "incorrect_number"),  # 20 digits
        ("", {}, "incorrect_number"),
        ("٤٢٤٢٤٢٤٢٤٢٤٢٤٢٤٢", {}, "incorrect_number"),  # digits, but not ASCII ones
        (SUCCEEDS, {"exp_month": 0}, "invalid_expiry_month"),
        (SUCCEEDS, {"exp_month": 13}, "invalid_expiry_month"),
        (SUCCEEDS, {"exp_year": -1}, "invalid_expiry_year"),
        (SUCCEEDS, {"cvc": "12"}, "invalid_cvc"),
        (SUCCEEDS, {"cvc": "12345"}, "invalid_cvc"),
        (SUCCEEDS, {"cvc": "12a"}, "invalid_cvc"),
    ],
)
def test_a_malformed_card_is_not_accepted_and_says_which_part_is_wrong(
    network, db, number, fields, decline_code
):
    with pytest.raises(CardNotAccepted) as raised:
        network.tokenize(number, **fields)
    assert (raised.value.code, raised.value.decline_code) == ("card_declined", decline_code)
    assert db.execute(
        "SELECT count(*) FROM sandbox_cards WHERE installation_id = %s", (network.tenant.installation_id,)
    ).fetchone() == (0,)


def test_a_card_is_good_through_its_expiry_month_on_the_tenants_clock(network):
    today = utcnow()
    last_month = today.replace(day=1) - timedelta(days=1)
    assert network.tokenize(exp_month=today.month, exp_year=today.year).exp_year == today.year
    assert network.tokenize(exp_month=today.month, exp_year=today.year % 100).exp_year == today.year
    with pytest.raises(CardNotAccepted) as expired:
        network.tokenize(exp_month=last_month.month, exp_year=last_month.year)
    assert expired.value.decline_code == "expired_card"

    network.advance_clock(62 * DAY)  # the sandbox now lives at least a month later
    with pytest.raises(CardNotAccepted) as expired_later:
        network.tokenize(exp_month=today.month, exp_year=today.year)
    assert expired_later.value.decline_code == "expired_card"


@pytest.mark.parametrize("number", ["4111111111111111", "5555555555554444", "378282246310005"])
def test_a_valid_card_that_is_not_a_sandbox_card_is_refused_as_a_live_card(network, number):
    with pytest.raises(CardNotAccepted) as raised:
        network.tokenize(number)
    assert raised.value.decline_code == "test_mode_live_card"
    assert raised.value.message == LIVE_CARD_MESSAGE
    assert number not in repr(raised.value) and number not in str(raised.value)


def test_a_processors_card_token_is_refused_by_the_simulator(network, db):
    """A Stripe.js token belongs to a real processor: the simulator reads typed sandbox cards only."""
    cards_before = db.execute(
        "SELECT count(*) FROM sandbox_cards WHERE installation_id = %s", (network.tenant.installation_id,)
    ).fetchone()

    async def choose(tokenized):
        raise AssertionError("nothing is tokenized to choose for")

    for call in (
        network.processor.tokenize_card(network.tenant, CardToken("tok_visa")),
        network.processor.tokenize_and_authorize(network.tenant, CardToken("tok_visa"), choose),
    ):
        with pytest.raises(NotSupported) as raised:
            network.bridge.run(call)
        assert raised.value.code == "card_token_not_supported"
    assert (
        db.execute(
            "SELECT count(*) FROM sandbox_cards WHERE installation_id = %s", (network.tenant.installation_id,)
        ).fetchone()
        == cards_before
    )


def test_no_table_holds_a_card_number(network, db):
    numbers = [*SANDBOX_CARDS, "5555555555554444"]
    tokens = [network.tokenize(number).token for number in SANDBOX_CARDS]
    for token in tokens:
        network.call("authorize", card_token=token, amount=500, currency="eur", off_session=False)
    with pytest.raises(CardNotAccepted):
        network.tokenize("5555 5555 5555 4444")
    tables = [
        name
        for (name,) in db.execute(
            "SELECT table_name FROM information_schema.tables"
            " WHERE table_schema = 'public' AND table_type = 'BASE TABLE'"
        )
    ]
    assert "sandbox_cards" in tables and "sandbox_processor_calls" in tables
    token_found = db.execute(  # the sweep does see what the rows hold
        'SELECT count(*) FROM "sandbox_cards" AS r WHERE r::text LIKE %s', (f"%{tokens[0]}%",)
    ).fetchone()
    assert token_found == (1,)
    # Other tests share the database and may store number-like strings on purpose (a customer named
    # with digits, to prove the log drops them): a tenant-owned table is swept for this tenant's rows.
    owned = {
        name
        for (name,) in db.execute(
            "SELECT table_name FROM information_schema.columns"
            " WHERE table_schema = 'public' AND column_name = 'installation_id'"
        )
    }
    for table in tables:
        mine = "r.installation_id = %s" if table in owned else "%s::text IS NOT NULL"
        for number in numbers:  # any 12 trailing digits would give most of a number away
            found = db.execute(
                f'SELECT count(*) FROM "{table}" AS r WHERE {mine} AND r::text LIKE %s',
                (network.tenant.installation_id, f"%{number[-12:]}%"),
            ).fetchone()
            assert found == (0,), (table, number[-4:])


# authorizing ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("number", "off_session", "status", "decline_code"),
    [
        (SUCCEEDS, False, "authorized", None),
        (SUCCEEDS, True, "authorized", None),
        (GENERIC_DECLINE, False, "declined", "generic_decline"),
        (INSUFFICIENT_FUNDS, False, "declined", "insufficient_funds"),
        (INSUFFICIENT_FUNDS, True, "declined", "insufficient_funds"),
        (AUTHENTICATION, False, "requires_action", None),
        (AUTHENTICATION, True, "declined", "authentication_required"),
        (DISPUTE, False, "authorized", None),
        (RISK_REVIEW, False, "authorized", None),
        (CHARGES_DECLINED, False, "declined", "generic_decline"),
        (CHARGES_DECLINED, True, "declined", "generic_decline"),
    ],
)
def test_each_sandbox_card_authorizes_with_its_scripted_outcome(
    network, db, number, off_session, status, decline_code
):
    authorization = network.authorize(number, 1250, off_session=off_session)
    assert authorization.id.startswith("sbx_auth_")
    assert authorization == Authorization(authorization.id, status, 1250, "eur", decline_code, None)
    assert authorization_row(db, authorization.id)[:3] == (status, 1250, decline_code)


def test_bank_authentication_approved_leaves_the_payment_authorized_and_capturable(network):
    pending = network.authorize(AUTHENTICATION, 800)
    approved = network.call("complete_authentication", authorization_id=pending.id, approved=True)
    assert approved == Authorization(pending.id, "authorized", 800, "eur")
    assert network.call("capture", authorization_id=pending.id, amount=800) == Capture(pending.id, 800)


def test_bank_authentication_not_approved_declines_with_authentication_failed(network):
    pending = network.authorize(AUTHENTICATION, 800)
    failed = network.call("complete_authentication", authorization_id=pending.id, approved=False)
    assert (failed.status, failed.decline_code) == ("declined", "authentication_failed")
    again = network.refused("complete_authentication", authorization_id=pending.id, approved=True)
    assert again.code == "authorization_not_awaiting_authentication"


def test_a_zero_amount_card_check_passes_for_the_failed_renewals_card_but_its_charges_decline(network):
    check = network.authorize(CHARGES_DECLINED, 0)
    assert (check.status, check.amount) == ("authorized", 0)
    raised = network.call("increment_authorization", authorization_id=check.id, amount=500)
    assert (raised.status, raised.decline_code, raised.amount) == ("declined", "generic_decline", 0)
    declined_check = network.authorize(GENERIC_DECLINE, 0)
    assert (declined_check.status, declined_check.decline_code) == ("declined", "generic_decline")


def test_an_unknown_card_token_is_refused_as_no_such_card(network):
    refusal = network.refused(
        "authorize", card_token="sbx_card_nothing", amount=100, currency="eur", off_session=False
    )
    assert refusal.code == "no_such_card"


def test_a_card_token_and_an_authorization_belong_to_one_tenant_only(network, bridge, processor):
    token = network.tokenize().token
    mine = network.call("authorize", card_token=token, amount=900, currency="eur", off_session=False)
    for other in (
        create_tenant(bridge).tenant,
        Tenant(network.tenant.installation_id, not network.tenant.livemode),
    ):
        stranger = Network(processor, bridge, other)
        refusal = stranger.refused(
            "authorize", card_token=token, amount=900, currency="eur", off_session=False
        )
        assert refusal.code == "no_such_card"
        for operation, arguments in [
            ("capture", {"amount": 900}),
            ("cancel", {}),
            ("refund", {"amount": 1}),
            ("increment_authorization", {"amount": 1000}),
            ("complete_authentication", {"approved": True}),
        ]:
            refusal = stranger.refused(operation, authorization_id=mine.id, **arguments)
            assert refusal.code == "no_such_authorization", operation
        with pytest.raises(ProcessorRefused) as no_report:
            stranger.cost_report(mine.id)
        assert no_report.value.code == "no_such_authorization"
    assert network.call("capture", authorization_id=mine.id, amount=900) == Capture(mine.id, 900)


# the state machine ------------------------------------------------------------------------------------
def authorization_in(network: Network, status: str) -> Authorization:
    if status == "requires_action":
        return network.authorize(AUTHENTICATION)
    if status == "declined":
        return network.authorize(GENERIC_DECLINE)
    authorization = network.authorize()
    if status == "captured":
        network.call("capture", authorization_id=authorization.id, amount=authorization.amount)
    elif status == "canceled":
        network.call("cancel", authorization_id=authorization.id)
    return authorization


CHANGE_ARGUMENTS = {
    "complete_authentication": {"approved": True},
    "capture": {"amount": 1000},
    "cancel": {},
    "increment_authorization": {"amount": 1500},
    "refund": {"amount": 1},
}
STATUSES = ("requires_action", "authorized", "declined", "captured", "canceled")


@pytest.mark.parametrize("change", sorted(ALLOWED_FROM))
def test_each_change_is_allowed_only_from_the_statuses_the_state_machine_lists(network, db, change):
    allowed, refusal_code = ALLOWED_FROM[change]
    assert set(allowed) <= set(STATUSES)
    for status in STATUSES:
        authorization = authorization_in(network, status)
        if status in allowed:
            network.call(change, authorization_id=authorization.id, **CHANGE_ARGUMENTS[change])
        else:
            before = authorization_row(db, authorization.id)
            refusal = network.refused(change, authorization_id=authorization.id, **CHANGE_ARGUMENTS[change])
            assert refusal.code == refusal_code, (change, status)
            assert authorization_row(db, authorization.id) == before


def test_a_partial_capture_captures_that_amount_at_the_tenants_clock(network, db):
    network.advance_clock(5 * DAY)
    authorization = network.authorize(amount=1000)
    assert network.call("capture", authorization_id=authorization.id, amount=600) == Capture(
        authorization.id, 600
    )
    status, amount, _, captured, refunded, captured_at, _ = authorization_row(db, authorization.id)
    assert (status, amount, captured, refunded) == ("captured", 1000, 600, 0)
    assert abs((captured_at - (utcnow() + timedelta(days=5))).total_seconds()) < 60


def test_a_capture_answers_when_it_captured_and_a_replay_answers_the_same_time(network, db):
    network.advance_clock(2 * DAY)
    authorization = network.authorize(amount=1000)
    first = network.call("capture", key="op_when:capture", authorization_id=authorization.id, amount=1000)
    assert first.captured_at == authorization_row(db, authorization.id)[5]  # the row's, tenant's clock
    again = network.call("capture", key="op_when:capture", authorization_id=authorization.id, amount=1000)
    assert again.captured_at == first.captured_at


def test_the_risk_level_of_a_card_is_its_tenants_only_remembered_or_read(network, bridge, processor):
    risky = network.tokenize(RISK_REVIEW).token
    plain = network.tokenize().token
    fresh = SandboxProcessor(processor._sessionmaker)  # remembers nothing: reads the cards' rows
    for reader in (processor, fresh, fresh):
        assert bridge.run(reader.card_risk(network.tenant, card_token=risky)).risk_level == "elevated"
        assert bridge.run(reader.card_risk(network.tenant, card_token=plain)).risk_level == "normal"
    for other in (create_tenant(bridge).tenant, Tenant(network.tenant.installation_id, True)):
        for reader in (processor, fresh):
            with pytest.raises(ProcessorRefused) as refused:
                bridge.run(reader.card_risk(other, card_token=risky))
            assert refused.value.code == "no_such_card"


def test_a_capture_over_the_authorized_amount_or_under_one_is_refused(network, db):
    authorization = network.authorize(amount=1000)
    assert (
        network.refused("capture", authorization_id=authorization.id, amount=1001).code == "amount_too_large"
    )
    assert network.refused("capture", authorization_id=authorization.id, amount=0).code == "amount_invalid"
    assert authorization_row(db, authorization.id)[0] == "authorized"


def test_a_second_capture_is_refused_as_not_capturable(network):
    authorization = network.authorize(amount=1000)
    network.call("capture", authorization_id=authorization.id, amount=400)
    refusal = network.refused("capture", authorization_id=authorization.id, amount=400)
    assert refusal.code == "authorization_not_capturable"


def test_cancel_releases_an_authorized_or_pending_authorization(network):
    for authorization in (network.authorize(amount=700), network.authorize(AUTHENTICATION, 700)):
        canceled = network.call("cancel", authorization_id=authorization.id)
        assert canceled == Authorization(authorization.id, "canceled", 700, "eur")


def test_an_increment_raises_the_hold_to_the_new_total(network, db):
    authorization = network.authorize(amount=1000)
    raised = network.call("increment_authorization", authorization_id=authorization.id, amount=1800)
    assert raised == Authorization(authorization.id, "authorized", 1800, "eur")
    assert network.call("capture", authorization_id=authorization.id, amount=1800) == Capture(
        authorization.id, 1800
    )


def test_an_increment_must_raise_the_total(network):
    authorization = network.authorize(amount=1000)
    for amount in (1000, 999):
        refusal = network.refused("increment_authorization", authorization_id=authorization.id, amount=amount)
        assert refusal.code == "amount_invalid"


def test_an_increment_declined_for_insufficient_funds_keeps_the_old_hold(network, db):
    check = network.authorize(INSUFFICIENT_FUNDS, 0)  # a card check: no funds needed
    assert check.status == "authorized"
    declined = network.call("increment_authorization", authorization_id=check.id, amount=500)
    assert declined == Authorization(check.id, "declined", 0, "eur", "insufficient_funds")
    assert authorization_row(db, check.id)[:3] == ("authorized", 0, None)


def test_refunds_accumulate_up_to_the_captured_amount(network, db):
    authorization = network.captured(amount=1000, captured=800)
    first = network.call("refund", authorization_id=authorization.id, amount=300)
    assert first.processor_id.startswith("sbx_re_")
    assert (first.authorization_id, first.amount) == (authorization.id, 300)
    second = network.call("refund", authorization_id=authorization.id, amount=500)
    assert second.processor_id != first.processor_id
    refusal = network.refused("refund", authorization_id=authorization.id, amount=1)
    assert refusal.code == "amount_too_large"
    assert authorization_row(db, authorization.id)[3:5] == (800, 800)


def test_a_refund_over_what_remains_or_under_one_is_refused(network, db):
    authorization = network.captured(amount=1000)
    assert (
        network.refused("refund", authorization_id=authorization.id, amount=1001).code == "amount_too_large"
    )
    assert network.refused("refund", authorization_id=authorization.id, amount=0).code == "amount_invalid"
    assert authorization_row(db, authorization.id)[4] == 0


# idempotency ------------------------------------------------------------------------------------------
def test_a_repeated_key_with_the_same_request_replays_the_first_answer(network, db):
    token = network.tokenize().token
    request = {"card_token": token, "amount": 1000, "currency": "eur", "off_session": False}
    first = network.call("authorize", key="op_1:authorize", **request)
    assert network.call("authorize", key="op_1:authorize", **request) == first
    capture = network.call("capture", key="op_1:capture", authorization_id=first.id, amount=1000)
    assert network.call("capture", key="op_1:capture", authorization_id=first.id, amount=1000) == capture
    refund = network.call("refund", key="op_1:refund", authorization_id=first.id, amount=250)
    assert network.call("refund", key="op_1:refund", authorization_id=first.id, amount=250) == refund
    assert db.execute(
        "SELECT count(*), max(amount_refunded) FROM sandbox_authorizations WHERE installation_id = %s",
        (network.tenant.installation_id,),
    ).fetchone() == (1, 250)


def test_the_same_card_tokenized_again_under_one_key_replays_the_first_authorization(network, db):
    """A confirmation retried after its transaction was lost tokenizes the card anew: the network knows
    the card by its fingerprint, so the retry gets the first answer and no second hold."""
    first_card, again = network.tokenize(), network.tokenize()
    assert first_card.token != again.token and first_card.fingerprint == again.fingerprint
    request = {"amount": 1000, "currency": "eur", "off_session": False, "reference": "pi_lost"}
    first = network.call(
        "authorize",
        key="pi_lost:authorize:1",
        card_token=first_card.token,
        card_fingerprint=first_card.fingerprint,
        **request,
    )
    replayed = network.call(
        "authorize",
        key="pi_lost:authorize:1",
        card_token=again.token,
        card_fingerprint=again.fingerprint,
        **request,
    )
    assert replayed == first
    other_card = network.tokenize("4000000000000259")
    refused = network.refused(
        "authorize",
        key="pi_lost:authorize:1",
        card_token=other_card.token,
        card_fingerprint=other_card.fingerprint,
        **request,
    )
    assert refused.code == "idempotency_key_reused"
    assert db.execute(
        "SELECT count(*), min(reference) FROM sandbox_authorizations WHERE installation_id = %s",
        (network.tenant.installation_id,),
    ).fetchone() == (1, "pi_lost")


def test_open_authorizations_lists_what_still_holds_or_took_money_in_its_window(network, db):
    held = network.authorize(amount=700, reference="pi_held")
    captured = network.captured(amount=800)
    refunded = network.captured(amount=900)
    network.call("refund", authorization_id=refunded.id, amount=900)
    canceled = network.authorize(amount=600)
    network.call("cancel", authorization_id=canceled.id)
    declined = network.authorize("4000000000000002", amount=500)
    (start, end) = db.execute(
        "SELECT min(created_at), max(created_at) FROM sandbox_authorizations WHERE id = ANY(%s)",
        ([held.id, captured.id, refunded.id, canceled.id, declined.id],),
    ).fetchone()
    listed = network.bridge.run(
        network.processor.open_authorizations(
            created_after=start - timedelta(microseconds=1), created_before=end, limit=1000
        )
    )
    mine = {
        record.id: record for record in listed if record.installation_id == network.tenant.installation_id
    }
    assert set(mine) == {held.id, captured.id}
    assert (mine[held.id].status, mine[held.id].reference, mine[held.id].amount) == (
        "authorized",
        "pi_held",
        700,
    )
    assert (mine[captured.id].status, mine[captured.id].amount_captured) == ("captured", 800)
    after_all = network.bridge.run(
        network.processor.open_authorizations(created_after=end, created_before=end, limit=1000)
    )
    assert after_all == []


def test_a_stored_refusal_is_replayed_even_after_the_state_changed(network):
    pending = network.authorize(AUTHENTICATION, 500)
    early = network.refused("capture", key="op_2:capture", authorization_id=pending.id, amount=500)
    assert early.code == "authorization_not_capturable"
    network.call("complete_authentication", authorization_id=pending.id, approved=True)
    replayed = network.refused("capture", key="op_2:capture", authorization_id=pending.id, amount=500)
    assert (replayed.code, replayed.message) == (early.code, early.message)
    assert network.call("capture", authorization_id=pending.id, amount=500) == Capture(pending.id, 500)


def test_a_key_reused_with_another_request_is_refused(network, db):
    authorization = network.authorize(amount=1000)
    network.call("capture", key="op_3:capture", authorization_id=authorization.id, amount=500)
    other_amount = network.refused(
        "capture", key="op_3:capture", authorization_id=authorization.id, amount=600
    )
    assert other_amount.code == "idempotency_key_reused"
    other_operation = network.refused(
        "refund", key="op_3:capture", authorization_id=authorization.id, amount=500
    )
    assert other_operation.code == "idempotency_key_reused"
    assert authorization_row(db, authorization.id)[3:5] == (500, 0)


# concurrency ------------------------------------------------------------------------------------------
def test_concurrent_captures_of_one_authorization_capture_it_once(network, db):
    authorization = network.authorize(amount=1000)

    async def race():
        return await asyncio.gather(
            *(
                network.processor.capture(
                    network.tenant,
                    idempotency_key=f"race_{n}:capture",
                    authorization_id=authorization.id,
                    amount=1000,
                )
                for n in range(4)
            ),
            return_exceptions=True,
        )

    answers = network.bridge.run(race())
    assert answers.count(Capture(authorization.id, 1000)) == 1
    refusals = [answer for answer in answers if isinstance(answer, ProcessorRefused)]
    assert [refusal.code for refusal in refusals] == ["authorization_not_capturable"] * 3
    assert authorization_row(db, authorization.id)[3] == 1000


def test_concurrent_refunds_never_exceed_the_captured_amount(network, db):
    authorization = network.captured(amount=1000)

    async def race():
        return await asyncio.gather(
            *(
                network.processor.refund(
                    network.tenant,
                    idempotency_key=f"race_{n}:refund",
                    authorization_id=authorization.id,
                    amount=300,
                )
                for n in range(5)
            ),
            return_exceptions=True,
        )

    answers = network.bridge.run(race())
    refunds = [answer for answer in answers if not isinstance(answer, BaseException)]
    refusals = [answer.code for answer in answers if isinstance(answer, ProcessorRefused)]
    assert (len(refunds), refusals) == (3, ["amount_too_large"] * 2)
    assert authorization_row(db, authorization.id)[4] == 900


def test_concurrent_calls_with_one_key_get_one_answer(network, db):
    token = network.tokenize().token

    async def race():
        return await asyncio.gather(
            *(
                network.processor.authorize(
                    network.tenant,
                    idempotency_key="op_4:authorize",
                    card_token=token,
                    card_fingerprint="fp_race",
                    amount=1000,
                    currency="eur",
                    off_session=False,
                    reference="pi_race",
                )
                for _ in range(4)
            )
        )

    answers = network.bridge.run(race())
    assert len(set(answers)) == 1
    assert db.execute(
        "SELECT count(*) FROM sandbox_authorizations WHERE installation_id = %s",
        (network.tenant.installation_id,),
    ).fetchone() == (1,)


# the cost report --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("amount", "cost"), [(1, 31), (1000, 59), (1001, 60), (10_000, 320), (10**15, 29 * 10**12 + 30)]
)
def test_the_processing_cost_is_2_9_percent_rounded_up_plus_30(amount, cost):
    assert processing_cost(amount) == cost


def test_the_cost_is_reported_only_once_the_report_days_have_passed_on_the_tenants_clock(network, db):
    authorization = network.captured(amount=2000, captured=1001)
    assert network.cost_report(authorization.id) is None
    network.advance_clock(2 * DAY)
    assert network.cost_report(authorization.id) is None
    network.advance_clock(DAY + 60)
    report = network.cost_report(authorization.id)
    assert (report.authorization_id, report.cost_amount, report.currency) == (authorization.id, 60, "eur")
    network.call("refund", authorization_id=authorization.id, amount=1001)
    assert network.cost_report(authorization.id) == report  # reported once, whatever happened since
    assert authorization_row(db, authorization.id)[6] == 60


def test_an_authorization_never_captured_has_no_cost_report(network):
    authorized, canceled = network.authorize(), network.authorize()
    network.call("cancel", authorization_id=canceled.id)
    declined = network.authorize(GENERIC_DECLINE)
    network.advance_clock(30 * DAY)
    for authorization in (authorized, canceled, declined):
        assert network.cost_report(authorization.id) is None


# injected faults --------------------------------------------------------------------------------------
def test_a_transient_fault_fails_the_call_without_recording_it_and_a_retry_succeeds(network, db):
    token = network.tokenize().token
    network.inject_faults("authorize", "transient", count=2)
    request = {"card_token": token, "amount": 1000, "currency": "eur", "off_session": False}
    for _ in range(2):
        with pytest.raises(ProcessorUnavailable):
            network.call("authorize", key="op_5:authorize", **request)
    assert db.execute(
        "SELECT count(*) FROM sandbox_processor_calls WHERE installation_id = %s",
        (network.tenant.installation_id,),
    ).fetchone() == (0,)
    assert network.call("authorize", key="op_5:authorize", **request).status == "authorized"


def test_a_permanent_fault_is_a_stored_refusal_for_its_key(network, db):
    authorization = network.authorize(amount=1000)
    network.inject_faults("capture", "permanent")
    for _ in range(2):
        refusal = network.refused(
            "capture", key="op_6:capture", authorization_id=authorization.id, amount=1000
        )
        assert refusal.code == "processor_error"
    assert authorization_row(db, authorization.id)[0] == "authorized"
    assert network.call("capture", authorization_id=authorization.id, amount=1000) == Capture(
        authorization.id, 1000
    )


def test_faults_apply_to_their_own_operation_type_only(network):
    network.inject_faults("refund", "transient")
    authorization = network.captured(amount=1000)  # authorize and capture are untouched
    with pytest.raises(ProcessorUnavailable):
        network.call("refund", authorization_id=authorization.id, amount=100)
    assert network.call("refund", authorization_id=authorization.id, amount=100).amount == 100


@pytest.mark.parametrize(
    ("operation_type", "arguments"),
    [
        ("cancel", {}),
        ("increment_authorization", {"amount": 2000}),
        ("complete_authentication", {"approved": True}),
    ],
)
def test_a_transient_fault_on_any_authorization_change_leaves_the_authorization_as_it_was(
    network, db, operation_type, arguments
):
    authorization = authorization_in(network, "requires_action" if "approved" in arguments else "authorized")
    before = authorization_row(db, authorization.id)
    network.inject_faults(operation_type, "transient")
    with pytest.raises(ProcessorUnavailable):
        network.call(operation_type, key="op_7:change", authorization_id=authorization.id, **arguments)
    assert authorization_row(db, authorization.id) == before
    network.call(operation_type, key="op_7:change", authorization_id=authorization.id, **arguments)
    assert authorization_row(db, authorization.id) != before


def test_tokenize_faults_fail_tokenizing_and_save_no_card(network, db):
    network.inject_faults("tokenize", "transient")
    with pytest.raises(ProcessorUnavailable):
        network.tokenize()
    network.inject_faults("tokenize", "permanent")
    with pytest.raises(ProcessorRefused) as refused:
        network.tokenize()
    assert not isinstance(refused.value, CardNotAccepted) and refused.value.code == "processor_error"
    assert db.execute(
        "SELECT count(*) FROM sandbox_cards WHERE installation_id = %s", (network.tenant.installation_id,)
    ).fetchone() == (0,)
    assert network.tokenize().last4 == "4242"


def test_cost_report_faults_fail_the_report_until_used_up(network):
    authorization = network.captured()
    network.advance_clock(3 * DAY + 60)
    network.inject_faults("cost_report", "transient")
    with pytest.raises(ProcessorUnavailable):
        network.cost_report(authorization.id)
    network.inject_faults("cost_report", "permanent")
    with pytest.raises(ProcessorRefused) as refused:
        network.cost_report(authorization.id)
    assert refused.value.code == "processor_error"
    assert network.cost_report(authorization.id).cost_amount == 59


def test_a_card_details_repr_never_shows_the_number():
    assert "4242424242424242" not in repr(card())
