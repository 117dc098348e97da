"""What a price costs for a quantity (spec part 2, pricing rules). Pure: no database, no I/O.

- per_unit: quantity x amount.
- volume: the whole quantity at the rate of the tier it falls into, plus that tier's flat_amount.
- graduated: each tier's segment at its own rate, plus the flat_amount of every tier used.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

PricingModel = Literal["per_unit", "volume", "graduated"]
MAX_TIERS = 50  # spec part 8


@dataclass(frozen=True)
class Tier:
    up_to: int | None  # the last tier's is None: everything above the previous bound
    unit_amount: int
    flat_amount: int = 0


def total(model: PricingModel, quantity: int, *, amount: int | None, tiers: Sequence[Tier]) -> int:
    if quantity < 1:
        raise ValueError("quantity is at least 1")
    if model == "per_unit":
        if amount is None:
            raise ValueError("per_unit needs an amount")
        return amount * quantity
    if not tiers:
        raise ValueError(f"{model} needs tiers")
    if model == "volume":
        tier = next((t for t in tiers if t.up_to is None or quantity <= t.up_to), tiers[-1])
        return tier.unit_amount * quantity + tier.flat_amount
    owed, below = 0, 0
    for tier in tiers:
        top = quantity if tier.up_to is None else min(quantity, tier.up_to)
        if top <= below:
            break
        owed += tier.unit_amount * (top - below) + tier.flat_amount
        below = top
    return owed


def tier_problem(model: PricingModel, amount: int | None, tiers: Sequence[Tier] | None) -> str | None:
    """Why these terms break the tier rules (CONVENTIONS.md §14), or None when they hold."""
    if model == "per_unit":
        if tiers is not None:  # an empty list too: a per_unit row keeps no tiers at all
            return "a per_unit price takes amount, not tiers"
        return None
    if amount is not None:
        return f"a {model} price takes tiers, not amount"
    if not tiers:
        return f"a {model} price needs tiers"
    if len(tiers) > MAX_TIERS:
        return f"a price has at most {MAX_TIERS} tiers"
    if tiers[-1].up_to is not None:
        return "the last tier's up_to must be null"
    previous = 0
    for tier in tiers[:-1]:
        if tier.up_to is None:
            return "only the last tier's up_to may be null"
        if tier.up_to <= previous:
            return "tier bounds (up_to) must ascend, starting above 0"
        previous = tier.up_to
    if any(t.unit_amount < 0 or t.flat_amount < 0 for t in tiers):
        return "tier amounts must not be negative"
    return None
