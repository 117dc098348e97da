"""How an operation's handler says that an attempt did not succeed, and what an object shows of it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from moneyrail.errors import MoneyrailError


class TransientFailure(Exception):
    """Worth another attempt (a network fault, a processor hiccup). Any unexpected exception counts too.
    `code` names the kind of fault for the objects that wait on the operation (AttemptError)."""

    code: str = "temporary_failure"


class PermanentFailure(Exception):
    """A business refusal: the operation ends `failed` at once and is never retried."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


# What an object shows of an error no handler described (a bug, a database fault): its details are the
# operator's (`moneyrail dead-letters show op_…` reads every attempt's), not the API caller's.
UNEXPECTED_CODE = "internal_error"
UNEXPECTED_MESSAGE = (
    "An unexpected error interrupted the attempt; the operator sees it in the operation's history."
)
LEASE_EXPIRED_CODE = "worker_lost"
LEASE_EXPIRED_MESSAGE = "The worker stopped before finishing the attempt."


@dataclass(frozen=True)
class AttemptError:
    """The last error an operation met, as the object it moves shows it (`last_operation_error`)."""

    code: str
    message: str
    at: datetime

    @classmethod
    def of(cls, error: BaseException, at: datetime) -> AttemptError:
        if isinstance(error, PermanentFailure):
            return cls(error.code, error.message[:500], at)
        if isinstance(error, TransientFailure | MoneyrailError):
            return cls(str(error.code), str(error)[:500], at)
        return cls(UNEXPECTED_CODE, UNEXPECTED_MESSAGE, at)

    def as_json(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "at": self.at.isoformat()}

    @classmethod
    def from_json(cls, value: dict[str, Any] | None) -> AttemptError | None:
        if not value:
            return None
        return cls(str(value["code"]), str(value["message"]), datetime.fromisoformat(str(value["at"])))
