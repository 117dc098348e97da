"""Payment work on the `money` queue: refunds through the processor."""

from __future__ import annotations
