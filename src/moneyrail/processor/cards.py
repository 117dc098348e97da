"""Card numbers as the sandbox network reads them: shape, Luhn check, brand, and the scripted sandbox cards.

Nothing here keeps a number: callers get only what may be stored (brand, last4, behaviour, fingerprint).
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import UTC, datetime

from moneyrail.kit.ids import BASE62
from moneyrail.processor.interface import CardDetails, CardNotAccepted

# What a sandbox card does when charged (CONVENTIONS.md §6). Stored on the tokenized card as `behaviour`.
SUCCEEDS = "succeeds"
GENERIC_DECLINE = "generic_decline"
INSUFFICIENT_FUNDS = "insufficient_funds"
AUTHENTICATION_REQUIRED = "authentication_required"  # on-session: the bank's page, then succeeds
DISPUTE = "dispute"  # succeeds; a (fraudulent) dispute opens later
RISK_REVIEW = "risk_review"  # succeeds at the network; moneyrail's risk rules send it to a review
# can be saved (passes a zero-amount check, and the charge made while saving it succeeds); every later
# charge of the saved card declines (failed renewals)
CHARGES_DECLINED = "charges_declined"

SANDBOX_CARDS: dict[str, str] = {
    "4242424242424242": SUCCEEDS,
    "4000000000000002": GENERIC_DECLINE,
    "4000000000009995": INSUFFICIENT_FUNDS,
    "4000002500003155": AUTHENTICATION_REQUIRED,
    "4000000000000259": DISPUTE,
    "4100000000000019": RISK_REVIEW,
    "4000000000000341": CHARGES_DECLINED,
}
BEHAVIOURS = tuple(dict.fromkeys(SANDBOX_CARDS.values()))

LIVE_CARD_MESSAGE = (
    "Your card was declined: this is the sandbox, use a sandbox card such as 4242 4242 4242 4242."
)
FINGERPRINT_LENGTH = 20


def luhn_valid(digits: str) -> bool:
    total = 0
    for position, character in enumerate(reversed(digits)):
        digit = int(character)
        if position % 2 == 1:
            digit = digit * 2 - 9 if digit > 4 else digit * 2
        total += digit
    return total % 10 == 0


def card_brand(digits: str) -> str:
    if digits.startswith("4"):
        return "visa"
    if digits[:2] in {"34", "37"}:
        return "amex"
    if 51 <= int(digits[:2]) <= 55 or 2221 <= int(digits[:4]) <= 2720:
        return "mastercard"
    return "unknown"


def card_fingerprint(installation_id: str, digits: str) -> str:
    """The same number in the same installation gives the same fingerprint; the number is not recoverable."""
    digest = hmac.new(installation_id.encode(), digits.encode(), hashlib.sha256).digest()
    number = int.from_bytes(digest, "big")
    characters = []
    for _ in range(FINGERPRINT_LENGTH):  # 62**20 < 2**256: every character comes from the digest
        number, digit = divmod(number, 62)
        characters.append(BASE62[digit])
    return "".join(characters)


def full_expiry_year(exp_year: int) -> int:
    return 2000 + exp_year if 0 <= exp_year < 100 else exp_year  # "26" means 2026, as on the card


def checked_card_number(card: CardDetails, now: datetime) -> str:
    """The card's digits when its shape and expiry are acceptable; CardNotAccepted says what is wrong."""
    digits = card.number.replace(" ", "")
    if not (digits.isascii() and digits.isdigit() and 12 <= len(digits) <= 19 and luhn_valid(digits)):
        raise CardNotAccepted("incorrect_number", "Your card number is incorrect.")
    if not 1 <= card.exp_month <= 12:
        raise CardNotAccepted("invalid_expiry_month", "Your card's expiration month is invalid.")
    exp_year = full_expiry_year(card.exp_year)
    if not 1000 <= exp_year <= 9999:
        raise CardNotAccepted("invalid_expiry_year", "Your card's expiration year is invalid.")
    if not (card.cvc.isascii() and card.cvc.isdigit() and 3 <= len(card.cvc) <= 4):
        raise CardNotAccepted("invalid_cvc", "Your card's security code is invalid.")
    # a card is good through the last day of its expiry month
    if (exp_year, card.exp_month) < (now.year, now.month):
        raise CardNotAccepted("expired_card", "Your card has expired.")
    return digits


def expiry_end(card: CardDetails) -> datetime | None:
    """The first instant a card is no longer good (its expiry month over, UTC), for a card whose month
    and year `checked_card_number` accepts; None for one good past the last representable date."""
    exp_year = full_expiry_year(card.exp_year)
    if (exp_year, card.exp_month) == (9999, 12):
        return None
    if card.exp_month == 12:
        return datetime(exp_year + 1, 1, 1, tzinfo=UTC)
    return datetime(exp_year, card.exp_month + 1, 1, tzinfo=UTC)


def sandbox_behaviour(digits: str) -> str:
    behaviour = SANDBOX_CARDS.get(digits)
    if behaviour is None:
        raise CardNotAccepted("test_mode_live_card", LIVE_CARD_MESSAGE)
    return behaviour


def charge_decline_code(behaviour: str, amount: int) -> str | None:
    """Why the network declines holding `amount` on a card with this behaviour, or None if it accepts.

    A zero amount is a card check (what saving a card runs): only the generic-decline card fails it,
    since there are no funds to lack and the failed-renewals card must be savable.
    """
    if behaviour == GENERIC_DECLINE:
        return "generic_decline"
    if amount == 0:
        return None
    if behaviour == INSUFFICIENT_FUNDS:
        return "insufficient_funds"
    if behaviour == CHARGES_DECLINED:
        return "generic_decline"
    return None


def authorization_outcome(
    behaviour: str, amount: int, *, off_session: bool, saves_card: bool = False
) -> tuple[str, str | None]:
    """The status and decline code of a first authorization on a card with this behaviour.

    `saves_card`: the charge made while saving a card just typed (a checkout that keeps it, a
    subscription's first instalment), which the failed-renewals card accepts; any other charge of it,
    off-session or with the saved card, declines.
    """
    if behaviour == CHARGES_DECLINED and saves_card and not off_session:
        return ("authorized", None)
    if behaviour == AUTHENTICATION_REQUIRED:
        # off-session there is no payer to send to the bank's page
        return ("declined", "authentication_required") if off_session else ("requires_action", None)
    decline_code = charge_decline_code(behaviour, amount)
    return ("declined", decline_code) if decline_code is not None else ("authorized", None)
