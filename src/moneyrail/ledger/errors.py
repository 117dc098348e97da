"""Errors of the ledger.

They are programming errors, not business outcomes: a domain service decides what may move (and
raises its own MoneyrailError when a request asks for too much) before it posts. A LedgerError that
reaches the edge is a bug and rightly a 500.
"""

from __future__ import annotations


class LedgerError(Exception):
    """The ledger refused to write what it was given."""


class InvalidPosting(LedgerError):
    """A leg that cannot be posted: zero or non-integer amount, bad currency or account code."""


class UnbalancedTransaction(LedgerError):
    """The legs do not sum to zero in every currency, or there are fewer than two."""


class IdempotencyKeyConflict(LedgerError):
    """The idempotency key was already used for a different journal transaction."""
