"""Property tests of the one split every distribution uses (CONVENTIONS.md §8): for any amount and any
basis points (or merchant allocations), no minor unit is lost or created, every share is its exact
proportion rounded down or up by one unit, and ties go to the earlier allocation."""

from __future__ import annotations

import itertools
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from moneyrail.kit.money import MAX_AMOUNT, split_largest_remainder

amounts = st.integers(min_value=0, max_value=MAX_AMOUNT)
weight_lists = st.lists(st.integers(min_value=0, max_value=MAX_AMOUNT), min_size=1, max_size=50).filter(
    lambda weights: sum(weights) > 0
)


@st.composite
def basis_points(draw: st.DrawFn) -> list[int]:
    """Allocations in basis points summing to exactly 10000, as a subscription's distribution does."""
    cuts = sorted(draw(st.lists(st.integers(min_value=0, max_value=10_000), max_size=19)))
    bounds = [0, *cuts, 10_000]
    return [high - low for low, high in itertools.pairwise(bounds)]


@settings(max_examples=400)
@given(total=amounts, weights=weight_lists)
def test_no_minor_unit_is_lost_or_created(total: int, weights: list[int]) -> None:
    shares = split_largest_remainder(total, weights)
    assert len(shares) == len(weights)
    assert sum(shares) == total
    assert all(share >= 0 for share in shares)


@settings(max_examples=400)
@given(total=amounts, points=basis_points())
def test_basis_points_shares_keep_every_unit_and_stay_within_one_of_the_exact_share(
    total: int, points: list[int]
) -> None:
    shares = split_largest_remainder(total, points)
    assert sum(shares) == total
    for share, bp in zip(shares, points, strict=True):
        exact = Fraction(total * bp, 10_000)
        assert exact - 1 < share < exact + 1
        assert share in (exact.numerator // exact.denominator, -(-exact.numerator // exact.denominator))


@settings(max_examples=400)
@given(total=amounts, weights=weight_lists)
def test_leftover_units_go_to_the_largest_remainders_and_ties_to_the_earlier_allocation(
    total: int, weights: list[int]
) -> None:
    shares = split_largest_remainder(total, weights)
    weight_sum = sum(weights)
    floors = [total * weight // weight_sum for weight in weights]
    remainders = [total * weight % weight_sum for weight in weights]
    extra = [share - floor for share, floor in zip(shares, floors, strict=True)]
    assert set(extra) <= {0, 1}
    for i in range(len(weights)):
        for j in range(len(weights)):
            # whoever got a leftover unit had a larger remainder, or an equal one and came first
            if extra[j] == 1 and extra[i] == 0:
                assert remainders[j] > remainders[i] or (remainders[j] == remainders[i] and j < i)


@settings(max_examples=200)
@given(total=st.integers(min_value=1, max_value=MAX_AMOUNT), size=st.integers(min_value=1, max_value=50))
def test_equal_allocations_hand_the_leftover_to_the_first_ones(total: int, size: int) -> None:
    shares = split_largest_remainder(total, [1] * size)
    base, leftover = divmod(total, size)
    assert shares == [base + 1] * leftover + [base] * (size - leftover)


@settings(max_examples=300)
@given(
    commission=st.integers(min_value=0, max_value=10_000),
    merchants=st.lists(st.integers(min_value=1, max_value=MAX_AMOUNT), min_size=1, max_size=10),
)
def test_a_commission_taken_from_merchant_allocations_in_proportion_keeps_every_unit(
    commission: int, merchants: list[int]
) -> None:
    commission = min(commission, sum(merchants))
    taken = split_largest_remainder(commission, merchants)
    assert sum(taken) == commission
    nets = [amount - share for amount, share in zip(merchants, taken, strict=True)]
    assert sum(nets) + commission == sum(merchants)
    assert all(net >= 0 for net in nets)  # a share never exceeds its allocation
