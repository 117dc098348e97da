"""Money is integer minor units in one currency; splits keep every unit (CONVENTIONS.md §8)."""

from __future__ import annotations

import itertools
import random

import pytest

from moneyrail.kit.money import (
    CurrencyMismatch,
    Money,
    is_valid_currency,
    minor_unit_exponent,
    split_largest_remainder,
)


def test_money_refuses_floats_bools_and_bad_currencies():
    with pytest.raises(TypeError):
        Money(10.5, "eur")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Money(True, "eur")
    for currency in ("EUR", "eu", "xyz", "eur "):
        with pytest.raises(ValueError):
            Money(1, currency)


def test_money_refuses_mixed_currencies():
    with pytest.raises(CurrencyMismatch):
        Money(1, "eur") + Money(1, "usd")
    assert Money(5, "eur") - Money(7, "eur") == Money(-2, "eur")


def test_currency_codes_and_their_minor_units():
    assert is_valid_currency("eur") and is_valid_currency("jpy") and is_valid_currency("brl")
    assert not is_valid_currency("EUR") and not is_valid_currency("abc")
    assert (minor_unit_exponent("eur"), minor_unit_exponent("jpy"), minor_unit_exponent("bhd")) == (2, 0, 3)


def test_split_worked_example_ties_go_to_the_earlier_share():
    # 100 over three equal weights: 33.33 each; the one leftover unit goes to the first
    assert split_largest_remainder(100, [1, 1, 1]) == [34, 33, 33]
    # 1000 at 70% / 20% / 10% splits exactly
    assert split_largest_remainder(1000, [7000, 2000, 1000]) == [700, 200, 100]
    # 101 at 1/3, 2/3: 33.67 and 67.33 -> the larger remainder (0.67) takes the unit
    assert split_largest_remainder(101, [1, 2]) == [34, 67]


def test_split_never_loses_or_creates_a_unit():
    generator = random.Random(20261122)
    for total, size in itertools.product([0, 1, 7, 999, 99_999_999, -250], [1, 2, 3, 5, 8]):
        weights = [generator.randint(0, 10_000) for _ in range(size)]
        if sum(weights) == 0:
            weights[0] = 1
        shares = split_largest_remainder(total, weights)
        assert sum(shares) == total
        assert all(abs(share) <= abs(total) for share in shares)


def test_split_refuses_nonsense():
    for weights in ([], [0, 0], [1, -1]):
        with pytest.raises(ValueError):
            split_largest_remainder(10, weights)
