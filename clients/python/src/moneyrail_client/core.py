"""What the sync and async clients share: the pinned version, headers, the retry policy, answers to errors."""

from __future__ import annotations

import email.utils
import random
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from moneyrail_client.errors import APIStatusError, error_for

__version__ = "0.1.0"

# The payments API version this client's models were generated from (CONVENTIONS §1): every request
# names it, so the service answers in exactly these shapes, whatever its current version.
API_VERSION = "2026-08-28"
DEFAULT_BASE_URL = "http://127.0.0.1:8000"
API_KEY_VARIABLE = "MONEYRAIL_API_KEY"
BASE_URL_VARIABLE = "MONEYRAIL_BASE_URL"
IDEMPOTENT_METHODS = frozenset({"POST", "DELETE"})
# Statuses after which the same request may succeed: too many requests, a dependency down.
RETRIED_STATUSES = frozenset({429, 503})
# The same Idempotency-Key is still being served (an earlier attempt whose answer was lost): the
# retry gets that attempt's stored answer once it finishes.
RETRIED_CODES = frozenset({"idempotency_key_in_use"})
TERMINAL_OPERATION_STATUSES = frozenset({"succeeded", "failed", "dead_letter", "canceled"})


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to wait before trying a request again.

    Retried: no answer (connection refused or reset, a timeout), 429 (after `Retry-After`), 503, and 409
    `idempotency_key_in_use`; never another 4xx, never a 500. Every attempt of one call carries the same
    `Idempotency-Key`, so a retried POST acts at most once.
    """

    max_retries: int = 3
    initial_delay: float = 0.5  # seconds before the first retry (before jitter)
    max_delay: float = 8.0  # the exponential backoff's ceiling
    max_retry_after: float = 60.0  # a longer `Retry-After` is not waited out: the error is raised

    def backoff(self, attempt: int) -> float:
        """Exponential backoff with jitter: a random wait in the upper half of initial x 2^attempt."""
        ceiling = min(self.max_delay, self.initial_delay * 2**attempt)
        return random.uniform(ceiling / 2, ceiling)  # noqa: S311 - spreading retries, not a secret

    def delay_after_error(
        self, attempt: int, response: httpx.Response, error: APIStatusError
    ) -> float | None:
        """Seconds to wait before retrying after this error answer, or None to raise it."""
        if attempt >= self.max_retries:
            return None
        if response.status_code not in RETRIED_STATUSES and error.code not in RETRIED_CODES:
            return None
        retry_after = retry_after_seconds(response.headers)
        if retry_after is None:
            return self.backoff(attempt)
        if retry_after > self.max_retry_after:
            return None
        return retry_after + random.uniform(0, self.initial_delay / 4)  # noqa: S311

    def delay_after_no_answer(self, attempt: int) -> float | None:
        return None if attempt >= self.max_retries else self.backoff(attempt)


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """`Retry-After` in seconds: a number, or an HTTP date."""
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def new_idempotency_key() -> str:
    return f"mrc-{uuid.uuid4()}"


def request_headers(api_key: str) -> dict[str, str]:
    return {
        "Authorization": f"Bearer {api_key}",
        "Service-Version": API_VERSION,
        "Accept": "application/json",
        "User-Agent": f"moneyrail-client-python/{__version__}",
    }


def query_of(params: Mapping[str, Any] | None) -> dict[str, Any]:
    """Query parameters without the ones left out (None)."""
    return {name: value for name, value in (params or {}).items() if value is not None}


def error_of(response: httpx.Response) -> APIStatusError:
    try:
        body: Any = response.json()
    except ValueError:
        body = None
    return error_for(response.status_code, body, response.headers.get("request-id"))


def answer_of(response: httpx.Response) -> Any:
    return response.json() if response.content else None
