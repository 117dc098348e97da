"""Card number rules of the sandbox network: Luhn, brand by prefix, fingerprints, the sandbox card table."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from moneyrail.processor import cards
from moneyrail.processor.interface import CardDetails, CardNotAccepted


@pytest.mark.parametrize(
    "number",
    ["4242424242424242", "5555555555554444", "378282246310005", "2223003122003222", "79927398713"],
)
def test_luhn_accepts_numbers_whose_check_digit_matches(number):
    assert cards.luhn_valid(number)


@pytest.mark.parametrize("number", ["4242424242424241", "5555555555554443", "79927398710"])
def test_luhn_refuses_a_wrong_check_digit(number):
    assert not cards.luhn_valid(number)


@pytest.mark.parametrize(
    ("number", "brand"),
    [
        ("4242424242424242", "visa"),
        ("4100000000000019", "visa"),
        ("5105105105105100", "mastercard"),
        ("5555555555554444", "mastercard"),
        ("2221000000000009", "mastercard"),
        ("2720990000000007", "mastercard"),
        ("2220990000000000", "unknown"),
        ("2721000000000000", "unknown"),
        ("5000000000000000", "unknown"),
        ("5600000000000000", "unknown"),
        ("340000000000009", "amex"),
        ("378282246310005", "amex"),
        ("350000000000000", "unknown"),
        ("6011111111111117", "unknown"),
    ],
)
def test_the_brand_follows_the_number_prefix(number, brand):
    assert cards.card_brand(number) == brand


def test_a_fingerprint_is_twenty_base62_characters_fixed_per_number_and_installation():
    first = cards.card_fingerprint("inst_a", "4242424242424242")
    assert len(first) == 20 and first.isalnum() and first.isascii()
    assert first == cards.card_fingerprint("inst_a", "4242424242424242")
    assert first != cards.card_fingerprint("inst_b", "4242424242424242")
    assert first != cards.card_fingerprint("inst_a", "4000000000000002")


def test_every_sandbox_card_is_a_luhn_valid_visa_with_a_distinct_behaviour():
    assert len(set(cards.SANDBOX_CARDS.values())) == len(cards.SANDBOX_CARDS) == 7
    for number in cards.SANDBOX_CARDS:
        assert cards.luhn_valid(number) and cards.card_brand(number) == "visa"
    assert cards.SANDBOX_CARDS["4000000000000259"] == cards.DISPUTE
    assert cards.SANDBOX_CARDS["4100000000000019"] == cards.RISK_REVIEW


def test_two_digit_expiry_years_are_read_as_this_century():
    assert cards.full_expiry_year(31) == 2031
    assert cards.full_expiry_year(2031) == 2031


@pytest.mark.parametrize(
    ("exp_month", "exp_year", "end"),
    [
        (12, 2030, datetime(2031, 1, 1, tzinfo=UTC)),
        (2, 28, datetime(2028, 3, 1, tzinfo=UTC)),
        (12, 9999, None),
        (11, 9999, datetime(9999, 12, 1, tzinfo=UTC)),
    ],
)
def test_a_card_is_good_until_its_expiry_month_is_over(exp_month, exp_year, end):
    details = CardDetails(number="4242424242424242", exp_month=exp_month, exp_year=exp_year, cvc="123")
    assert cards.expiry_end(details) == end
    if end is not None:  # the same verdict as checked_card_number's, either side of that instant
        cards.checked_card_number(details, end - timedelta(microseconds=1))
        with pytest.raises(CardNotAccepted):
            cards.checked_card_number(details, end)
