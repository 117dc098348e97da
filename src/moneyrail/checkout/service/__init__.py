"""Checkout sessions (spec 2, 3 and 4.N): a hosted page that takes one payment from a payer.

A session's state machine is data:

    open -> complete   its payment is paid (succeeded, or authorized for a manual capture)
    open -> expired    30 minutes pass on the environment's clock (the sweep, a sandbox clock advance),
                       or the expire operation; an unfinished one-off payment is cancelled with it,
                       a payment another domain owns (an order, an invoice) is left to its owner, and
                       the expire operation on an order-bound payment is refused (spec part 3)

The checkout URL is a credential: 43 random base62 characters (256 bits), answered once at creation
and kept only as a SHA-256. It stops working once the session is complete or expired, and the page
refuses a session past `expires_at` even before the sweep has run.

A returning browser confirms nothing: the page reads the payment's own status, and callers confirm an
order on `payment_intent.succeeded` and by reading the payment (spec 4.N rule 5).

How the page takes a new card depends on the environment's processor (CONVENTIONS.md §6): the sandbox
simulator takes the digits typed into the page's own fields; anywhere else (every live environment, a
sandbox on Stripe's test mode) the card is typed into Stripe.js's fields, goes from the payer's browser
to Stripe, and the form posts only Stripe's token - typed card fields are refused there, unread.
Bank authentication on Stripe (3-D Secure) needs Stripe.js's own `handleCardAction` in the page, which
this page does not run yet (localstripe, the tests' Stripe, has none to test it against): a card that
asks for it is let go - Stripe's authorization canceled, nothing charged - and the payer is told to
use another card.

In modules: sessions (the state machine, creating, reading, completing, expiring) and page (the hosted
page). Every public name stays importable from here.
"""

from __future__ import annotations

from .page import (
    AUTHENTICATION_NOT_RUN,
    TYPED_CARD,
    TYPED_CARD_REFUSED,
    CardEntry,
    ChangeConfirmation,
    CheckoutView,
    Notice,
    PageStep,
    PaymentForm,
    Redirect,
    SavedCard,
    card_entry,
    checkout_id_for,
    leave_checkout,
    pay_checkout,
    payment_of_link,
    return_from_authentication,
    return_without_link,
    show_checkout,
)
from .sessions import (
    PAID,
    SESSION_LIFETIME,
    SWEEP_BATCH,
    SWEEP_SANDBOXES,
    TOKEN_LENGTH,
    TRANSITIONS,
    CreatedCheckoutSession,
    PaymentOwner,
    PaymentOwnerLookup,
    checkout_url,
    create_checkout_session,
    expire_checkout_session,
    expire_due_sessions,
    get_checkout_session,
    register_payment_owner,
    return_url,
    sweep,
)

__all__ = [
    "AUTHENTICATION_NOT_RUN",
    "PAID",
    "SESSION_LIFETIME",
    "SWEEP_BATCH",
    "SWEEP_SANDBOXES",
    "TOKEN_LENGTH",
    "TRANSITIONS",
    "TYPED_CARD",
    "TYPED_CARD_REFUSED",
    "CardEntry",
    "ChangeConfirmation",
    "CheckoutView",
    "CreatedCheckoutSession",
    "Notice",
    "PageStep",
    "PaymentForm",
    "PaymentOwner",
    "PaymentOwnerLookup",
    "Redirect",
    "SavedCard",
    "card_entry",
    "checkout_id_for",
    "checkout_url",
    "create_checkout_session",
    "expire_checkout_session",
    "expire_due_sessions",
    "get_checkout_session",
    "leave_checkout",
    "pay_checkout",
    "payment_of_link",
    "register_payment_owner",
    "return_from_authentication",
    "return_url",
    "return_without_link",
    "show_checkout",
    "sweep",
]
