"""Shared request field types map to their documented error codes (CONVENTIONS.md §3, §5)."""

from __future__ import annotations

import pytest
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError

from moneyrail.api.errors import validation_error
from moneyrail.kit.schemas import Amount, Currency, RequestBody


class Charge(RequestBody):
    amount: Amount
    currency: Currency


def _first_error(body: dict) -> tuple[str, str | None]:
    with pytest.raises(ValidationError) as caught:
        Charge.model_validate_json(__import__("json").dumps(body))
    mapped = validation_error(
        RequestValidationError([{**e, "loc": ("body", *e["loc"])} for e in caught.value.errors()])
    )
    return mapped.code, mapped.param


@pytest.mark.parametrize("amount", [0, -5, 100_000_000, 12.5, "100", True, None])
def test_an_amount_that_is_not_a_positive_integer_up_to_the_limit_is_amount_invalid(amount):
    assert _first_error({"amount": amount, "currency": "eur"}) == ("amount_invalid", "amount")


@pytest.mark.parametrize("currency", ["EUR", "euro", "xyz", "", 978])
def test_a_currency_that_is_not_lowercase_iso_4217_is_currency_invalid(currency):
    assert _first_error({"amount": 100, "currency": currency}) == ("currency_invalid", "currency")


def test_valid_money_passes():
    charge = Charge.model_validate_json('{"amount": 99999999, "currency": "jpy"}')
    assert (charge.amount, charge.currency) == (99_999_999, "jpy")
