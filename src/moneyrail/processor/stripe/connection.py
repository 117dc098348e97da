"""One Stripe account as the adapter reaches it: the official client on an httpx transport, the
keyed options every call carries, and readers of Stripe's answers.

The client's own retries are off (`max_network_retries=0`): the engine retries, under the same
operation key, so a retry is never a second charge. The readers take what an answer holds by name
and tolerate what a Stripe-compatible server leaves out (localstripe omits `amount_received`,
answers `latest_charge` expanded whatever was asked): the adapter's logic never depends on a field
Stripe always sends but a test server may not.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from datetime import UTC, datetime
from typing import Any

import stripe

from moneyrail.kit.tenant import Tenant

from .errors import translated

DEFAULT_API_BASE = "https://api.stripe.com"
DEFAULT_FILES_BASE = "https://files.stripe.com"
DEFAULT_TIMEOUT_SECONDS = 30.0
PAGE_SIZE = 100  # Stripe's largest list page


class StripeConnection:
    """The client of one secret or restricted key. `files_base`: where uploads go; by default Stripe's
    upload host when `api_base` is Stripe's own, else `api_base` (localstripe and the test double
    serve both)."""

    def __init__(
        self,
        api_key: str,
        *,
        api_base: str = DEFAULT_API_BASE,
        files_base: str | None = None,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    ) -> None:
        api_base = api_base.rstrip("/")
        if files_base is None:
            files_base = DEFAULT_FILES_BASE if api_base == DEFAULT_API_BASE else api_base
        self.http = stripe.HTTPXClient(timeout=timeout_seconds)
        self.client = stripe.StripeClient(
            api_key,
            base_addresses={"api": api_base, "files": files_base.rstrip("/")},
            http_client=self.http,
            max_network_retries=0,
        )
        self.v1 = self.client.v1

    async def aclose(self) -> None:
        await self.http.close_async()  # type: ignore[no-untyped-call]  # stripe leaves it unannotated


async def fetched(call: Awaitable[stripe.StripeObject]) -> dict[str, Any]:
    """The call's answer as plain data (`to_dict`: the readers below take it by name); a Stripe error
    raised as moneyrail's (errors.py)."""
    try:
        answer = await call
    except stripe.StripeError as error:
        raise translated(error) from error
    return answer.to_dict()


def plain(answer: stripe.StripeObject | None) -> dict[str, Any]:
    return answer.to_dict() if answer is not None else {}


def keyed(idempotency_key: str, *, account: str | None = None) -> stripe.RequestOptions:
    """A write's options: Stripe's `Idempotency-Key` (the operation's key, as the sandbox takes it),
    and `Stripe-Account` when the call is made as a connected account."""
    options: stripe.RequestOptions = {"idempotency_key": idempotency_key}
    if account is not None:
        options["stripe_account"] = account
    return options


def tenant_metadata(tenant: Tenant, **more: str) -> dict[str, str]:
    """What moneyrail writes on every object it makes: whose it is, for the listings (Stripe's metadata
    values are strings)."""
    return {
        "installation_id": tenant.installation_id,
        "livemode": "true" if tenant.livemode else "false",
        **more,
    }


# readers ------------------------------------------------------------------------------------------
def text(answer: Mapping[str, Any], name: str) -> str | None:
    value = answer.get(name)
    return value if isinstance(value, str) else None


def whole(answer: Mapping[str, Any], name: str, default: int = 0) -> int:
    value = answer.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def nested(answer: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    """An expanded object (a mapping), or None: absent, null, or only its id."""
    value = answer.get(name)
    return value if isinstance(value, Mapping) else None


def reference(answer: Mapping[str, Any], name: str) -> str | None:
    """The id of a field that holds an id or, expanded, the object."""
    value = answer.get(name)
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return text(value, "id")
    return None


def items(answer: Mapping[str, Any], name: str) -> list[Mapping[str, Any]]:
    """The objects of a list field: a plain list, or a Stripe list object's `data`."""
    value = answer.get(name)
    if isinstance(value, Mapping):
        value = value.get("data")
    if not isinstance(value, list):
        return []
    return [each for each in value if isinstance(each, Mapping)]


def metadata(answer: Mapping[str, Any]) -> Mapping[str, Any]:
    return nested(answer, "metadata") or {}


def stamp(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)
