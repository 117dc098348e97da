"""Payment intents, in Stripe's lifecycle (CONVENTIONS.md §6). State machines are data:

    requires_payment_method -> requires_confirmation   a saved card is set (create or update)
    requires_payment_method
    | requires_confirmation -> requires_action         the bank wants the payer to authenticate
                            -> requires_capture        authorized, manual capture
                            -> succeeded               authorized and captured at once (automatic)
                            -> requires_payment_method declined: try another card
    requires_action         -> requires_capture | succeeded | requires_payment_method
    requires_capture        -> succeeded               captured (all, or part without a fee reserve)
    any but succeeded       -> canceled

Confirming, capturing, cancelling and incrementing talk to the processor during the request, as a
payer at a checkout expects an answer at once. Each processor call carries a key derived from the
payment and its step, so a request retried after a crash repeats the call harmlessly. On an outside
processor the /v1 steps and the bank's authentication page run in atomic phases (phases.py): no
transaction, row lock or connection is held while a call is on the network, and a payment with a call
in flight refuses other steps (409) while reading as before. Refunds go through a worker (refunds.py).

The processor commits on its own: a confirmation whose transaction is lost after the network charged
the card (a database restart) leaves a charge no payment recorded. A retried confirmation with the same
card finds it again: the authorization key is the payment's committed attempt count and the card's
fingerprint (never the token, new at each tokenization), and the capture key names the authorization.
A charge nobody retries is released by the orphan sweep (orphans.py).

In modules: state (the state machine, events, reading and locking), hooks (what other domains
register: capture listeners, facts, risk screens, owners' refusals), create (creating, one at a time, in
one statement or many together; updating), confirm (confirming, off-session charges, an authorization
applied), capture (capturing, cancelling, incrementing), answers (declines and the processor's faults)
and authentication (the bank's page). Every public name stays importable from here, as other domains,
the workers and the benchmark use it.
"""

from __future__ import annotations

from .answers import DECLINE_MESSAGES
from .authentication import (
    AuthenticationOutcome,
    AuthenticationView,
    abandon_authentication,
    authentication_view,
    complete_authentication,
)
from .capture import cancel_payment_intent, capture_payment_intent, increment_authorization
from .confirm import (
    OffSessionCharging,
    ask_off_session,
    authorization_key,
    confirm_locked_payment,
    confirm_payment_intent,
    off_session_charges,
    record_off_session_charges,
)
from .create import (
    DELIVERIES_IN_ONE_STATEMENT,
    CommissionPolicy,
    CreatedPayment,
    FundsFlow,
    PlainPayment,
    check_amount_covers,
    commission_policy,
    create_payment_intent,
    create_payment_intent_answered,
    create_payment_intents,
    resolve_funds_flow,
    update_payment_intent,
)
from .hooks import (
    HELD_FOR_REVIEW,
    CaptureListener,
    CapturesListener,
    Confirmation,
    OwnerRefusal,
    ReviewHolds,
    RiskScreen,
    RiskVerdict,
    held_among,
    register_capture_listener,
    register_owner_refusal,
    register_payment_fact,
    register_risk_screen,
)
from .state import (
    CANCELABLE,
    CONFIRMABLE,
    TRANSITIONS,
    StepAnswer,
    announce,
    get_payment_intent,
    list_payment_intents,
    lock_payment_intent,
    lock_payment_intents,
)

__all__ = [
    "CANCELABLE",
    "CONFIRMABLE",
    "DECLINE_MESSAGES",
    "DELIVERIES_IN_ONE_STATEMENT",
    "HELD_FOR_REVIEW",
    "TRANSITIONS",
    "AuthenticationOutcome",
    "AuthenticationView",
    "CaptureListener",
    "CapturesListener",
    "CommissionPolicy",
    "Confirmation",
    "CreatedPayment",
    "FundsFlow",
    "OffSessionCharging",
    "OwnerRefusal",
    "PlainPayment",
    "ReviewHolds",
    "RiskScreen",
    "RiskVerdict",
    "StepAnswer",
    "abandon_authentication",
    "announce",
    "ask_off_session",
    "authentication_view",
    "authorization_key",
    "cancel_payment_intent",
    "capture_payment_intent",
    "check_amount_covers",
    "commission_policy",
    "complete_authentication",
    "confirm_locked_payment",
    "confirm_payment_intent",
    "create_payment_intent",
    "create_payment_intent_answered",
    "create_payment_intents",
    "get_payment_intent",
    "held_among",
    "increment_authorization",
    "list_payment_intents",
    "lock_payment_intent",
    "lock_payment_intents",
    "off_session_charges",
    "record_off_session_charges",
    "register_capture_listener",
    "register_owner_refusal",
    "register_payment_fact",
    "register_risk_screen",
    "resolve_funds_flow",
    "update_payment_intent",
]
