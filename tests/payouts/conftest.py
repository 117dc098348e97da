"""Payout tests share the transfers tests' real worker and scheduler (they hand payouts to the bank and
settle arrivals), with `moneyrail ledger verify` after each module."""

from __future__ import annotations

from tests.transfers.conftest import money_stack

__all__ = ["money_stack"]
