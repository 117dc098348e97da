"""Receipts by e-mail and SMS, on the default queue: a slow mail server never holds up money."""

from __future__ import annotations
