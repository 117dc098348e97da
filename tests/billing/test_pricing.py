"""Tier arithmetic (spec part 2) against a plain reference written separately, unit by unit."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from moneyrail.billing.pricing import Tier, tier_problem, total


def reference_total(model: str, quantity: int, amount: int | None, tiers: list[Tier]) -> int:
    """Unit by unit: each unit priced at the tier it lands in; flat amounts added per rule."""
    if model == "per_unit":
        assert amount is not None
        return sum(amount for _ in range(quantity))

    def tier_of(unit: int) -> int:  # unit numbers start at 1
        for index, tier in enumerate(tiers):
            if tier.up_to is None or unit <= tier.up_to:
                return index
        raise AssertionError("the last tier is open")

    if model == "volume":
        chosen = tiers[tier_of(quantity)]
        return sum(chosen.unit_amount for _ in range(quantity)) + chosen.flat_amount
    used: set[int] = set()
    owed = 0
    for unit in range(1, quantity + 1):
        index = tier_of(unit)
        owed += tiers[index].unit_amount
        used.add(index)
    return owed + sum(tiers[index].flat_amount for index in used)


def test_worked_examples_of_each_model():
    tiers = [Tier(5, 1000, 200), Tier(10, 800, 100), Tier(None, 500, 0)]
    assert total("per_unit", 7, amount=1500, tiers=[]) == 10500
    # volume: all 7 units at the second tier, plus its flat amount
    assert total("volume", 7, amount=None, tiers=tiers) == 7 * 800 + 100
    assert total("volume", 5, amount=None, tiers=tiers) == 5 * 1000 + 200
    assert total("volume", 11, amount=None, tiers=tiers) == 11 * 500
    # graduated: 5 at 1000 (+200), 2 at 800 (+100)
    assert total("graduated", 7, amount=None, tiers=tiers) == 5000 + 200 + 1600 + 100
    assert total("graduated", 12, amount=None, tiers=tiers) == 5000 + 200 + 4000 + 100 + 1000


def test_tier_rules_are_named():
    ok = [Tier(5, 1, 0), Tier(None, 1, 0)]
    assert tier_problem("graduated", None, ok) is None
    assert tier_problem("per_unit", 100, None) is None
    assert "not tiers" in (tier_problem("per_unit", 100, ok) or "")
    assert "not tiers" in (tier_problem("per_unit", 100, []) or "")
    assert "not amount" in (tier_problem("volume", 100, ok) or "")
    assert "needs tiers" in (tier_problem("volume", None, []) or "")
    assert "null" in (tier_problem("volume", None, [Tier(5, 1, 0)]) or "")
    assert "ascend" in (tier_problem("volume", None, [Tier(5, 1, 0), Tier(5, 1, 0), Tier(None, 1, 0)]) or "")
    assert "ascend" in (tier_problem("volume", None, [Tier(0, 1, 0), Tier(None, 1, 0)]) or "")
    assert "null" in (tier_problem("volume", None, [Tier(None, 1, 0), Tier(None, 1, 0)]) or "")
    assert "negative" in (tier_problem("volume", None, [Tier(5, -1, 0), Tier(None, 1, 0)]) or "")
    assert "negative" in (tier_problem("volume", None, [Tier(5, 1, -3), Tier(None, 1, 0)]) or "")
    assert "at most 50" in (
        tier_problem("volume", None, [Tier(i, 1, 0) for i in range(1, 51)] + [Tier(None, 1, 0)]) or ""
    )


@st.composite
def tier_lists(draw: st.DrawFn) -> list[Tier]:
    count = draw(st.integers(1, 8))
    bounds = sorted(draw(st.sets(st.integers(1, 60), min_size=count - 1, max_size=count - 1)))
    amounts = st.integers(0, 5000)
    return [Tier(up_to, draw(amounts), draw(st.one_of(st.just(0), amounts))) for up_to in [*bounds, None]]


@settings(max_examples=1500, deadline=None)
@given(model=st.sampled_from(["volume", "graduated"]), tiers=tier_lists(), quantity=st.integers(1, 120))
def test_tiered_totals_match_the_unit_by_unit_reference(model, tiers, quantity):
    assert tier_problem(model, None, tiers) is None
    assert total(model, quantity, amount=None, tiers=tiers) == reference_total(model, quantity, None, tiers)


@settings(max_examples=300, deadline=None)
@given(amount=st.integers(1, 99_999_999), quantity=st.integers(1, 200))
def test_per_unit_totals_match_the_reference(amount, quantity):
    assert total("per_unit", quantity, amount=amount, tiers=[]) == reference_total(
        "per_unit", quantity, amount, []
    )
