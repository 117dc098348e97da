"""Which processor moves an environment's money (CONVENTIONS.md §12), and its credentials.

`sandbox` is the simulator: sandbox environments only, and theirs by default. `stripe` is the
installation's own Stripe account, through a secret or restricted key (a test-mode key in a sandbox):
the key and the webhook endpoint's signing secret are sealed at rest (kit/crypto.py) and shown only as
a hint (`sk_live_…1234`); the publishable key (`pk_…`, for Stripe.js) is not secret. A live environment
starts with none, and live mode never simulates: a request that needs a processor is refused
(errors.ProcessorNotConfigured).

A key is checked before it is kept: by its prefix (its mode must be the environment's), then with one
call to Stripe (`check_processor_key`), made outside any transaction. The settings are read on every
call to a processor (processor/settings.py), remembered for `key_cache_seconds` (config.py): a change
made by the CLI reaches the web and worker processes within that lifetime, and this process at once.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from moneyrail.config import get_settings
from moneyrail.errors import ParameterInvalid, ParameterMissing
from moneyrail.kit import crypto
from moneyrail.kit.clock import utcnow
from moneyrail.kit.tenant import Tenant
from moneyrail.models import EnvironmentSettings
from moneyrail.models.installation import PROCESSORS
from moneyrail.processor.interface import ProcessorUnavailable
from moneyrail.processor.settings import SANDBOX, STRIPE, forget_processor
from moneyrail.processor.stripe import StripeKeyRefused, check_key, key_mode

from .service import get_environment_settings

WEBHOOK_SECRET_PREFIX = "whsec_"  # noqa: S105 - a prefix, not a secret


def hint(secret: str) -> str:
    """What may be shown of a secret: its kind and mode, and its last four characters
    (`sk_live_…1234`, `rk_test_…abcd`, `whsec_…abcd`)."""
    head = secret[: secret.index("_", 3) + 1] if secret.count("_") >= 2 else secret[: secret.find("_") + 1]
    return f"{head}…{secret[-4:]}"


async def check_processor_key(tenant: Tenant, processor: str, api_key: str) -> None:
    """Whether `api_key` may serve this environment on `processor`, asked before anything is stored and
    outside any transaction: its mode by its prefix, then one call to Stripe (at MONEYRAIL_STRIPE_API_BASE).
    A refusal is ParameterInvalid with what is wrong; Stripe not answering is ParameterInvalid too,
    saying that nothing is known about the key (nothing is stored: try again)."""
    if processor != STRIPE:
        raise ParameterInvalid(
            f"Only the stripe processor takes a key; {processor!r} does not.", param="processor_key"
        )
    try:
        await check_key(api_key, livemode=tenant.livemode, api_base=get_settings().stripe_api_base)
    except StripeKeyRefused as refused:
        raise ParameterInvalid(f"{refused.message} ({refused.code})", param="processor_key") from None
    except ProcessorUnavailable as fault:
        raise ParameterInvalid(
            f"Stripe could not be reached to check the key, so it was not stored: {fault}. Try again.",
            param="processor_key",
        ) from None


def _check_publishable_key(tenant: Tenant, publishable_key: str) -> None:
    prefix = "pk_live_" if tenant.livemode else "pk_test_"
    if publishable_key.startswith(("sk_", "rk_")):
        raise ParameterInvalid(
            "This is a secret key, not a publishable one: secret keys are read from --processor-key-file "
            "(never given on the command line).",
            param="processor_publishable_key",
        )
    if not publishable_key.startswith(prefix) or len(publishable_key) <= len(prefix):
        raise ParameterInvalid(
            f"The {'live' if tenant.livemode else 'sandbox'} environment's Stripe publishable key starts "
            f"with {prefix}.",
            param="processor_publishable_key",
        )


def _check_webhook_secret(webhook_secret: str, param: str) -> None:
    prefix = WEBHOOK_SECRET_PREFIX
    if not webhook_secret.startswith(prefix) or len(webhook_secret) <= len(prefix):
        raise ParameterInvalid(
            "A Stripe webhook endpoint's signing secret starts with whsec_ (Stripe shows it on the "
            "endpoint's page).",
            param=param,
        )


async def set_processor(
    session: AsyncSession,
    tenant: Tenant,
    *,
    processor: str | None = None,
    api_key: str | None = None,
    publishable_key: str | None = None,
    webhook_secret: str | None = None,
    connect_webhook_secret: str | None = None,
) -> EnvironmentSettings:
    """Store the environment's processor and credentials; None leaves each as it is. The key must have
    passed `check_processor_key` (this makes no call): here its mode is checked again by its prefix.
    Going back to `sandbox` (sandbox environments only) forgets the Stripe credentials.
    `webhook_secret` is the signing secret of the platform's webhook endpoint at Stripe,
    `connect_webhook_secret` that of its Connect endpoint (events on connected accounts)."""
    settings = await get_environment_settings(session, tenant)
    if processor is not None and processor not in PROCESSORS:
        raise ParameterInvalid(f"processor must be one of {', '.join(PROCESSORS)}", param="processor")
    if processor == SANDBOX and tenant.livemode:
        raise ParameterInvalid(
            "Live mode never simulates: the sandbox simulator cannot be the live environment's processor "
            "(use stripe with a live key).",
            param="processor",
        )
    if publishable_key is not None:
        _check_publishable_key(tenant, publishable_key)
    if webhook_secret is not None:
        _check_webhook_secret(webhook_secret, "processor_webhook_secret")
    if connect_webhook_secret is not None:
        _check_webhook_secret(connect_webhook_secret, "processor_connect_webhook_secret")
    chosen = processor or settings.processor
    if chosen != STRIPE and (api_key or publishable_key or webhook_secret or connect_webhook_secret):
        raise ParameterInvalid(
            "Keys and webhook secrets belong to the stripe processor: add --processor stripe.",
            param="processor",
        )
    if chosen == STRIPE and api_key is None and settings.processor_key is None:
        raise ParameterMissing(
            "The stripe processor needs the installation's Stripe secret or restricted key "
            "(--processor-key-file).",
            param="processor_key",
        )
    if api_key is not None and key_mode(api_key) is not tenant.livemode:
        raise ParameterInvalid(
            "This key's mode is not the environment's (a live environment takes sk_live_/rk_live_, a "
            "sandbox sk_test_/rk_test_).",
            param="processor_key",
        )
    if chosen == SANDBOX:
        settings.processor = SANDBOX
        settings.processor_key = settings.processor_key_hint = None
        settings.processor_publishable_key = None
        settings.processor_webhook_secret = settings.processor_webhook_secret_hint = None
        settings.processor_connect_webhook_secret = settings.processor_connect_webhook_secret_hint = None
    elif chosen == STRIPE:
        settings.processor = STRIPE
        if api_key is not None:
            settings.processor_key = crypto.seal_text(api_key)
            settings.processor_key_hint = hint(api_key)
        if publishable_key is not None:
            settings.processor_publishable_key = publishable_key
        if webhook_secret is not None:
            settings.processor_webhook_secret = crypto.seal_text(webhook_secret)
            settings.processor_webhook_secret_hint = hint(webhook_secret)
        if connect_webhook_secret is not None:
            settings.processor_connect_webhook_secret = crypto.seal_text(connect_webhook_secret)
            settings.processor_connect_webhook_secret_hint = hint(connect_webhook_secret)
    settings.updated_at = utcnow()
    await session.flush()
    forget_processor(tenant)  # this process at once; the others within the cache lifetime
    return settings
