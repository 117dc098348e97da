"""Money as integer minor units plus a lowercase ISO 4217 currency; never a float."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from babel.numbers import format_currency, get_currency_precision, is_currency

MAX_AMOUNT = 99_999_999  # spec part 8: computed totals stay within 1 to 99999999 minor units


def is_valid_currency(code: str) -> bool:
    """A lowercase three-letter ISO 4217 code."""
    return len(code) == 3 and code.islower() and code.isalpha() and is_currency(code.upper())


def minor_unit_exponent(currency: str) -> int:
    return int(get_currency_precision(currency.upper()))


def format_amount(amount: int, currency: str, locale: str = "en") -> str:
    """Minor units as a person reads them, decided on the server: 1234 eur -> €12.34."""
    major = Decimal(amount).scaleb(-minor_unit_exponent(currency))
    return str(format_currency(major, currency.upper(), locale=locale))


class CurrencyMismatch(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class Money:
    amount: int
    currency: str

    def __post_init__(self) -> None:
        if isinstance(self.amount, bool) or not isinstance(self.amount, int):
            raise TypeError("Money amounts are integer minor units")
        if not is_valid_currency(self.currency):
            raise ValueError(f"not a lowercase ISO 4217 currency: {self.currency!r}")

    def _same_currency(self, other: Money) -> None:
        if other.currency != self.currency:
            raise CurrencyMismatch(f"{self.currency} and {other.currency} cannot be combined")

    def __add__(self, other: Money) -> Money:
        self._same_currency(other)
        return Money(self.amount + other.amount, self.currency)

    def __sub__(self, other: Money) -> Money:
        self._same_currency(other)
        return Money(self.amount - other.amount, self.currency)

    def __neg__(self) -> Money:
        return Money(-self.amount, self.currency)


def split_largest_remainder(total: int, weights: list[int]) -> list[int]:
    """Split `total` minor units in proportion to `weights`, keeping every unit (CONVENTIONS.md §8).

    Floor every share, then hand the leftover units one each to the largest remainders,
    ties to the earlier weight.
    """
    if not weights:
        raise ValueError("nothing to split over")
    if any(w < 0 for w in weights):
        raise ValueError("weights must be non-negative")
    weight_sum = sum(weights)
    if weight_sum == 0:
        raise ValueError("weights sum to zero")
    sign = -1 if total < 0 else 1
    magnitude = abs(total)
    shares = [magnitude * w // weight_sum for w in weights]
    remainders = [magnitude * w % weight_sum for w in weights]
    leftover = magnitude - sum(shares)
    order = sorted(range(len(weights)), key=lambda i: (-remainders[i], i))
    for index in order[:leftover]:
        shares[index] += 1
    return [sign * share for share in shares]
