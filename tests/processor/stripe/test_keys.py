"""`check_key`: a Stripe key's mode by its prefix, then one live call (localstripe itself answers it)."""

from __future__ import annotations

import pytest

from moneyrail.config import Settings
from moneyrail.processor.interface import ProcessorUnavailable
from moneyrail.processor.stripe import StripeKeyRefused, StripeProcessor, check_key, key_mode
from tests.harness import free_port
from tests.processor.stripe.servers import SECRET_KEY, StripeServers
from tests.processor.stripe.support import StripeWorld


def test_a_working_test_key_passes_for_a_sandbox(world: StripeWorld) -> None:
    world.run(check_key(SECRET_KEY, livemode=False, api_base=world.servers.localstripe))


def test_a_key_stripe_refuses_is_refused_with_a_clear_message(world: StripeWorld) -> None:
    # localstripe takes only secret keys: a restricted key is one it does not know, as Stripe a revoked one
    with pytest.raises(StripeKeyRefused) as refused:
        world.run(check_key("rk_test_revoked_long_ago", livemode=False, api_base=world.servers.localstripe))
    assert refused.value.code == "processor_key_invalid"
    assert "Stripe did not accept this key" in refused.value.message


def test_a_test_key_is_refused_for_live_before_any_call(world: StripeWorld) -> None:
    calls = len(world.requests())
    for key in ("sk_test_abc", "rk_test_abc"):
        with pytest.raises(StripeKeyRefused) as refused:
            world.run(check_key(key, livemode=True, api_base=world.servers.double))
        assert refused.value.code == "processor_key_wrong_mode"
        assert "live environment needs a key starting with sk_live_ or rk_live_" in refused.value.message
    with pytest.raises(StripeKeyRefused) as refused:
        world.run(check_key("sk_live_abc", livemode=False, api_base=world.servers.double))
    assert refused.value.code == "processor_key_wrong_mode"
    assert len(world.requests()) == calls


def test_a_live_key_passes_for_live_on_a_server_that_takes_it(world: StripeWorld) -> None:
    # localstripe answers any sk_ key (and livemode false): the mode was judged by the prefix
    world.run(check_key("sk_live_moneyrail_tests", livemode=True, api_base=world.servers.localstripe))


def test_what_is_no_secret_key_is_refused(world: StripeWorld) -> None:
    for key in ("pk_test_publishable", "whsec_abc", ""):
        with pytest.raises(StripeKeyRefused) as refused:
            world.run(check_key(key, livemode=False, api_base=world.servers.double))
        assert refused.value.code == "processor_key_invalid"
    assert (key_mode("sk_live_x"), key_mode("rk_test_x"), key_mode("pk_live_x")) == (True, False, None)


def test_stripe_not_answering_says_nothing_about_the_key(world: StripeWorld) -> None:
    with pytest.raises(ProcessorUnavailable):
        world.run(check_key(SECRET_KEY, livemode=False, api_base=f"http://127.0.0.1:{free_port()}"))


def test_localstripe_itself_saves_a_card_from_a_token(
    world: StripeWorld, stripe_stack: StripeServers
) -> None:
    """The adapter speaks to localstripe directly where localstripe has the call (no double between)."""
    direct = StripeProcessor.configured(SECRET_KEY, Settings(stripe_api_base=stripe_stack.localstripe))
    try:
        card = world.run(direct.tokenize_card(world.tenant, world.token()))
        assert card.last4 == "4242" and card.token.startswith("cus_")
    finally:
        world.run(direct.aclose())
