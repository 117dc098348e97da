"""Is this Stripe key one moneyrail may keep for this environment? Its mode by its prefix, then one live
call that only a working key answers."""

from __future__ import annotations

from moneyrail.processor.interface import ProcessorRefused, ProcessorUnavailable

from .connection import DEFAULT_API_BASE, StripeConnection, fetched

# Secret and restricted keys (publishable `pk_` keys never authenticate a server's call)
LIVE_PREFIXES = ("sk_live_", "rk_live_")
TEST_PREFIXES = ("sk_test_", "rk_test_")
CHECK_TIMEOUT_SECONDS = 15.0


class StripeKeyRefused(ProcessorRefused):
    """The key cannot serve this environment: `code` says why (`processor_key_invalid`,
    `processor_key_wrong_mode`)."""


def key_mode(api_key: str) -> bool | None:
    """True for a live key, False for a test key, None for what is no secret or restricted key."""
    if api_key.startswith(LIVE_PREFIXES):
        return True
    if api_key.startswith(TEST_PREFIXES):
        return False
    return None


async def check_key(
    api_key: str,
    *,
    livemode: bool,
    api_base: str = DEFAULT_API_BASE,
    timeout_seconds: float = CHECK_TIMEOUT_SECONDS,
) -> None:
    """Refuse (StripeKeyRefused) a key that is not a secret or restricted key, a key of the other mode
    (a test key for live, a live key for a sandbox) - judged by its prefix, as a Stripe-compatible test
    server answers `livemode: false` for every key - and a key Stripe refuses (wrong, revoked, or
    lacking the balance read a restricted key needs) after one call, `GET /v1/balance`.
    ProcessorUnavailable: Stripe did not answer, nothing is known about the key."""
    mode = key_mode(api_key)
    environment = "live" if livemode else "sandbox"
    if mode is None:
        raise StripeKeyRefused(
            "processor_key_invalid",
            "This is not a Stripe secret or restricted key: they start with sk_live_, rk_live_, sk_test_ "
            "or rk_test_ (a publishable pk_ key cannot be used here).",
        )
    if mode != livemode:
        wanted, given = ("sk_live_ or rk_live_", "test") if livemode else ("sk_test_ or rk_test_", "live")
        raise StripeKeyRefused(
            "processor_key_wrong_mode",
            f"This is a Stripe {given}-mode key; the {environment} environment needs a key starting "
            f"with {wanted}.",
        )
    connection = StripeConnection(api_key, api_base=api_base, timeout_seconds=timeout_seconds)
    try:
        await fetched(connection.v1.balance.retrieve_async())
    except ProcessorUnavailable:
        raise
    except ProcessorRefused as refused:
        raise StripeKeyRefused(
            "processor_key_invalid",
            f"Stripe did not accept this key (wrong or revoked?): {refused.message}",
        ) from refused
    finally:
        await connection.aclose()
