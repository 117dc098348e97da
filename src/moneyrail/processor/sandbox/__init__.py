"""The sandbox processor: a deterministic simulation of the card network and banks.

It keeps its own books in its own transactions, apart from moneyrail's unit of work, because it plays
an outside system: a call it answered stays answered even if moneyrail's transaction then rolls back
or its worker is killed. Repeating an idempotency key returns the stored answer. The calls on every
payment's path (tokenize, authorize, capture) are, in the usual case, one statement on a connection
outside any transaction: PostgreSQL commits it alone, with no BEGIN and COMMIT round trips.

Card numbers reach `tokenize_card` and go no further: a tokenized card keeps its scripted behaviour,
brand, last4, expiry and fingerprint (processor/cards.py).

The package: `processor.py` (the `SandboxProcessor` and its card calls), `transfer_calls.py` and
`dispute_calls.py` (its transfers and payouts, its disputes), `calls.py` (the keyed call they all make,
in its own transaction), `books.py` (a tenant's books and the keyed call's record), `charges.py`
(authorizations, captures, the off-session batch, the cost), `transfers.py` (a batch's answers),
`disputes.py` (the network's timetable and decision), `statements.py` (the SQL).
"""

from .books import ALLOWED_FROM, Answer
from .charges import COST_BASIS_POINTS, COST_FIXED_AMOUNT, processing_cost
from .disputes import (
    DISPUTE_CARD_HOURS,
    DISPUTE_DECISION_HOURS,
    DISPUTE_EVIDENCE_DAYS,
    DISPUTE_FEE_AMOUNT,
    DISPUTE_LOOKBACK_DAYS,
    WINNING_EVIDENCE,
    decide_dispute,
    tenants_with_dispute_cards,
)
from .processor import (
    NOT_YET_EXPIRED,
    REMEMBERED_CARDS,
    SANDBOX_CARD_COUNTRY,
    CardKey,
    SandboxProcessor,
)
from .transfer_calls import CLOSED_BANK_ACCOUNT, TEST_BANK_ACCOUNT

__all__ = [
    "ALLOWED_FROM",
    "CLOSED_BANK_ACCOUNT",
    "COST_BASIS_POINTS",
    "COST_FIXED_AMOUNT",
    "DISPUTE_CARD_HOURS",
    "DISPUTE_DECISION_HOURS",
    "DISPUTE_EVIDENCE_DAYS",
    "DISPUTE_FEE_AMOUNT",
    "DISPUTE_LOOKBACK_DAYS",
    "NOT_YET_EXPIRED",
    "REMEMBERED_CARDS",
    "SANDBOX_CARD_COUNTRY",
    "TEST_BANK_ACCOUNT",
    "WINNING_EVIDENCE",
    "Answer",
    "CardKey",
    "SandboxProcessor",
    "decide_dispute",
    "processing_cost",
    "tenants_with_dispute_cards",
]
