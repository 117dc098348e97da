"""The billing calendar (CONVENTIONS.md §14), by hand and against dateutil's relativedelta."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from dateutil.relativedelta import relativedelta
from hypothesis import given, settings
from hypothesis import strategies as st

from moneyrail.billing.calendar import boundary, cycle_at


def at(year: int, month: int, day: int, hour: int = 9, minute: int = 30, second: int = 15) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def test_a_31_january_anchor_keeps_its_day_and_clamps_to_short_months():
    anchor = at(2027, 1, 31)
    ends = [boundary(anchor, "month", 1, n) for n in range(1, 13)]
    assert [(e.year, e.month, e.day) for e in ends] == [
        (2027, 2, 28), (2027, 3, 31), (2027, 4, 30), (2027, 5, 31), (2027, 6, 30), (2027, 7, 31),
        (2027, 8, 31), (2027, 9, 30), (2027, 10, 31), (2027, 11, 30), (2027, 12, 31), (2028, 1, 31),
    ]  # fmt: skip
    assert all((e.hour, e.minute, e.second) == (9, 30, 15) for e in ends)


def test_february_has_29_days_in_a_leap_year():
    assert boundary(at(2028, 1, 31), "month", 1, 1) == at(2028, 2, 29)
    assert boundary(at(2027, 1, 30), "month", 1, 1) == at(2027, 2, 28)
    assert boundary(at(2027, 1, 29), "month", 1, 1) == at(2027, 2, 28)


def test_a_29_february_yearly_anchor_falls_on_28_february_and_again_on_29_in_leap_years():
    anchor = at(2028, 2, 29)
    assert [boundary(anchor, "year", 1, n) for n in range(1, 5)] == [
        at(2029, 2, 28),
        at(2030, 2, 28),
        at(2031, 2, 28),
        at(2032, 2, 29),
    ]


def test_each_boundary_is_computed_from_the_anchor_not_from_the_previous_boundary():
    # chaining from 28 Feb would give 28 Mar; from the anchor it is 31 Mar
    anchor = at(2027, 1, 31)
    assert boundary(anchor, "month", 1, 2) == at(2027, 3, 31)
    assert boundary(boundary(anchor, "month", 1, 1), "month", 1, 1) == at(2027, 3, 28)


def test_interval_count_multiplies_the_interval():
    anchor = at(2027, 8, 31)
    assert boundary(anchor, "month", 3, 1) == at(2027, 11, 30)
    assert boundary(anchor, "month", 3, 2) == at(2028, 2, 29)
    assert boundary(anchor, "month", 12, 1) == boundary(anchor, "year", 1, 1) == at(2028, 8, 31)
    assert boundary(anchor, "year", 2, 1) == at(2029, 8, 31)


def test_boundary_zero_is_the_anchor_and_negative_periods_are_refused():
    anchor = at(2027, 5, 17)
    assert boundary(anchor, "month", 1, 0) == anchor
    with pytest.raises(ValueError):
        boundary(anchor, "month", 1, -1)


def test_every_anchor_day_of_a_leap_and_a_common_year_against_relativedelta():
    # exhaustive over anchor days: every day of 2027 and 2028, 30 monthly periods each
    day = at(2027, 1, 1)
    while day.year < 2029:
        for n in range(30):
            assert boundary(day, "month", 1, n) == day + relativedelta(months=n), (day, n)
        day += timedelta(days=1)


def test_the_cycle_containing_a_moment_is_the_one_whose_bounds_hold_it():
    anchor = at(2027, 1, 31)
    assert cycle_at(anchor, "month", 1, anchor) == 0
    assert cycle_at(anchor, "month", 1, at(2027, 2, 28, 9, 30, 14)) == 0
    assert cycle_at(anchor, "month", 1, at(2027, 2, 28)) == 1
    assert cycle_at(anchor, "month", 1, at(2027, 3, 30)) == 1
    assert cycle_at(anchor, "month", 1, at(2027, 12, 31)) == 11
    assert cycle_at(anchor, "month", 1, at(2020, 1, 1)) == 0  # before the anchor


anchors = st.datetimes(
    min_value=datetime(1970, 1, 1), max_value=datetime(2400, 12, 31), timezones=st.just(UTC)
)


@settings(max_examples=3000, deadline=None)
@given(
    anchor=anchors,
    interval=st.sampled_from(["month", "year"]),
    count=st.integers(1, 12),
    n=st.integers(0, 240),
)
def test_boundary_matches_relativedelta_from_the_anchor(anchor, interval, count, n):
    months = n * count * (12 if interval == "year" else 1)
    assert boundary(anchor, interval, count, n) == anchor + relativedelta(months=months)


@settings(max_examples=2000, deadline=None)
@given(
    anchor=anchors,
    interval=st.sampled_from(["month", "year"]),
    count=st.integers(1, 12),
    later=st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=40 * 366)),
)
def test_cycle_at_finds_the_period_that_holds_the_moment(anchor, interval, count, later):
    now = anchor + later
    n = cycle_at(anchor, interval, count, now)
    assert boundary(anchor, interval, count, n) <= now < boundary(anchor, interval, count, n + 1)
