"""Cards on Stripe: a token made by Stripe.js in the payer's browser becomes a saved card.

Stripe charges a card again (off-session, a later payment) only when it is attached to a customer, so
every card is saved on a Stripe customer of its own when it arrives (moneyrail keeps its customers
itself; the processor's customer is just the card's holder). The reference moneyrail keeps for the card
(`TokenizedCard.token`, never shown) names both: `cus_.../card_...` (or `cus_.../pm_...`).

A `tok_` token (Stripe.js `createToken`) is attached as the customer's source, in the call that creates
the customer; a `pm_` payment method (Stripe.js `createPaymentMethod`) is read, then attached the same
way. Both calls are keyed by the token, which Stripe lets be used once: a retried request carrying the
same token gets the same card back, never a second customer.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from moneyrail.kit.tenant import Tenant
from moneyrail.processor.interface import (
    CardDetails,
    CardInput,
    CardToken,
    NotSupported,
    ProcessorRefused,
    TokenizedCard,
)

from .connection import StripeConnection, fetched, items, nested, tenant_metadata, text, whole

# A card source names its brand as printed ("American Express"); a payment method as moneyrail does
SOURCE_BRANDS = {
    "american express": "amex",
    "diners club": "diners",
    "eftpos australia": "eftpos_au",
    "mastercard": "mastercard",
}

RAW_CARD_MESSAGE = (
    "Card numbers are not accepted here: where a real processor runs, the card is typed into the "
    "processor's own fields (Stripe.js) and only its token is sent."
)


@dataclass(frozen=True)
class SavedCard:
    """moneyrail's reference to a card saved on Stripe: its customer (None for a bare payment method
    given as it is) and the card or payment method itself."""

    customer: str | None
    method: str

    @classmethod
    def parse(cls, reference: str) -> SavedCard:
        customer, separator, method = reference.partition("/")
        return cls(customer, method) if separator else cls(None, reference)

    def __str__(self) -> str:
        return f"{self.customer}/{self.method}" if self.customer else self.method


@dataclass(frozen=True)
class SavedCardDetails:
    card: TokenizedCard
    country: str  # the issuing country (ISO 3166-1 alpha-2), "" when Stripe does not say


def card_token(card: CardInput) -> str:
    """The token of a card given to Stripe; NotSupported for typed digits (CONVENTIONS.md §6)."""
    if isinstance(card, CardDetails):
        raise NotSupported(RAW_CARD_MESSAGE, code="card_token_required")
    assert isinstance(card, CardToken)
    token = card.token.strip()
    if not token.startswith(("tok_", "pm_")):
        raise NotSupported(
            "This is not a Stripe.js card token (tok_...) or payment method (pm_...).",
            code="card_token_invalid",
        )
    return token


async def save_card(connection: StripeConnection, tenant: Tenant, card: CardInput) -> SavedCardDetails:
    token = card_token(card)
    key = f"card:{token}"
    if token.startswith("tok_"):
        customer = await fetched(
            connection.v1.customers.create_async(
                {"source": token, "metadata": tenant_metadata(tenant), "expand": ["sources"]},
                {"idempotency_key": key},
            )
        )
        customer_id, source = text(customer, "id") or "", text(customer, "default_source")
        if source is None:
            raise ProcessorRefused("card_not_saved", "Stripe saved no card from the token.")
        attached = [each for each in items(customer, "sources") if text(each, "id") == source]
        details: Mapping[str, Any] = (
            attached[0]
            if attached
            else await fetched(connection.v1.customers.payment_sources.retrieve_async(customer_id, source))
        )
        return _saved(SavedCard(customer_id, source), details)
    method = await fetched(connection.v1.payment_methods.retrieve_async(token))
    customer = await fetched(
        connection.v1.customers.create_async(
            {"payment_method": token, "metadata": tenant_metadata(tenant)}, {"idempotency_key": key}
        )
    )
    return _saved(SavedCard(text(customer, "id") or "", token), nested(method, "card") or {})


async def card_country(connection: StripeConnection, saved: SavedCard) -> str:
    """The issuing country of a saved card, as Stripe knows it ("" when it does not say)."""
    if saved.method.startswith("card_") and saved.customer is not None:
        source = await fetched(
            connection.v1.customers.payment_sources.retrieve_async(saved.customer, saved.method)
        )
        return text(source, "country") or ""
    method = await fetched(connection.v1.payment_methods.retrieve_async(saved.method))
    return text(nested(method, "card") or {}, "country") or ""


def _saved(saved: SavedCard, details: Mapping[str, Any]) -> SavedCardDetails:
    """A Stripe card (a source `card_`, or a payment method's `card` hash) as moneyrail keeps it."""
    last4 = text(details, "last4") or ""
    return SavedCardDetails(
        TokenizedCard(
            token=str(saved),
            brand=brand_name(text(details, "brand")),
            last4=last4,
            exp_month=whole(details, "exp_month"),
            exp_year=whole(details, "exp_year"),
            fingerprint=shown_fingerprint(text(details, "fingerprint") or saved.method),
        ),
        text(details, "country") or "",
    )


def shown_fingerprint(stripes: str) -> str:
    """The card's fingerprint as moneyrail shows it: a digest of Stripe's (the same for the same number
    within one Stripe account, which is one installation's environment), so that no value of Stripe's
    reaches an answer; of the card's own id where Stripe gives none (no match across tokens then)."""
    return hashlib.sha256(f"stripe-fingerprint:{stripes}".encode()).hexdigest()[:24]


def brand_name(brand: str | None) -> str:
    name = (brand or "unknown").lower()
    return SOURCE_BRANDS.get(name, name.replace(" ", "_"))
