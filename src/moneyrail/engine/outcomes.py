"""How an operation's handler says that an attempt did not succeed."""

from __future__ import annotations


class TransientFailure(Exception):
    """Worth another attempt (a network fault, a processor hiccup). Any unexpected exception counts too."""


class PermanentFailure(Exception):
    """A business refusal: the operation ends `failed` at once and is never retried."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
