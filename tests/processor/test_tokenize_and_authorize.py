"""The sandbox's `tokenize_and_authorize`: the same cards, authorizations, recorded calls, refusals and
faults as `tokenize_card` then `authorize`, in one statement in the usual case."""

from __future__ import annotations

from typing import Any

import pytest

from moneyrail.processor.interface import (
    Authorization,
    AuthorizationRequest,
    CardNotAccepted,
    ProcessorRefused,
    ProcessorUnavailable,
    TokenizedAndAuthorized,
    TokenizedCard,
)
from tests.processor.network import SUCCEEDS, Network, card
from tests.processor.test_sandbox_processor import (
    AUTHENTICATION,
    CHARGES_DECLINED,
    GENERIC_DECLINE,
    RISK_REVIEW,
    authorization_row,
)


def tokenize_and_authorize(
    network: Network,
    number: str = SUCCEEDS,
    *,
    key: str = "pi_1:authorize:1",
    block: bool = False,
    tokens: list[str] | None = None,
    saves_card: bool = False,
) -> tuple[TokenizedAndAuthorized, list[str]]:
    """The call, and what the chooser saw of the card's risk before anything was authorized; `tokens`
    gets the card's token."""
    seen: list[str] = []

    async def choose(tokenized: TokenizedCard) -> AuthorizationRequest | None:
        if tokens is not None:
            tokens.append(tokenized.token)
        risk = await network.processor.card_risk(network.tenant, card_token=tokenized.token)
        seen.append(risk.risk_level)
        if block:
            return None
        return AuthorizationRequest(key, 1500, "eur", False, "pi_1", saves_card=saves_card)

    answered = network.bridge.run(
        network.processor.tokenize_and_authorize(network.tenant, card(number), choose)
    )
    return answered, seen


def count(db: Any, table: str, installation_id: str) -> int:
    return int(
        db.execute(f"SELECT count(*) FROM {table} WHERE installation_id = %s", (installation_id,)).fetchone()[
            0
        ]
    )


@pytest.mark.parametrize(
    ("number", "status", "decline_code", "risk_level"),
    [
        (SUCCEEDS, "authorized", None, "normal"),
        (GENERIC_DECLINE, "declined", "generic_decline", "normal"),
        (AUTHENTICATION, "requires_action", None, "normal"),
        (RISK_REVIEW, "authorized", None, "elevated"),
    ],
)
def test_the_card_is_saved_and_authorized_as_the_two_calls_would(
    network, db, number, status, decline_code, risk_level
):
    answered, seen = tokenize_and_authorize(network, number)
    assert seen == [risk_level]
    assert answered.card.last4 == number[-4:]
    authorization = answered.authorization
    assert isinstance(authorization, Authorization)
    assert (authorization.status, authorization.amount, authorization.decline_code) == (
        status,
        1500,
        decline_code,
    )
    assert authorization_row(db, authorization.id)[:3] == (status, 1500, decline_code)
    # recorded under its key as `authorize` records it: asked again (a retry tokenizing the card again),
    # the first answer, not a second authorization
    again, _ = tokenize_and_authorize(network, number)
    assert again.authorization == authorization and again.card.token != answered.card.token
    assert count(db, "sandbox_authorizations", network.tenant.installation_id) == 1
    assert count(db, "sandbox_cards", network.tenant.installation_id) == 2


@pytest.mark.parametrize("mode", ["transient", "permanent"])
def test_a_tokenize_fault_saves_no_card_authorizes_nothing_and_forgets_the_risk_it_answered(
    network, db, mode
):
    network.inject_faults("tokenize", mode)
    raised = ProcessorUnavailable if mode == "transient" else ProcessorRefused
    tokens: list[str] = []
    with pytest.raises(raised):
        tokenize_and_authorize(network, tokens=tokens)
    assert count(db, "sandbox_cards", network.tenant.installation_id) == 0
    assert count(db, "sandbox_authorizations", network.tenant.installation_id) == 0
    assert count(db, "sandbox_processor_calls", network.tenant.installation_id) == 0
    # the risk answered to the chooser is not kept for a card never saved: its token is unknown
    (token,) = tokens
    with pytest.raises(ProcessorRefused):
        network.bridge.run(network.processor.card_risk(network.tenant, card_token=token))
    assert isinstance(tokenize_and_authorize(network)[0].authorization, Authorization)  # used up


def test_a_refused_card_saves_nothing_and_authorizes_nothing(network, db):
    with pytest.raises(CardNotAccepted) as refused:
        tokenize_and_authorize(network, "4000056655665556")
    assert refused.value.decline_code == "test_mode_live_card"
    network.advance_clock(5 * 366 * 86_400)  # the card's expiry now passed on the tenant's clock
    with pytest.raises(CardNotAccepted) as expired:
        tokenize_and_authorize(network)
    assert expired.value.decline_code == "expired_card"
    assert count(db, "sandbox_cards", network.tenant.installation_id) == 0
    assert count(db, "sandbox_authorizations", network.tenant.installation_id) == 0


@pytest.mark.parametrize("mode", ["transient", "permanent"])
def test_an_authorize_fault_saves_the_card_and_answers_the_fault(network, db, mode):
    network.inject_faults("authorize", mode)
    answered, _ = tokenize_and_authorize(network)
    expected = ProcessorUnavailable if mode == "transient" else ProcessorRefused
    assert isinstance(answered.authorization, expected)
    assert count(db, "sandbox_cards", network.tenant.installation_id) == 1
    assert count(db, "sandbox_authorizations", network.tenant.installation_id) == 0
    retried, _ = tokenize_and_authorize(network)  # the fault used up; a permanent refusal replays
    if mode == "transient":
        assert (
            isinstance(retried.authorization, Authorization) and retried.authorization.status == "authorized"
        )
    else:
        assert isinstance(retried.authorization, ProcessorRefused)


def test_a_blocked_card_is_saved_and_nothing_is_authorized(network, db):
    answered, seen = tokenize_and_authorize(network, block=True)
    assert answered.authorization is None and seen == ["normal"]
    assert count(db, "sandbox_cards", network.tenant.installation_id) == 1
    assert count(db, "sandbox_processor_calls", network.tenant.installation_id) == 0


def test_the_failed_renewals_card_takes_the_charge_that_saves_it_and_declines_every_later_one(network, db):
    saving, _ = tokenize_and_authorize(network, CHARGES_DECLINED, saves_card=True)
    authorization = saving.authorization
    assert isinstance(authorization, Authorization)
    assert (authorization.status, authorization.decline_code) == ("authorized", None)
    assert authorization_row(db, authorization.id)[:3] == ("authorized", 1500, None)
    # a retry of that confirmation under its key gets the first answer, whatever it says of saving
    again, _ = tokenize_and_authorize(network, CHARGES_DECLINED)
    assert again.authorization == authorization
    # a charge that does not save the card typed: declined
    one_off, _ = tokenize_and_authorize(network, CHARGES_DECLINED, key="pi_2:authorize:1")
    assert isinstance(one_off.authorization, Authorization)
    assert (one_off.authorization.status, one_off.authorization.decline_code) == (
        "declined",
        "generic_decline",
    )
    # the saved card charged later, on-session or off: declined
    for off_session in (False, True):
        later = network.call(
            "authorize",
            card_token=saving.card.token,
            card_fingerprint=saving.card.fingerprint,
            amount=700,
            currency="eur",
            off_session=off_session,
            reference="pi_3",
        )
        assert (later.status, later.decline_code) == ("declined", "generic_decline")
