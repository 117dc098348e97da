"""Card number rules of the sandbox network: Luhn, brand by prefix, fingerprints, the sandbox card table."""

from __future__ import annotations

import pytest

from moneyrail.processor import cards


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
